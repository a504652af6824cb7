"""SYNC_FLUSH: a put or batch whose WAIT is not Java's true does not wait for the disk (4.9.3).

4.9.3's CommitLog.handleDiskFlush waits for the sync only when isWaitStoreMsgOK: no WAIT, or WAIT that
Boolean.parseBoolean reads as true.  MessageStore.put waited unless WAIT was exactly "false" (so "0" or "no"
waited), and put_batch never read WAIT (a list's, from its first message as the client's batch carries it,
nor a MessageBatch's own properties): with the disk stalled those answered FLUSH_DISK_TIMEOUT where 4.9.3
answers PUT_OK.  The group commit is stalled here for real: its durable listener blocks the syncing thread.
"""

from __future__ import annotations

import threading
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.message.batch import MessageBatch
from rocketstore.store.results import PutMessageStatus


def test_wait_not_true_is_answered_at_once_while_the_sync_stalls(tmp_path: Path) -> None:
    config = StoreConfig(mapped_file_size_commit_log=1 << 20, flush_disk_type="SYNC_FLUSH",
                         sync_flush_timeout_ms=200)
    entered = threading.Event()
    release = threading.Event()

    def stall() -> None:
        entered.set()
        release.wait(30)

    with MessageStore.open(tmp_path / "store", config) as store:
        store.add_durable_listener(stall)
        try:
            first = store.put(Message.create("T", b"first"), flush="ask")
            assert first.status is PutMessageStatus.PUT_OK
            assert entered.wait(10)  # the syncing thread now sits in the listener: no sync until released
            # the stall holds: a put that waits times out
            assert store.put(Message.create("T", b"waits")).status is PutMessageStatus.FLUSH_DISK_TIMEOUT
            for wait in ("false", "0", "no", ""):
                got = store.put(Message.create("T", b"x", properties={"WAIT": wait}))
                assert got.status is PutMessageStatus.PUT_OK, wait
            no_wait = {"WAIT": "false"}
            listed = store.put_batch([Message.create("T", b"b", properties=no_wait) for _ in range(3)])
            assert listed.status is PutMessageStatus.PUT_OK
            batch = MessageBatch("T", 0, [0, 0], [b"m1", b"m2"], [b"", b""], "WAIT\x01false\x02CLUSTER\x01c")
            assert store.put_batch(batch).status is PutMessageStatus.PUT_OK
            waiting = MessageBatch("T", 0, [0], [b"m3"], [b""], "WAIT\x01true")
            assert store.put_batch(waiting).status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        finally:
            release.set()
