"""verify on a store with one record damaged inside: only that record is reported.

Seen on a store the real RocketMQ 4.9.3 broker wrote (1 MiB segments): one byte of a record's properties
flipped (no longer UTF-8) in the first of four segments.  4.9.3's clean-shutdown recovery checks only the
last three segments and its readers hand that record out as it is; our verify stopped reading the segment at
the damaged record ("rest of the segment skipped") and then reported every later record's queue entry as
CQ_NOT_RECORD_START plus a QUEUE_OFFSET_GAP per queue (966 false alarms for one byte).  The record's total
size is intact and leads to the next record's magic, so verify now skips just that record.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.verify import ProblemKind, verify_store


def test_one_damaged_record_is_reported_alone(tmp_path: Path) -> None:
    root = tmp_path / "store"
    config = StoreConfig(mapped_file_size_commit_log=64 << 10)
    with MessageStore.open(root, config) as store:
        for i in range(2000):
            msg = Message.create(f"T{i % 3}", b"body-%d" % i, keys=f"k{i}")
            assert store.put(msg).status.name == "PUT_OK"
        assert store.wait_dispatched()
        victim = store.get("T1", 0, 5, 1).messages[0]
    segments = sorted(os.listdir(root / "commitlog"))
    assert len(segments) >= 4 and victim.commit_log_offset < (64 << 10)
    # the last byte of the record lies in its properties: 0xff makes them undecodable UTF-8
    with open(root / "commitlog" / segments[0], "r+b") as f:
        f.seek(victim.commit_log_offset + victim.store_size - 1)
        f.write(b"\xff")

    with MessageStore.open(root, config, read_only=True) as store:
        report = verify_store(store, max_problems=100_000)
    assert report.counts_by_kind == {
        ProblemKind.RECORD_UNDECODABLE: 1,
        ProblemKind.CQ_NOT_RECORD_START: 1,
        ProblemKind.QUEUE_OFFSET_GAP: 1,
    }, report.problems[:5]
    where = {p.kind: p.where for p in report.problems}
    assert where[ProblemKind.RECORD_UNDECODABLE] == f"commitlog@{victim.commit_log_offset}"
