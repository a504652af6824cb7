"""A consume queue whose first segment starts past queue offset 0 (rebuilt after retention took the
commitlog's head) and was created, but never synced, before a power loss: the segment is there (its
directory entry was synced at creation) and reads as zeros.

Recovery keeps it, empty; it no longer counted as the queue's first (that flag lives in memory only), so
the re-dispatched records got no pre-blank fill and every entry was a gap: the queue lost its messages (a
sync-flush acknowledged one too) and the next put took queue offset 24, the segment's start, again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

from .powerloss import EveryUnsyncedPageLost, SyncRecorder

SEGMENT = 4096
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 8,
                     max_hash_slot_num=4, max_index_num=8, file_reserved_time_h=0,
                     flush_disk_type="SYNC_FLUSH",
                     # the consume queues are not synced before the power goes
                     flush_interval_consume_queue_ms=600_000,
                     flush_consume_queue_thorough_interval_ms=600_000)


def test_a_late_queue_first_segment_lost_to_power_loss_is_refilled(tmp_path: Path) -> None:
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    with MessageStore.open(live, CONFIG) as store:
        for i in range(30):
            assert store.put(Message("T", b"%03d" % i + b"x" * 900)).ok
        assert store.wait_dispatched()
        store.delete_expired_files(force=True, now_ms=2**62)  # records 28 and 29 are left
        assert store.min_commit_log_offset == 7 * SEGMENT
    shutil.rmtree(live / "consumequeue")  # rebuilt at the next open: T/0 starts in the segment of entry 24
    recorder = SyncRecorder()
    recorder.seed(live)
    with recorder.active():
        store = MessageStore.open(live, CONFIG)
        try:
            assert store.wait_dispatched()
            assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (28, 30)
            acked = store.put(Message("T", b"acked"))
            assert acked.ok and acked.queue_offset == 30
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    first = crashed / "consumequeue" / "T" / "0" / f"{24 * 20:020d}"
    assert first.read_bytes() == bytes(160)  # created, never synced
    assert (crashed / "abort").exists()
    with MessageStore.open(crashed, CONFIG) as store:
        assert store.wait_dispatched()
        assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (28, 31)
        assert [m.body[:3] for m in store.get("T", 0, 28, 8).messages] == [b"028", b"029", b"ack"]
        after = store.put(Message("T", b"after"))
        assert after.ok and after.queue_offset == 31
        assert store.wait_dispatched()
        assert store.get("T", 0, 31, 1).messages[0].body == b"after"
