"""A blocking client's call submitted while another thread's shutdown begins cancelling what is left on the
loop: its future is always done (cancelled, or the call refused with the client's not-running error), never
left pending for good (a caller waiting on it hung until its own timeout, a send_async future never
completed).  The race is held open with a hook on the shutdown flag, between the submit's check of it and
the shutdown's setting of it: no sleeps."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, wait

import pytest

from rocketstore.client.errors import ClientError
from rocketstore.client.loop_thread import LoopThread

#: generous bound of every wait (the steps themselves take microseconds)
PATIENCE_S = 30.0


class HookedLoopThread(LoopThread):
    """A LoopThread whose shutdown flag calls the test's hooks: when the submitting thread reads it
    (``on_read``, one per read in turn), and on the loop before the shutdown sets it (``before_set``);
    ``flag_stored`` is set once it is."""

    def __init__(self) -> None:
        self.flag = False
        self.submitter: int | None = None  # the thread whose reads are hooked
        self.on_read: list[Callable[[], None]] = []
        self.before_set: list[Callable[[], None]] = []
        self.flag_stored = threading.Event()
        super().__init__("hunt22-hooked-loop", PATIENCE_S)

    @property  # type: ignore[override]
    def _cancelling_calls(self) -> bool:
        value = self.flag
        if threading.get_ident() == self.submitter and self.on_read:
            self.on_read.pop(0)()
        return value

    @_cancelling_calls.setter
    def _cancelling_calls(self, value: bool) -> None:
        if value:
            for hook in self.before_set:
                hook()
        self.flag = value
        if value:
            self.flag_stored.set()


async def _stop_client() -> None:
    """The client's own shutdown: nothing to do."""


async def _call() -> str:
    return "ran"


def _shut_down_in_thread(lt: HookedLoopThread) -> threading.Thread:
    thread = threading.Thread(target=lt._stop, args=(_stop_client, False), name="hunt22-shutdown")
    thread.start()
    return thread


def _waited(event: threading.Event) -> None:
    assert event.wait(PATIENCE_S)


def test_a_submit_checked_before_the_sweep_and_made_after_it_is_refused() -> None:
    lt = HookedLoopThread()
    checked = threading.Event()
    lt.submitter = threading.get_ident()
    # the submit's check reads False, then the shutdown sets the flag, then the submit goes on
    lt.on_read = [lambda: (checked.set(), _waited(lt.flag_stored))]
    lt.before_set = [lambda: _waited(checked)]
    shutdown = _shut_down_in_thread(lt)
    try:
        with pytest.raises(ClientError, match="shut down"):
            future = lt._submit(_call())
            # reached only when the submit was taken: then its future must be done, not pending for good
            wait([future], PATIENCE_S)
            assert future.done(), "a future submitted after the shutdown's sweep began is never done"
    finally:
        checked.set()
        shutdown.join(PATIENCE_S)
    assert not shutdown.is_alive()


def test_a_submit_made_just_before_the_sweep_is_cancelled_by_it() -> None:
    lt = HookedLoopThread()
    holding, submitted = threading.Event(), threading.Event()
    # the loop is held in the shutdown, just before the flag, until the submit is made
    lt.before_set = [holding.set, lambda: _waited(submitted)]
    shutdown = _shut_down_in_thread(lt)
    try:
        _waited(holding)
        future: Future[str] = lt._submit(_call())
        submitted.set()
        wait([future], PATIENCE_S)
        assert future.done(), "a future submitted just before the shutdown's sweep is never done"
        with pytest.raises(CancelledError):
            future.result(0)
    finally:
        submitted.set()
        shutdown.join(PATIENCE_S)
    assert not shutdown.is_alive()
