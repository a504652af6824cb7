"""getMessage while retention has deleted the commitlog segment under a queue's first entries and the queue's
min offset has not moved yet (the clean-up's window between the two).

4.9.3 answers MESSAGE_WAS_REMOVING for the removed record's read, skips the rest of that segment, and then a
tag-filtered entry (nothing handed out yet) answers NO_MATCHED_MESSAGE.  We kept MESSAGE_WAS_REMOVING when
the consume queue's tag codes refused every later entry (only a property filter's refusal changed it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.results import GetMessageStatus

SEGMENT_BYTES = 4096
#: entries per consume queue segment: a get scans no further than the end of the one it starts in
CQ_ENTRIES = 8


@pytest.fixture
def head_removed(tmp_path: Path) -> Iterator[tuple[MessageStore, int]]:
    """Queue T/0: the first commitlog segment holds only tag A messages, the next segment tag C ones; the
    first segment is then deleted under the queue (its min offset still 0).  Yields the store and the queue
    offset of the first message in the second segment."""
    config = StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES, mapped_file_size_consume_queue=20 * CQ_ENTRIES,
                         preallocate_commit_log=False)
    # no background threads: no clean-up pass moves the queue's min offset while the test reads
    with MessageStore.open(tmp_path, config, background=False) as store:
        first_in_next = 0
        while True:
            put = store.put(Message.create("T", b"x" * 30, tags="A", queue_id=0))
            assert put.ok
            if put.commit_log_offset + put.wrote_bytes + put.wrote_bytes + 8 > SEGMENT_BYTES:
                first_in_next = put.queue_offset + 1  # the next record does not fit: it rolls over
                break
        for _ in range(10):
            assert store.put(Message.create("T", b"x" * 30, tags="C", queue_id=0)).ok
        assert store.wait_dispatched()
        store._commitlog.files.delete_first(1)
        assert store.min_commit_log_offset == SEGMENT_BYTES
        assert store.min_offset("T", 0) == 0
        yield store, first_in_next


def _scan_start(first_in_next: int) -> int:
    """A queue offset below *first_in_next* (a removed record's) in the consume queue segment that holds it."""
    start = first_in_next - first_in_next % CQ_ENTRIES
    assert start < first_in_next, "the roll-over fell on a consume queue segment's start: no removed entry before it"
    return start


def test_removed_record_then_only_refused_tags_is_no_matched_message(
        head_removed: tuple[MessageStore, int]) -> None:
    store, first_in_next = head_removed
    start = _scan_start(first_in_next)
    got = store.get("T", 0, start, 4, tags="A")
    assert got.status is GetMessageStatus.NO_MATCHED_MESSAGE
    assert got.next_begin_offset == start + CQ_ENTRIES
    assert got.records == ()
