"""What a crash-open relies on, and what it recovers, survives a power loss.

* The abort marker an open creates is what tells the next open that this run crashed.  Created and never
  made durable (its directory never synced), a power loss soon after the open took it away: the next open
  took the crashed run for a clean one (its tails trusted to be zero, nothing it wrote checked).
* After a kill -9 the records recovery finds past the last sync may be in the page cache only.  Counted
  flushed, neither a clean close nor ``flush()`` synced them: a power loss afterwards took records that
  the consume queues pointed at, and that a clean close had declared durable.
* Segments an open deletes (a consume queue's entries past the recovered commitlog end) were deleted
  without syncing their directory: a power loss after a clean close brought them back, and once the queue
  had refilled the segments before them, the next open, trusting a clean exit, served their stale entries
  (pointing at whatever records the commitlog holds there now).

The power loss is modelled as in test_hunt19_zerosync_zeroed_tail.py (powerloss.py): a file's content is
durable as of its last fdatasync / fsync, every page written since is lost; and a file created in a
directory exists after the power loss only once that directory was fsynced (here: the abort marker), and a
file deleted is back, with its durable content, until its directory is fsynced."""

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
    """Every message of the queue (a get reads one consume-queue segment)."""
    bodies: list[bytes] = []
    offset = 0
    while offset < store.max_offset("Durable", queue_id):
        got = store.get("Durable", queue_id, offset, 32)
        assert got.status is GetMessageStatus.FOUND
        bodies += [m.body for m in got.messages]
        offset = got.next_begin_offset
    return bodies


def test_the_abort_marker_survives_a_power_loss_soon_after_the_open(tmp_path: Path) -> None:
    live = tmp_path / "live"
    with MessageStore.open(live, _config(), background=False) as store:
        for i in range(3):
            assert store.put(Message.create("Durable", b"kept%d" % i, queue_id=0)).ok
    assert not (live / "abort").exists()

    recorder = SyncRecorder()
    recorder.seed(live)
    crashed = tmp_path / "crashed"
    with recorder.active():
        store = MessageStore.open(live, _config(), background=False)
        try:
            for i in range(2):
                assert store.put(Message.create("Durable", b"new%d" % i, queue_id=0)).ok
            assert store.wait_dispatched()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())  # the power goes out here
        finally:
            store.close()

    with MessageStore.open(crashed, _config(), background=False) as store:
        assert store.recovery.abnormal  # the run that lost the power did not close
        assert _bodies(store, 0) == [b"kept%d" % i for i in range(3)]


@pytest.mark.parametrize("then", ["close", "flush"])
def test_records_a_crash_open_recovered_are_synced(tmp_path: Path, then: str) -> None:
    """*then* "close": a clean close after the crash-open, then the power loss; "flush": ``flush()`` (which
    makes everything written durable) and the power loss before any close."""
    live = tmp_path / "live"
    with MessageStore.open(live, _config(), background=False) as store:
        for i in range(5):
            assert store.put(Message.create("Durable", b"m%d" % i, queue_id=0)).ok
        assert store.wait_dispatched()
    (live / "abort").touch()  # the run was killed (kill -9): what it wrote is in the page cache ...

    recorder = SyncRecorder()
    recorder.seed(live)
    # ... and none of it reached the disk: the commitlog and consume queue were never synced
    for directory in (live / "commitlog", live / "consumequeue" / "Durable" / "0"):
        for segment in directory.iterdir():
            recorder.durable[os.path.realpath(segment)] = bytes(segment.stat().st_size)

    crashed = tmp_path / "crashed"
    with recorder.active():
        store = MessageStore.open(live, _config(), background=False)
        try:
            assert store.recovery.abnormal
            assert _bodies(store, 0) == [b"m%d" % i for i in range(5)]  # found in the page cache
            if then == "flush":
                store.flush()
                recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
        if then == "close":
            assert not (live / "abort").exists()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
    shutil.rmtree(live)

    with MessageStore.open(crashed, _config(), background=False) as store:
        assert store.recovery.abnormal is (then == "flush")
        assert store.max_offset("Durable", 0) == 5
        assert _bodies(store, 0) == [b"m%d" % i for i in range(5)]


@pytest.mark.parametrize("abort_marker", [True, False])
def test_queue_segments_an_open_deleted_stay_deleted_after_a_power_loss(tmp_path: Path,
                                                                         abort_marker: bool) -> None:
    """Queue 1 holds six entries the commitlog keeps and six for records it lost: the cut (at entry 6,
    inside the second segment) deletes the third segment.  *abort_marker* True: after a crash, recovery's
    check of the entries cuts them (truncate_after); False: the commitlog lost its tail though the last run
    closed cleanly, and the entries past its end are cut whole segment by segment (truncate_dirty)."""
    config = _config().replace(mapped_file_size_consume_queue=20 * 4)  # four entries a segment
    live = tmp_path / "live"
    with MessageStore.open(live, config, background=False) as store:
        for i in range(6):
            assert store.put(Message.create("Durable", b"kept%d" % i, queue_id=1)).ok
        lost = [store.put(Message.create("Durable", b"lost%d" % i, queue_id=1)) for i in range(6)]
        assert store.wait_dispatched()
    # the crash: the commitlog lost its last six records; queue 1's entries for them were written back
    (segment,) = (live / "commitlog").iterdir()
    with open(segment, "r+b") as f:
        f.seek(lost[0].commit_log_offset)
        f.write(bytes(lost[-1].commit_log_offset + lost[-1].wrote_bytes - lost[0].commit_log_offset))
    if abort_marker:
        (live / "abort").touch()

    recorder = SyncRecorder()
    recorder.seed(live)
    crashed = tmp_path / "crashed"
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            assert store.recovery.abnormal is abort_marker
            assert store.max_offset("Durable", 1) == 6
            # queue 1 fills its second segment again (the third is not created yet); the commitlog grows
            # past the offsets the cut entries pointed at
            for i in range(2):
                assert store.put(Message.create("Durable", b"new%d" % i, queue_id=1)).ok
            for i in range(8):
                assert store.put(Message.create("Durable", b"other%d" % i, queue_id=0)).ok
            assert store.wait_dispatched()
        finally:
            store.close()
        assert not (live / "abort").exists()
        recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
    shutil.rmtree(live)

    with MessageStore.open(crashed, config, background=False) as store:
        assert not store.recovery.abnormal
        assert store.max_offset("Durable", 1) == 8  # not the deleted segment's four stale entries too
        assert _bodies(store, 1) == [b"kept%d" % i for i in range(6)] + [b"new%d" % i for i in range(2)]
        assert _bodies(store, 0) == [b"other%d" % i for i in range(8)]
