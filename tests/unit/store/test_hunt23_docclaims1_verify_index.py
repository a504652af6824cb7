"""verify after a lost last segment: the index check names no record the index holds.

A key shared by more records than a query answers (maxMsgsNumBatch) whose newest records were in the lost
segment: the query's hits are fewer than the limit (the missing records are left out, as RocketMQ's
queryMessage leaves them out), and verify took that for an uncut answer, reporting every older record of
the key as INDEX_KEY_NOT_FOUND although the index finds it.  Only the cut itself is a problem.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.verify import ProblemKind, verify_store


def test_a_lost_last_segment_reports_the_cut_not_index_keys(tmp_path: Path) -> None:
    root = tmp_path / "store"
    config = StoreConfig(mapped_file_size_commit_log=64 << 10)
    with MessageStore.open(root, config) as store:
        for i in range(700):
            assert store.put(Message.create("T", b"x" * 100, keys=f"shared k{i}")).status.name == "PUT_OK"
        assert store.wait_dispatched()
    segments = sorted(os.listdir(root / "commitlog"))
    assert len(segments) >= 3
    os.unlink(root / "commitlog" / segments[-1])  # a lost last segment after a clean shutdown

    with MessageStore.open(root, config, read_only=True) as store:
        report = verify_store(store, max_problems=100_000)
    kinds = set(report.counts_by_kind)
    assert ProblemKind.INDEX_KEY_NOT_FOUND not in kinds, report.problems[:3]
    assert kinds == {ProblemKind.RECOVERY_DROPS_CQ_ENTRIES}
