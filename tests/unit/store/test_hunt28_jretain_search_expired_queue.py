"""SEARCH_OFFSET_BY_TIMESTAMP on a queue whose every message retention removed (hunt 28, jretain).

Retention moves such a queue's min offset to its end (consume_queue.correct_min_offset), where 4.9.3 leaves
it at 0.  The time search still answered 0 for it, below the min offset: a CONSUME_FROM_TIMESTAMP group (or
``mqadmin resetOffsetByTime``) was put at 0, and its first pull answered OFFSET_MOVED (an OFFSET_MOVED_EVENT,
and a Java push consumer drops the queue and waits before taking it again) where 4.9.3, whose min offset
is 0 too, answers a retry at once.  Captured from 4.9.3 on such a queue (5 messages, all removed): min 0,
max 5, searchOffset(any time) 0; a pull at 0 gives nextBeginOffset 5.  The search now answers no offset
below the queue's min offset (here its end, 5, where the group's first message will be).
"""

from __future__ import annotations

import time
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig

SEGMENT_BYTES = 4096


def test_the_time_search_of_a_wholly_expired_queue_is_not_below_its_min_offset(tmp_path: Path) -> None:
    config = StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES, preallocate_commit_log=False,
                         file_reserved_time_h=1)
    with MessageStore.open(tmp_path, config, background=False) as store:
        for _ in range(5):  # the idle queue's messages, all in the first segment
            assert store.put(Message.create("Idle", b"x" * 100, queue_id=0)).ok
        while store.max_commit_log_offset < 3 * SEGMENT_BYTES:
            assert store.put(Message.create("Busy", b"x" * 100, queue_id=0)).ok
        assert store.wait_dispatched()
        busy_min = store.min_offset("Busy", 0)
        assert store.offset_by_time("Idle", 0, 0) == 0
        report = store.delete_expired_files(force=True, now_ms=int(time.time() * 1000) + 100 * 3_600_000)
        assert report.commit_log_files_deleted >= 1
        assert store.min_offset("Idle", 0) == store.max_offset("Idle", 0) == 5
        for timestamp_ms in (0, int(time.time() * 1000), 2**62):
            assert store.offset_by_time("Idle", 0, timestamp_ms) == 5
        # a queue with records left is searched as before: an old time finds its first record left
        assert store.min_offset("Busy", 0) > busy_min
        assert store.offset_by_time("Busy", 0, 0) == store.min_offset("Busy", 0)
        # the next message to the idle queue is found from then on
        assert store.put(Message.create("Idle", b"y", queue_id=0)).ok
        assert store.wait_dispatched()
        assert store.offset_by_time("Idle", 0, 0) == 5


def test_a_search_that_races_retention_is_not_below_the_min_offset_either(tmp_path: Path) -> None:
    # the search's other exits (review of 953daf9): a record whose store time can no longer be read (its
    # segment deleted between the min offset read and the look-up), and three segments unmapped meanwhile
    config = StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES, preallocate_commit_log=False,
                         file_reserved_time_h=1)
    with MessageStore.open(tmp_path, config, background=False) as store:
        for _ in range(5):
            assert store.put(Message.create("Idle", b"x" * 100, queue_id=0)).ok
        while store.max_commit_log_offset < 3 * SEGMENT_BYTES:
            assert store.put(Message.create("Idle", b"x" * 100, queue_id=0)).ok
        assert store.wait_dispatched()
        store.delete_expired_files(force=True, now_ms=int(time.time() * 1000) + 100 * 3_600_000)
        low = store.min_offset("Idle", 0)
        assert low > 0
        cq = store._queues.get("Idle", 0)
        assert cq is not None

        def unmapped(_phy: int, _size: int) -> int:
            raise ValueError("mmap closed")

        assert cq.offset_by_time(0, 0, lambda _phy, _size: -1) == low
        assert cq.offset_by_time(0, 0, unmapped) == low
