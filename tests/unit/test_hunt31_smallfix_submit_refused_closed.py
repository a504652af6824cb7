"""A blocking client's call refused because a shutdown's sweep began while it was being submitted has its
coroutine closed, not left for the garbage collector to warn "coroutine ... was never awaited".

``LoopThread._submit`` checks the shutdown flag, hands the coroutine to the loop, then checks again: a
shutdown that began in between makes it cancel the call's future and refuse it.  The loop had been handed
a callback that would start the coroutine; when the loop stopped (and was closed) before running it, the
coroutine was never started nor closed, and warned when collected (test_hunt22_consumerobust_submit_race's
first test did now and then).  Now it is closed by whichever thread sees the loop closed.  The steps are
held in order with hooks on the shutdown flag and on the shutdown's wait for the loop thread: no sleeps.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable

import pytest

from rocketstore.client.errors import ClientError
from rocketstore.client.loop_thread import LoopThread

PATIENCE_S = 30.0


class _HeldThread:
    """The loop thread, whose join by the shutdown thread waits for *release* first (so the loop, stopped,
    is not closed yet when the call is handed to it), and whose ``is_alive`` read by the submitting thread
    calls ``on_alive`` hooks in turn after reading it."""

    def __init__(self, thread: threading.Thread, release: threading.Event, submitter: int) -> None:
        self._thread = thread
        self._release = release
        self._submitter = submitter
        self.on_alive: list[Callable[[], None]] = []

    def join(self, timeout: float | None = None) -> None:
        if threading.current_thread().name == "hunt31-shutdown":
            assert self._release.wait(PATIENCE_S)
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        alive = self._thread.is_alive()
        if threading.get_ident() == self._submitter and self.on_alive:
            self.on_alive.pop(0)()
        return alive

    def __getattr__(self, name: str) -> object:
        return getattr(self._thread, name)


class HookedLoopThread(LoopThread):
    """The shutdown flag calls ``on_read`` hooks in turn when the submitting thread reads it."""

    def __init__(self) -> None:
        self.flag = False
        self.submitter = threading.get_ident()
        self.on_read: list[Callable[[], None]] = []
        self.flag_stored = threading.Event()
        self.may_close = threading.Event()
        self.alive_read = threading.Event()
        self.checked = threading.Event()
        super().__init__("hunt31-hooked-loop", PATIENCE_S)
        self.loop_thread = self._thread
        self.held = _HeldThread(self._thread, self.may_close, self.submitter)
        self._thread = self.held  # type: ignore[assignment]

    @property  # type: ignore[override]
    def _cancelling_calls(self) -> bool:
        value = self.flag
        if threading.get_ident() == self.submitter and self.on_read:
            self.on_read.pop(0)()
        return value

    @_cancelling_calls.setter
    def _cancelling_calls(self, value: bool) -> None:
        if value:
            _waited(self.checked)  # the submit's check reads the flag before it is set
        self.flag = value
        if value:
            self.flag_stored.set()
            _waited(self.alive_read)  # the loop goes on (sweeps, stops) once the submit saw its thread alive


def _waited(event: threading.Event) -> None:
    assert event.wait(PATIENCE_S)


async def _stop_client() -> None:
    """The client's own shutdown: nothing to do."""


def test_a_call_refused_after_it_was_handed_to_the_stopped_loop_is_closed() -> None:
    lt = HookedLoopThread()
    ran = threading.Event()

    async def call() -> str:
        ran.set()
        return "ran"

    coro = call()

    def loop_stopped() -> None:
        lt.alive_read.set()
        lt.loop_thread.join(PATIENCE_S)
        assert not lt.loop_thread.is_alive()

    # the submit's check reads the flag (False: then the shutdown sets it and sweeps) and the loop thread
    # alive (it then stops); after the hand-over the flag reads True, which lets the shutdown close the loop,
    # the callback that would have started the coroutine still queued on it
    lt.on_read = [lambda: (lt.checked.set(), _waited(lt.flag_stored)), lt.may_close.set]
    lt.held.on_alive = [loop_stopped]
    shutdown = threading.Thread(target=lt._stop, args=(_stop_client, False), name="hunt31-shutdown")
    shutdown.start()
    try:
        with pytest.raises(ClientError, match="shut down while this call was submitted"):
            lt._submit(coro)
    finally:
        lt.checked.set()
        lt.alive_read.set()
        lt.may_close.set()
        shutdown.join(PATIENCE_S)
    assert not shutdown.is_alive() and lt._loop.is_closed()
    assert not ran.is_set()
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
