"""Directory entries the store creates or deletes survive a power loss as the store left them.

A file's data is durable at its fdatasync, its name only at a sync of its directory.  A segment created (and
its directories) must not vanish with the records a sync flush acknowledged in it; a segment retention
deleted, or a queue a topic clean-up dropped, must not come back.  The power loss is powerloss.py's
SyncRecorder: every page written since its file's last sync is lost, and (``entries_need_sync``) so is every
name its directory was not synced with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig
from rocketstore.store.file_queue import FileQueue

from .powerloss import EveryUnsyncedPageLost, SyncRecorder
from .test_retention import _age_segments, _config, _fill


def _keys(store: MessageStore, topic: str, queue_id: int) -> list[str]:
    found: list[str] = []
    offset = store.min_offset(topic, queue_id)
    while True:
        got = store.get(topic, queue_id, offset, 32)
        if got.status is not GetMessageStatus.FOUND:
            return found
        found.extend(m.keys for m in got.messages)
        offset = got.next_begin_offset


def _filled(live: Path, config: StoreConfig, topic: str = "Ret", count: int = 60) -> None:
    with MessageStore.open(live, config) as store:
        _fill(store, count, topic)


def _seeded(live: Path, recorder: SyncRecorder) -> None:
    """The store was closed cleanly: every file and directory entry the disk holds now is durable."""
    for p in [live, *live.rglob("*")]:
        if p.is_dir():
            recorder.seed(p)


@pytest.mark.parametrize("preallocate", [False, True])
def test_sync_flush_records_in_fresh_segments_survive_a_power_loss(tmp_path: Path, preallocate: bool) -> None:
    """Puts acknowledged under SYNC_FLUSH roll the commitlog (and the consume queues) over into new segments,
    and make a new topic's queues, then the power goes out: every acknowledged message is in the store
    recovery makes of the disk."""
    config = _config(flush_disk_type="SYNC_FLUSH", preallocate_commit_log=preallocate)
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    _filled(live, config, "Old", 1)
    recorder = SyncRecorder(entries_need_sync=True)
    _seeded(live, recorder)
    acked: list[str] = []
    with recorder.active():
        store = MessageStore.open(live, config)
        try:
            for i in range(40):  # 40 x ~400 bytes: four commitlog segments, five of each queue
                key = f"k{i}"
                assert store.put(Message.create("Fresh", b"x" * 300, keys=key, queue_id=i % 2)).ok
                acked.append(key)
            assert len(list((live / "commitlog").iterdir())) >= 3
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())  # the power goes out here
        finally:
            store.close()
    with MessageStore.open(crashed, config, background=False) as store:
        assert store.recovery.abnormal
        found = _keys(store, "Fresh", 0) + _keys(store, "Fresh", 1)
    assert sorted(found) == sorted(acked)


def test_segments_retention_deleted_stay_deleted_after_a_power_loss(tmp_path: Path) -> None:
    """A retention pass deletes expired commitlog, consume-queue and index files; the power goes out: none
    of them is back (a stale old segment would sit at the head of its queue, the checkpoint and the other
    queues having moved on)."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    config = _config()
    _filled(live, config)
    _age_segments(live, 100)
    recorder = SyncRecorder()
    _seeded(live, recorder)
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            report = store.delete_expired_files(force=True)
            assert report.commit_log_files_deleted > 0
            left = {sub: sorted(p.name for p in (live / sub).iterdir())
                    for sub in ("commitlog", "consumequeue/Ret/0", "index")}
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    shutil.rmtree(live)
    assert {sub: sorted(p.name for p in (crashed / sub).iterdir()) for sub in left} == left


def test_a_dropped_queue_stays_dropped_after_a_power_loss(tmp_path: Path) -> None:
    """Topic clean-up drops a topic's consume queues (and its directory); the power goes out: the queues
    are not back to serve their old entries."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    config = _config()
    _filled(live, config, "Gone", 10)
    recorder = SyncRecorder()
    _seeded(live, recorder)
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            assert store.put(Message.create("Kept", b"kept")).ok
            assert store.wait_dispatched()
            assert ("Gone", 0) in store.clean_unused_topics({"Kept"})
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    shutil.rmtree(live)
    # (an open after the crash may build the queue anew from the commitlog's records past the checkpoint,
    # as 4.9.3's recovery does; the dropped files themselves must not be back)
    assert not (crashed / "consumequeue" / "Gone").exists()
    assert (crashed / "consumequeue" / "Kept").exists()


def test_a_new_queue_directory_and_its_synced_segment_survive_a_power_loss(tmp_path: Path) -> None:
    """A queue's first segment is made with its directories (``consumequeue/<topic>/<queueId>``): once its
    data is synced, neither it nor a directory above it vanishes at a power loss (the checkpoint may by then
    tell recovery that the entries are flushed, and not to rebuild them)."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    queue = FileQueue(str(live / "consumequeue" / "New" / "3"), 160, writable=True)
    with recorder.active():
        try:
            queue.create_next().append(b"entry" * 4)
            assert queue.flush()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            queue.close()
    segment = crashed / "consumequeue" / "New" / "3" / "00000000000000000000"
    assert segment.exists()
    assert segment.read_bytes()[:20] == b"entry" * 4


def test_index_files_a_crash_open_deletes_stay_deleted_after_a_power_loss(tmp_path: Path) -> None:
    """After a crash, an open deletes the index files newer than the checkpoint's index time (their entries
    may point past what recovery keeps); the power goes out soon after: they are not back."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    config = _config()
    _filled(live, config, "Idx", 40)
    assert len(list((live / "index").iterdir())) >= 2
    with open(live / "checkpoint", "r+b") as f:
        f.seek(16)
        f.write(bytes(8))  # the index time the checkpoint holds: before every index file's last entry
    (live / "abort").touch()  # the run crashed
    recorder = SyncRecorder()
    _seeded(live, recorder)
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            assert store.recovery.abnormal
            left = sorted(p.name for p in (live / "index").iterdir())
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    assert sorted(p.name for p in (crashed / "index").iterdir()) == left
