"""verify on a store with one record damaged inside: only that record is reported.

Seen on a store the real RocketMQ 4.9.3 broker wrote (1 MiB segments): one byte of a record's properties
flipped (no longer UTF-8) in the first of four segments.  4.9.3's clean-shutdown recovery checks only the
last three segments and its readers hand that record out as it is; our verify stopped reading the segment at
the damaged record ("rest of the segment skipped") and then reported every later record's queue entry as
CQ_NOT_RECORD_START plus a QUEUE_OFFSET_GAP per queue (966 false alarms for one byte).  The record's total
size is intact and leads to the next record's magic, so verify now skips just that record.

Since session 25 the readers and the dispatcher read such properties as 4.9.3 does (U+FFFD), so verify reports
them as PROPERTIES_NOT_UTF8 and checks the record on (its queue entry is no false CQ_NOT_RECORD_START); a
topic that is not UTF-8 is still undecodable (the dispatcher refuses it) and skipped by its size.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.message.record import StoredMessage
from rocketstore.store.verify import ProblemKind, verify_store


def _damaged_store(tmp_path: Path, byte_at: Callable[[StoredMessage], int]) -> tuple[Path, StoreConfig, int]:
    """A store of 2000 messages in four or more 64 KiB segments with one byte of a record in the first one
    set to 0xff (where *byte_at* says, from the record's message); returns its root, config and the record's
    commitlog offset."""
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
    with open(root / "commitlog" / segments[0], "r+b") as f:
        f.seek(byte_at(victim))
        f.write(b"\xff")
    return root, config, victim.commit_log_offset


def test_one_record_whose_properties_are_not_utf8_is_reported_alone(tmp_path: Path) -> None:
    # the last byte of the record lies in its properties: 0xff makes them undecodable UTF-8
    root, config, offset = _damaged_store(tmp_path, lambda m: m.commit_log_offset + m.store_size - 1)
    with MessageStore.open(root, config, read_only=True) as store:
        report = verify_store(store, max_problems=100_000)
    # the byte was the last of its KEYS value ('k16' now reads 'k1\ufffd'): a query by that no longer finds
    # the record (the index holds the key as it was put), and verify says so
    assert report.counts_by_kind == {ProblemKind.PROPERTIES_NOT_UTF8: 1, ProblemKind.INDEX_KEY_NOT_FOUND: 1}, \
        report.problems[:5]
    where = {p.kind: p.where for p in report.problems}
    assert where[ProblemKind.PROPERTIES_NOT_UTF8] == f"commitlog@{offset}"


def test_one_record_whose_topic_is_not_utf8_is_skipped_alone(tmp_path: Path) -> None:
    # the topic's first byte ('T'): 88 bytes of fixed fields, the body, the topic's length byte
    root, config, offset = _damaged_store(tmp_path, lambda m: m.commit_log_offset + 88 + len(m.body) + 1)
    with MessageStore.open(root, config, read_only=True) as store:
        report = verify_store(store, max_problems=100_000)
    assert report.counts_by_kind == {
        ProblemKind.RECORD_UNDECODABLE: 1,
        ProblemKind.CQ_NOT_RECORD_START: 1,
        ProblemKind.QUEUE_OFFSET_GAP: 1,
    }, report.problems[:5]
    where = {p.kind: p.where for p in report.problems}
    assert where[ProblemKind.RECORD_UNDECODABLE] == f"commitlog@{offset}"
