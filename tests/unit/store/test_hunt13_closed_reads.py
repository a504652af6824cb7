"""A closed store answers no question about its queues: once its files are unmapped a queue would read as
empty (max offset 0, no store time), which a caller holding a stale store takes for the truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.errors import StoreClosedError
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                    max_index_num=64)


def test_queue_bounds_and_times_of_a_closed_store_raise_store_closed_error(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SMALL)
    for i in range(3):
        assert store.put(Message.create("T", b"x", keys=f"k{i}")).ok
    assert store.wait_dispatched()
    assert store.max_offset("T", 0) == 3
    store.close()
    reads = {
        "min_offset": lambda: store.min_offset("T", 0),
        "max_offset": lambda: store.max_offset("T", 0),
        "store_time": lambda: store.store_time("T", 0, 0),
        "earliest_message_time of a queue": lambda: store.earliest_message_time("T", 0),
        "earliest_message_time": lambda: store.earliest_message_time(),
        "queue_entries": lambda: store.queue_entries("T", 0, 0, 3),
        "read_replica": lambda: store.read_replica(0, 1024),
    }
    for name, read in reads.items():
        with pytest.raises(StoreClosedError):
            read()
            pytest.fail(f"{name} answered on a closed store")


def test_the_reopened_store_answers_again(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL) as store:
        assert store.put(Message.create("T", b"x")).ok
    with MessageStore.open(path, SMALL) as store:
        assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (0, 1)
        assert store.store_time("T", 0, 0) > 0
        assert store.queue_entries("T", 0, 0, 1) is not None
        assert len(store.read_replica(0, 1024)) > 0
