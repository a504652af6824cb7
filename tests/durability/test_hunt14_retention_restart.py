"""Retention after a restart: consume-queue and index files a crash left behind, pointing before the
commitlog's first byte, go at the first clean-up pass (4.9.3's CleanConsumeQueueService starts from a
last physical min offset of 0)."""

from __future__ import annotations

import os
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig


def _config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                       max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                       file_reserved_time_h=72, delete_when="99")


def test_queue_and_index_files_orphaned_by_a_crash_go_at_the_first_pass_after_a_restart(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config()) as store:
        for i in range(60):
            assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()
    cq_dir = tmp_path / "consumequeue" / "Ret" / "0"
    cq_before = sorted(os.listdir(cq_dir))
    index_before = sorted(os.listdir(tmp_path / "index"))
    # a crash right after retention deleted three commitlog segments, before their queue and index files
    for name in sorted(os.listdir(tmp_path / "commitlog"))[:3]:
        os.remove(tmp_path / "commitlog" / name)
    with MessageStore.open(tmp_path, _config()) as store:
        store._cleaner.usage = lambda path: 0.30  # whatever this machine's disk: no pass by disk space
        min_phy = store.min_commit_log_offset
        assert min_phy == 3 * 4096
        report = store.delete_expired_files()  # not the hour, not a full disk: only the queues' own clean-up
        assert report.commit_log_files_deleted == 0
        assert report.consume_queue_files_deleted > 0
        assert report.index_files_deleted > 0
        cq_after = sorted(os.listdir(cq_dir))
        assert len(cq_after) < len(cq_before)
        assert len(os.listdir(tmp_path / "index")) < len(index_before)
        # what is left still reads from the queue's min offset on
        got = store.get("Ret", 0, store.min_offset("Ret", 0))
        assert got.messages and got.messages[0].commit_log_offset >= min_phy
