"""getMessage past the consume queue's end while the dispatcher is behind the commitlog.

With slaveReadEnable a consumer can read offset N from a slave whose dispatch ran ahead of the master's, then
ask the master for N + 1 while the master's consume queue still ends at N (its records are in its commitlog,
not dispatched yet).  4.9.3's getMessage answers OFFSET_OVERFLOW_BADLY there and, the queue keeping its first
entry, corrects the consumer to 0: it read the whole queue again (64 deliveries of 60 messages in
tests/integration/test_hunt13_ha_slave_read_cpp.py).  An offset the commitlog still holds for the queue now
answers OFFSET_OVERFLOW_ONE at that offset (nothing new yet); one past what the commitlog holds is corrected
as before.  The dispatcher is held (its lock taken) so the consume queue lags the commitlog deterministically.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, GetResult

SMALL = StoreConfig(mapped_file_size_commit_log=1 << 16, mapped_file_size_consume_queue=20 * 64)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", SMALL) as s:
        yield s


@contextmanager
def dispatch_held(store: MessageStore) -> Iterator[None]:
    """Nothing written meanwhile reaches the consume queues until the block ends."""
    lock: threading.Lock = store._dispatcher.lock
    assert lock.acquire(timeout=30), "the dispatcher's lock"
    try:
        yield
    finally:
        lock.release()


def put(store: MessageStore, count: int, topic: str = "T", queue_id: int = 0) -> None:
    for i in range(count):
        assert store.put(Message.create(topic, b"m%d" % i, queue_id=queue_id)).ok


def line(result: GetResult) -> tuple[GetMessageStatus, int, int, int]:
    return result.status, result.next_begin_offset, result.min_offset, result.max_offset


def test_an_offset_written_but_not_dispatched_is_overflow_one_in_place(store: MessageStore) -> None:
    put(store, 3)
    assert store.wait_dispatched()
    with dispatch_held(store):
        put(store, 4)  # queue offsets 3..6 in the commitlog, the consume queue still ends at 3
        assert store.max_offset("T", 0) == 3
        for offset in (4, 5, 6, 7):
            assert line(store.get("T", 0, offset)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, 0, 3), offset
        # past what the commitlog holds for the queue: corrected as 4.9.3 does (min offset 0: to 0)
        assert line(store.get("T", 0, 8)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 3)
        assert line(store.get("T", 0, 3)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3, 0, 3)
    assert store.wait_dispatched()
    got = store.get("T", 0, 4)
    assert got.status is GetMessageStatus.FOUND and got.queue_offsets == (4, 5, 6)
    assert line(store.get("T", 0, 8)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 7)


def test_a_queue_not_dispatched_at_all_yet_waits_at_an_offset_the_commitlog_holds(store: MessageStore) -> None:
    put(store, 1, topic="Other")
    assert store.wait_dispatched()
    with dispatch_held(store):
        put(store, 2, topic="New", queue_id=1)  # no consume queue for New/1 yet
        assert line(store.get("New", 1, 1)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 1, 0, 0)
        assert line(store.get("New", 1, 2)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 2, 0, 0)
        # offset 0 and offsets past the commitlog's: unchanged
        assert line(store.get("New", 1, 0)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        assert line(store.get("New", 1, 3)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        assert line(store.get("New", 0, 1)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
    assert store.wait_dispatched()
    assert store.get("New", 1, 1).queue_offsets == (1,)


def test_with_the_dispatcher_caught_up_past_the_end_is_corrected_as_before(store: MessageStore) -> None:
    put(store, 5)
    assert store.wait_dispatched()
    assert line(store.get("T", 0, 6)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 5)
    assert line(store.get("T", 0, 1 << 40)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 5)
    assert line(store.get("T", 0, 5)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 5, 0, 5)
    assert line(store.get("T", 1, 3)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
