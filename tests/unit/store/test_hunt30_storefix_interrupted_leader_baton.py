"""A writer that finds nobody syncing leads the group commit, and takes with it the gate of a writer an earlier
sync covered (opened just before its own fdatasync).  Interrupted between the two (a KeyboardInterrupt while it
handed durable records over to the dispatcher), it gave the lead up but kept that gate shut: the covered
writer slept on until its next look at the durable offset (WAIT_SLICE_S), or its whole timeout when that is
shorter.  The interrupted leader now opens it."""

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


def test_an_interrupted_leader_opens_the_gate_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    # the covered writer wakes only when its gate opens (no look of its own at the durable offset meanwhile)
    monkeypatch.setattr(flush_module, "WAIT_SLICE_S", 3600.0)
    interrupt = [True]

    def on_durable() -> None:
        # the leader hands durable records over before its sync: the signal arrives right there
        if interrupt[0] and threading.current_thread() is threading.main_thread():
            interrupt[0] = False
            raise KeyboardInterrupt

    gc = GroupCommit(lambda: 30, lambda exc: None, on_durable=on_durable)  # never started: the test syncs
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
    with pytest.raises(KeyboardInterrupt):
        gc.wait_durable(20, LIVENESS_S)  # leads, takes the covered writer's gate, is interrupted
    assert gc._owner != flush_module._LEADER  # the lead went to the flusher (as before)
    covered.join(LIVENESS_S)
    assert not covered.is_alive(), "the covered writer's gate stayed shut"
    assert results == [True]


def test_a_gate_opened_already_is_not_opened_twice() -> None:
    gate = threading.Lock()
    flush_module._open(gate)  # open: nothing to do (no RuntimeError)
    gate.acquire()
    flush_module._open(gate)
    assert not gate.locked()
