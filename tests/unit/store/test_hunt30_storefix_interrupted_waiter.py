"""A writer that queues for another thread's sync registers its gate, then, outside the lock, wakes the
flusher and opens the gate of a writer an earlier sync covered.  Interrupted there (a KeyboardInterrupt), it
stayed registered: the sync covering it later passed its gate on as a wake-up that reached nobody (the chain
of wake-ups stopped until the next sync returned), and the covered writer's gate it had taken stayed shut.
It now leaves the queue and opens that gate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from rocketstore.store import flush as flush_module
from rocketstore.store.flush import GroupCommit

LIVENESS_S = 10.0  # a guard against hanging forever, never a performance limit


def _until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIVENESS_S
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def _interrupt_once(gc: GroupCommit) -> None:
    """The next wake-up of the flusher raises KeyboardInterrupt (the signal arrives right there)."""
    def wake() -> None:
        del gc._wake_flusher
        raise KeyboardInterrupt
    gc._wake_flusher = wake  # type: ignore[method-assign]


def test_a_writer_interrupted_after_queueing_leaves_the_queue() -> None:
    gc = GroupCommit(lambda: 10, lambda exc: None, leaders=False)  # never started: the test syncs
    gc._idle = True  # the flusher sleeps: the queued writer wakes it
    _interrupt_once(gc)
    with pytest.raises(KeyboardInterrupt):
        gc.wait_durable(10, LIVENESS_S)
    assert gc._waiters == []
    assert not gc._ready


def test_a_writer_interrupted_after_queueing_opens_the_gate_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    # the covered writer wakes only when its gate opens (no look of its own at the durable offset meanwhile)
    monkeypatch.setattr(flush_module, "WAIT_SLICE_S", 3600.0)
    gc = GroupCommit(lambda: 30, lambda exc: None, leaders=False)  # never started: the test syncs
    gc._owner = flush_module._FLUSHER  # (syncing): the first writer queues
    results: list[bool] = []
    covered = threading.Thread(target=lambda: results.append(gc.wait_durable(10, 3600.0)), daemon=True)
    covered.start()
    _until(lambda: len(gc._waiters) == 1)
    with gc._lock:  # a sync covered it and ended; its gate waits for the next thread to open it
        gc.durable_offset = 10
        gc._take_covered(10)
        gc._owner = flush_module._NOBODY
    assert len(gc._ready) == 1
    gc._idle = True  # the flusher sleeps: the next writer wakes it (no leaders), and is interrupted there
    _interrupt_once(gc)
    with pytest.raises(KeyboardInterrupt):
        gc.wait_durable(20, LIVENESS_S)
    covered.join(LIVENESS_S)
    assert not covered.is_alive(), "the covered writer's gate stayed shut"
    assert results == [True]
    assert gc._waiters == []  # the interrupted writer is queued no longer
    assert not gc._ready
