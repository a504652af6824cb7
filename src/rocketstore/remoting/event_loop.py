"""The event loop that rocketstore runs on: uvloop's when it is installed, else asyncio's.

:func:`new_event_loop` makes one of the kind ``$ROCKETSTORE_EVENT_LOOP`` asks for; :func:`run` is
``asyncio.run`` on it (the broker, the name server, ``rocketstore serve`` and the blocking clients' loop
threads all start their loops here).  Re-exported by :mod:`rocketstore.remoting.transport`, where callers
import it from.  A transport module (it touches asyncio); no sockets.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

from rocketstore.errors import EventLoopChoiceError

__all__ = ["EVENT_LOOP_CHOICES", "EVENT_LOOP_ENV", "new_event_loop", "run"]

T = TypeVar("T")


#: The environment variable that picks the event loop of :func:`new_event_loop` (and so of the broker, the
#: name server, ``rocketstore serve`` and the blocking clients' loop threads): ``auto`` (unset: uvloop when
#: it is installed, else asyncio's), ``asyncio`` or ``uvloop`` (an error where uvloop is not installed).
EVENT_LOOP_ENV = "ROCKETSTORE_EVENT_LOOP"
EVENT_LOOP_CHOICES = ("auto", "asyncio", "uvloop")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop of the kind ``$ROCKETSTORE_EVENT_LOOP`` asks for (read at each call, so a test or a host
    application can switch it): by default uvloop's when uvloop is installed, else the standard one.
    :class:`EventLoopChoiceError` for a value not in :data:`EVENT_LOOP_CHOICES`, or for ``uvloop`` where it
    is not installed (asked for by name, it must not quietly become asyncio's)."""
    choice = os.environ.get(EVENT_LOOP_ENV, "").strip().lower() or "auto"
    if choice not in EVENT_LOOP_CHOICES:
        raise EventLoopChoiceError(f"{EVENT_LOOP_ENV}={os.environ[EVENT_LOOP_ENV]!r}: expected one of "
                                   f"{', '.join(EVENT_LOOP_CHOICES)}")
    if choice == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError as exc:
        if choice == "uvloop":
            raise EventLoopChoiceError(f"{EVENT_LOOP_ENV}=uvloop but uvloop is not installed "
                                       "(pip install 'rocketstore[fast]')") from exc
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()  # type: ignore[no-any-return]


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on :func:`new_event_loop`.  Where no loop can be made (a bad ROCKETSTORE_EVENT_LOOP)
    *main* is closed unstarted, so the error is not followed by a "never awaited" warning."""
    try:
        loop = new_event_loop()
    except BaseException:
        main.close()
        raise
    with asyncio.Runner(loop_factory=lambda: loop) as runner:
        return runner.run(main)
