"""A crash-open's zeroing of stale consume-queue entries is durable.

Opening after a crash cuts the entries that point past the recovered commitlog end and zeroes them.  Those
bytes lie past the queue's wrote position: flushes (and a clean close) skip a queue with nothing new, so the
zeroing stayed in the page cache only.  A power loss after the clean close brought the cut entries back; the
next (clean) open trusts a clean exit's tail, and by then the commitlog had grown over the offsets they point
at: the queue served other queues' messages as its own.

The power loss is modelled as in test_power_loss.py (powerloss.py), except that what was durable is recorded
at every fdatasync of a file, whoever calls it; every page written since its file's last sync is lost."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig

from .powerloss import EveryUnsyncedPageLost, SyncRecorder


def _config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                       max_hash_slot_num=8, max_index_num=64, preallocate_commit_log=False)


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    got = store.get("Zero", queue_id, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    return [m.body for m in got.messages]


@pytest.mark.parametrize("abort_marker", [True, False])
def test_entries_an_open_cut_stay_cut_after_a_power_loss(tmp_path: Path, abort_marker: bool) -> None:
    """*abort_marker* False: the commitlog lost its tail though the last run closed cleanly (so the open
    that cuts the entries keeps the queue's flushed position where it was)."""
    kept = 3
    live = tmp_path / "live"
    with MessageStore.open(live, _config(), background=False) as store:
        for i in range(kept):
            assert store.put(Message.create("Zero", b"kept%d" % i, queue_id=1)).ok
        lost = [store.put(Message.create("Zero", b"lost%d" % i, queue_id=1)) for i in range(2)]
        assert store.wait_dispatched()
    # the crash: the commitlog lost its last two records, queue 1's entries for them were written back
    (segment,) = (live / "commitlog").iterdir()
    with open(segment, "r+b") as f:
        f.seek(lost[0].commit_log_offset)
        f.write(bytes(lost[1].commit_log_offset + lost[1].wrote_bytes - lost[0].commit_log_offset))
    if abort_marker:
        (live / "abort").touch()

    recorder = SyncRecorder()
    recorder.seed(live)  # what the disk holds now is durable
    crashed = tmp_path / "crashed"
    with recorder.active():
        store = MessageStore.open(live, _config(), background=False)
        try:
            assert store.recovery.abnormal is abort_marker
            assert store.max_offset("Zero", 1) == kept  # the two entries past the commitlog's end are cut
            # the commitlog grows over the offsets they pointed at; queue 1 gets nothing new
            for i in range(4):
                assert store.put(Message.create("Zero", b"other%d" % i, queue_id=0)).ok
            assert store.wait_dispatched()
        finally:
            store.close()  # a clean close: the abort marker is gone
        assert not (live / "abort").exists()
        recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
    shutil.rmtree(live)

    with MessageStore.open(crashed, _config(), background=False) as store:
        assert not store.recovery.abnormal
        assert store.max_offset("Zero", 1) == kept
        if kept:
            assert _bodies(store, 1) == [b"kept%d" % i for i in range(kept)]
        assert _bodies(store, 0) == [b"other%d" % i for i in range(4)]


def test_entries_a_crash_open_kept_are_synced_before_a_clean_close(tmp_path: Path) -> None:
    """A crash-open keeps the consume-queue entries it finds, also those the crashed run never synced (a
    kill -9 leaves them in the page cache), and counted them flushed: a queue that then got nothing new was
    never synced, a clean close removed the abort marker, and after a power loss the clean open found a
    zeroed page in the middle of the queue.  The entries past it were lost for good (their records, synced
    in the commitlog, are never dispatched again), and stale ones past the gap waited to be joined."""
    live = tmp_path / "live"
    config = StoreConfig(mapped_file_size_commit_log=256 * 1024, mapped_file_size_consume_queue=20 * 1000,
                         max_hash_slot_num=8, max_index_num=64, preallocate_commit_log=False)
    with MessageStore.open(live, config, background=False) as store:
        for i in range(450):  # three pages of queue 0's consume queue
            assert store.put(Message.create("Zero", b"m%d" % i, queue_id=0)).ok
        assert store.wait_dispatched()
    (live / "abort").touch()  # the run was killed: everything is in the page cache

    recorder = SyncRecorder()
    recorder.seed(live)  # what the disk holds now is durable
    # ... but queue 0's second page never reached the disk (its third did: write-back has no order)
    cq_segment = os.path.realpath(live / "consumequeue" / "Zero" / "0" / f"{0:020d}")
    durable = bytearray(recorder.durable[cq_segment])
    durable[4096:8192] = bytes(4096)
    recorder.durable[cq_segment] = bytes(durable)

    crashed = tmp_path / "crashed"
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            assert store.recovery.abnormal
            assert store.max_offset("Zero", 0) == 450
            assert store.put(Message.create("Zero", b"other", queue_id=1)).ok
            assert store.wait_dispatched()
        finally:
            store.close()
        assert not (live / "abort").exists()
        recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
    shutil.rmtree(live)

    with MessageStore.open(crashed, config, background=False) as store:
        assert not store.recovery.abnormal
        assert store.max_offset("Zero", 0) == 450
        got = store.get("Zero", 0, 200, 32)
        assert [m.body for m in got.messages] == [b"m%d" % i for i in range(200, 232)]
