"""A commitlog on its own disk (storePathCommitLog): the disk of the consume queues counts too, as 4.9.3's
isSpaceToDelete looks at the logic path after the physical one (a pass by age above
diskMaxUsedSpaceRatio, every segment but the newest above 85 %)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig


def _config(tmp_path: Path) -> StoreConfig:
    return StoreConfig(store_path_commit_log=str(tmp_path / "big-disk" / "commitlog"),
                       mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                       max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                       file_reserved_time_h=72, delete_when="99")


def _usage(commitlog: float, logic: float) -> Callable[[str], float]:
    def usage(path: str) -> float:
        return commitlog if "big-disk" in path else logic
    return usage


def _fill(store: MessageStore, count: int) -> None:
    for i in range(count):
        assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
    assert store.wait_dispatched()


def test_a_consume_queue_disk_above_the_max_ratio_asks_for_a_pass_by_age(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "root", _config(tmp_path)) as store:
        _fill(store, 40)
        commitlog_dir = tmp_path / "big-disk" / "commitlog"
        past = time.time() - 100 * 3600
        for name in os.listdir(commitlog_dir):
            os.utime(commitlog_dir / name, (past, past))
        store._cleaner.usage = _usage(0.30, 0.40)
        assert store.delete_expired_files().commit_log_files_deleted == 0  # not the hour, both disks fine
        store._cleaner.usage = _usage(0.30, 0.80)  # above diskMaxUsedSpaceRatio (75)
        report = store.delete_expired_files()
        assert report.reason == "disk space"
        assert report.commit_log_files_deleted > 0
        assert store.put(Message.create("Ret", b"more")).ok


def test_a_consume_queue_disk_above_85_percent_deletes_young_segments(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "root", _config(tmp_path)) as store:
        _fill(store, 40)
        segments = len(os.listdir(tmp_path / "big-disk" / "commitlog"))
        assert segments > 2
        store._cleaner.usage = _usage(0.30, 0.80)
        assert store.delete_expired_files().commit_log_files_deleted == 0  # young: kept
        store._cleaner.usage = _usage(0.30, 0.88)  # cleanFileForciblyEnable: age no longer counts
        report = store.delete_expired_files()
        assert report.commit_log_files_deleted == min(10, segments - 1)
        assert store.min_offset("Ret", 0) > 0
