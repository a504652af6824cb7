"""A KeyboardInterrupt (or any exception a signal handler raises) reaches the main thread between any two
calls, also while that thread puts.  Found by interrupting an embedded store's put / put_batch / flush
loop with a timer signal at random moments (SYNC_FLUSH):

* a writer leading the group commit that was interrupted outside its fdatasync (handing durable records
  over to the dispatcher before it, or between the sync and giving the lead up) kept the lead for ever:
  every later sync-flush put timed out (FLUSH_DISK_TIMEOUT), dispatch stayed at the durable offset and
  close() hung waiting for the leader;
* a batch interrupted right after its dispatch facts were queued, before its records counted as written,
  left facts of records the next put overwrote: the dispatcher refused the rest of the queue as a gap
  ("expected entry N+1 but holds N"), so gets saw nothing new until the store was opened again."""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path

from rocketstore import GetMessageStatus, Message, MessageStore, PutMessageStatus, StoreConfig
from rocketstore.store import flush as flush_module
from rocketstore.store.flush import GroupCommit

LIVENESS_S = 10.0  # a guard against hanging forever, never a performance limit


def test_a_leader_interrupted_outside_its_sync_hands_the_lead_to_the_flusher() -> None:
    ends = [300]
    interrupt = [True]

    def on_durable() -> None:
        # the leader hands durable records over before its sync: the signal arrives right there
        if interrupt[0] and threading.current_thread() is threading.main_thread():
            interrupt[0] = False
            raise KeyboardInterrupt

    gc = GroupCommit(lambda: ends[0], lambda exc: None, on_durable=on_durable)
    gc.start(100)
    try:
        with gc._lock:
            gc.durable_offset = 150  # synced by someone, not yet handed over: the next leader hands it over
        try:
            gc.wait_durable(200, LIVENESS_S)
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("the interrupt did not reach the leader")
        assert gc._owner != flush_module._LEADER  # nobody leads any more
        # a later writer is synced (before: it queued behind the gone leader and timed out)
        assert gc.wait_durable(300, LIVENESS_S)
    finally:
        stopper = threading.Thread(target=gc.stop, daemon=True)
        stopper.start()
        stopper.join(LIVENESS_S)
    assert not stopper.is_alive(), "stop() waited for a leader that had gone"


class _InterruptedAfterExtend(deque):  # type: ignore[type-arg]
    """The facts deque, with a KeyboardInterrupt arriving right after one extend (the signal is handled when
    that C call returns)."""

    armed = False

    def extend(self, items):  # type: ignore[no-untyped-def]
        super().extend(items)
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt


def test_a_batch_interrupted_after_its_facts_leaves_no_gap(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "s", StoreConfig(mapped_file_size_commit_log=1 << 20))
    try:
        assert store.put(Message.create("T", b"first")).status is PutMessageStatus.PUT_OK
        store.wait_dispatched(LIVENESS_S)
        facts = _InterruptedAfterExtend(store._commitlog.facts)
        store._commitlog.facts = facts
        facts.armed = True
        try:
            store.put_batch([Message.create("T", b"b%d" % i) for i in range(3)])
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("the interrupt did not reach the batch")
        assert store.put(Message.create("T", b"after")).status is PutMessageStatus.PUT_OK
        assert store.wait_dispatched(LIVENESS_S)
        assert store._dispatcher.error is None
        max_offset = store.max_offset("T", 0)
        got = store.get("T", 0, 0, 32)
        assert got.status is GetMessageStatus.FOUND
        bodies = [m.body for m in got.messages]
        assert bodies[0] == b"first" and bodies[-1] == b"after"
        assert max_offset == len(bodies)  # every record put is one the queue holds, the last one included
        assert got.queue_offsets == tuple(range(max_offset))
    finally:
        store.close()
