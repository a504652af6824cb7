"""Group commit: a covered writer that finds out by itself that it is durable (its wait slice ran out before
anyone opened its gate) takes its gate out of the FIFO of gates to open.  Left there, the next thread to
block popped it and passed its wake-up to nobody: the chain of wake-ups stopped until the next sync
returned, and the covered writers behind it slept on (counted on the shared 2-core machine: 25-300
wake-ups that went to nobody per 9,600 sync puts of 64 writers, more the more loaded it was)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from rocketstore.store import flush as flush_module
from rocketstore.store.flush import GroupCommit

LIVENESS_S = 30.0  # a guard against hanging forever, never a performance limit


def _until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIVENESS_S
    while not predicate():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.001)


def test_a_covered_writer_that_left_by_itself_does_not_take_the_next_wake_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gc = GroupCommit(lambda: 0, lambda exc: None)  # never started: the test plays the flusher
    gc._owner = flush_module._FLUSHER  # (syncing): the writers queue
    results: dict[str, bool] = {}

    def wait(name: str, end: int) -> None:
        results[name] = gc.wait_durable(end, 3600.0)

    # A is covered, but nobody opens its gate: it learns it is durable at the end of a (short) slice
    monkeypatch.setattr(flush_module, "WAIT_SLICE_S", 0.001)
    a = threading.Thread(target=wait, args=("a", 10), daemon=True)
    a.start()
    _until(lambda: len(gc._waiters) == 1)
    with gc._lock:
        gc.durable_offset = 10
        gc._take_covered(10)
    a.join(LIVENESS_S)
    assert not a.is_alive() and results["a"] is True
    assert len(gc._ready) == 0, "the gate of a writer that has gone is left to be opened"

    # from here on a writer only wakes when its gate is opened
    monkeypatch.setattr(flush_module, "WAIT_SLICE_S", 3600.0)
    b = threading.Thread(target=wait, args=("b", 20), daemon=True)
    b.start()
    _until(lambda: len(gc._waiters) == 1)
    with gc._lock:
        gc.durable_offset = 20
        gc._take_covered(20)
    c = threading.Thread(target=wait, args=("c", 30), daemon=True)
    c.start()  # C blocks, opening the oldest covered gate on its way: B's
    try:
        b.join(LIVENESS_S)
        assert not b.is_alive(), "the wake-up C passed on went to nobody: B slept on"
        assert results["b"] is True
    finally:
        with gc._lock:
            gc.durable_offset = 30
            gc._release_all()
        for t in (b, c):
            t.join(LIVENESS_S)
    assert results == {"a": True, "b": True, "c": True}
