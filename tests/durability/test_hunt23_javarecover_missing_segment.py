"""A commitlog segment gone from the middle (deleted by hand, lost by the disk) must not cost a queue the
intact messages stored after it when the store is opened after a crash.

RocketMQ 4.9.3 (DefaultMessageStore.load, CommitLog.recoverAbnormally) keeps every consume queue entry below
the recovered end: the entries into the missing segment stay (their reads say the message is gone), and so do
the later ones, whose records are whole.  Our abnormal recovery took the first entry into the missing segment
for a torn entry and rebuilt the queue from there: the re-dispatched records after the hole no longer
followed on from the cut queue, so every message of the queue stored after the hole vanished (found by
differential recovery testing against the real 4.9.3 store).
"""

from __future__ import annotations

from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

SEGMENT = 4096
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 64,
                     max_hash_slot_num=16, max_index_num=64, file_reserved_time_h=0)


def _offsets(store: MessageStore, topic: str, queue_id: int) -> list[int]:
    got: list[int] = []
    offset = store.min_offset(topic, queue_id)
    while offset < store.max_offset(topic, queue_id):
        result = store.get(topic, queue_id, offset, 32)
        got += [m.commit_log_offset for m in result.messages]
        if result.next_begin_offset <= offset:
            break
        offset = result.next_begin_offset
    return got


def test_queue_keeps_its_messages_after_a_missing_middle_segment(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with MessageStore.open(root, CONFIG) as store:
        stored = [store.put(Message("T", b"%03d" % i + b"x" * 700)) for i in range(16)]
        assert all(r.ok for r in stored)
        assert store.wait_dispatched()
    segments = sorted((root / "commitlog").iterdir())
    assert len(segments) >= 3
    middle = segments[1]
    start, end = int(middle.name), int(middle.name) + SEGMENT
    middle.unlink()
    (root / "abort").write_bytes(b"")  # a crash: abnormal recovery

    after = [r.commit_log_offset for r in stored if r.commit_log_offset >= end]
    before = [r.commit_log_offset for r in stored if r.commit_log_offset < start]
    assert after and before
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        assert store.max_offset("T", 0) == len(stored)
        got = _offsets(store, "T", 0)
        assert got == before + after
