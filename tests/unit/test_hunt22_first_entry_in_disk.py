"""QUERY_CONSUMER_OFFSET's rule for a group with no offset (4.9.3's checkInDiskByConsumeOffset(topic, queue,
0)) looks at consume queue entry 0's commitlog offset, not at a record read from there: while retention
deletes the head of the commitlog (the segment is gone, the queue's min offset still 0) a queue whose records
all lay there has nothing to read, yet its entry 0 is far from the end, in disk, so a new group must not be
told to start at 0."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.broker.offset_handlers import first_message_in_disk

SEGMENT_BYTES = 4096


def test_entry_zero_of_a_removed_head_is_in_disk(tmp_path: Path) -> None:
    # accessMessageInMemoryMaxRatio 0: every record before the commitlog's end is "in disk"
    config = StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES, preallocate_commit_log=False,
                         access_message_in_memory_max_ratio=0)
    with MessageStore.open(tmp_path, config, background=False) as store:
        # queue 0's records all in the first segment, queue 1's after them
        for _ in range(3):
            assert store.put(Message.create("T", b"x" * 100, queue_id=0)).ok
        while store.max_commit_log_offset < 2 * SEGMENT_BYTES:
            assert store.put(Message.create("T", b"x" * 100, queue_id=1)).ok
        assert store.wait_dispatched()
        broker = SimpleNamespace(store=store)  # first_message_in_disk reads the broker's store only
        assert first_message_in_disk(broker, "T", 0)  # type: ignore[arg-type]
        store._commitlog.files.delete_first(1)  # retention's first step; the queue's min offset follows later
        assert store.min_offset("T", 0) == 0
        assert first_message_in_disk(broker, "T", 0)  # type: ignore[arg-type]
        assert not first_message_in_disk(broker, "T", 2)  # type: ignore[arg-type]  # no such queue
        assert not store.in_disk(store.max_commit_log_offset)


def test_entry_zero_near_the_end_is_not_in_disk(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES,
                                                 preallocate_commit_log=False), background=False) as store:
        assert store.put(Message.create("T", b"x", queue_id=0)).ok
        assert store.wait_dispatched()
        assert not first_message_in_disk(SimpleNamespace(store=store), "T", 0)  # type: ignore[arg-type]
