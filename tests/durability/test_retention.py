"""Retention: expired segments go, consume queues and index follow, reads answer OFFSET_TOO_SMALL, and a
wall clock that jumps never deletes early."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rocketstore import GetMessageStatus, Message, MessageStore, PutMessageStatus, StoreConfig

HOUR_MS = 3_600_000


def _config(**kw: object) -> StoreConfig:
    base: dict[str, object] = {"mapped_file_size_commit_log": 4096, "mapped_file_size_consume_queue": 20 * 8,
                               "max_hash_slot_num": 8, "max_index_num": 16, "preallocate_commit_log": False,
                               "file_reserved_time_h": 72, "delete_when": "99"}
    base.update(kw)
    return StoreConfig(**base)  # type: ignore[arg-type]


def _fill(store: MessageStore, count: int, topic: str = "Ret") -> None:
    for i in range(count):
        assert store.put(Message.create(topic, b"x" * 300, tags="t", keys=f"k{i}")).ok
    assert store.wait_dispatched()


def _age_segments(store_dir: Path, hours: float) -> None:
    past = time.time() - hours * 3600
    for f in (store_dir / "commitlog").iterdir():
        os.utime(f, (past, past))


def test_manual_clean_deletes_expired_segments_and_moves_queue_min_offsets(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        _fill(store, 60)
        segments_before = len(list((tmp_path / "commitlog").iterdir()))
        _age_segments(tmp_path, 100)
        report = store.delete_expired_files(force=True)
        assert report.commit_log_files_deleted == min(10, segments_before - 1)
        assert store.min_commit_log_offset > 0
        min_q = store.min_offset("Ret", 0)
        assert min_q > 0
        got = store.get("Ret", 0, 0)
        assert got.status is GetMessageStatus.OFFSET_TOO_SMALL and got.next_begin_offset == min_q
        got = store.get("Ret", 0, min_q)
        assert got.status is GetMessageStatus.FOUND
        assert got.messages[0].commit_log_offset >= store.min_commit_log_offset
        # keys of deleted messages are no longer answered with unreadable offsets
        assert store.query("Ret", "k0").messages == ()
    with MessageStore.open(tmp_path, _config()) as store:
        assert store.min_offset("Ret", 0) == min_q


def test_young_segments_are_kept(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        _fill(store, 40)
        report = store.delete_expired_files(force=True)
        assert report.commit_log_files_deleted == 0
        assert store.min_commit_log_offset == 0


def test_wall_clock_jumping_forward_deletes_nothing_early(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        _fill(store, 40)
        store.delete_expired_files(force=True)  # the cleaner first sees the files: young
        jumped = int(time.time() * 1000) + 1000 * HOUR_MS
        report = store.delete_expired_files(force=True, now_ms=jumped)
        assert report.commit_log_files_deleted == 0
        assert store.min_commit_log_offset == 0


def test_wall_clock_jumping_backwards_keeps_index_queries_working(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        now = int(time.time() * 1000)
        for i in range(30):
            # store timestamps that go back and forth by hours, as a stepped clock would stamp them
            ts = now + (HOUR_MS if i % 3 == 0 else -HOUR_MS if i % 3 == 1 else 0)
            assert store.put(Message("Clock", b"b", {"KEYS": f"c{i}"}, store_timestamp=ts)).ok
        assert store.wait_dispatched()
        for i in range(30):
            hits = store.query("Clock", f"c{i}").messages
            assert [m.keys for m in hits] == [f"c{i}"], i


def test_full_disk_refuses_writes_with_a_clear_status_and_keeps_data(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        _fill(store, 5)
        store._cleaner.usage = lambda path: 0.95  # the disk reports 95 % used
        store.delete_expired_files()
        result = store.put(Message.create("Ret", b"late"))
        assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.get("Ret", 0, 0).status is GetMessageStatus.FOUND
        store._cleaner.usage = lambda path: 0.40
        store.delete_expired_files()
        assert store.put(Message.create("Ret", b"later")).ok


def _mount_tmpfs(path: Path, size: str) -> bool:
    import subprocess

    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0


def test_real_small_filesystem_fills_up_with_a_clear_status_and_no_crash(tmp_path: Path) -> None:
    import subprocess

    import pytest

    mnt = tmp_path / "small"
    if not _mount_tmpfs(mnt, "1m"):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        config = _config(mapped_file_size_commit_log=64 * 1024, preallocate_commit_log=True)
        acked = []
        statuses = set()
        with MessageStore.open(mnt / "store", config) as store:
            for i in range(2000):
                r = store.put(Message.create("Full", os.urandom(900), keys=f"f{i}"))
                if r.ok:
                    acked.append((r.commit_log_offset, f"f{i}"))
                else:
                    statuses.add(r.status)
                    if len(statuses) and i > len(acked) + 20:
                        break
            assert acked, "nothing fitted"
            assert statuses <= {PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.CREATE_MAPEDFILE_FAILED}
            assert statuses, "a 1 MiB file system never filled up"
        with MessageStore.open(mnt / "store", config, read_only=True) as store:
            for offset, key in acked:
                m = store.message_at(offset)
                assert m is not None and m.keys == key
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


def test_a_file_system_that_reports_no_size_keeps_young_segments(tmp_path: Path) -> None:
    # an unlimited tmpfs (size=0) reports zero blocks: the usage is unknown (-1), which asks for a pass by
    # age as in 4.9.3, never for deleting every segment at once
    import subprocess

    import pytest

    mnt = tmp_path / "unlimited"
    if not _mount_tmpfs(mnt, "0"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        with MessageStore.open(mnt / "store", _config()) as store:
            _fill(store, 40)
            segments = len(list((mnt / "store" / "commitlog").iterdir()))
            assert segments > 2
            report = store.delete_expired_files()
            assert report.disk_usage_ratio == -1
            assert report.commit_log_files_deleted == 0
            assert store.min_commit_log_offset == 0
            assert store.get("Ret", 0, 0).status is GetMessageStatus.FOUND
        _age_segments(mnt / "store", 100)
        with MessageStore.open(mnt / "store", _config()) as store:  # a cleaner that first sees them old
            assert store.delete_expired_files().commit_log_files_deleted == segments - 1
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
