"""Dropping whole consume queues (MessageStore.clean_unused_topics / clean_expired_consume_queues, RocketMQ's
cleanUnusedTopic and cleanExpiredConsumerQueue): which queues go, that their files, table entries and queue
offsets go with them, and that a clean-up racing the dispatch and flush threads leaves every other queue whole."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.errors import StoreError
from rocketstore.message.record import Message
from rocketstore.store.config import FlushDiskType, StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.queue_cleanup import DISPATCH_UNDER_LOCK_BYTES, QueueDropper
from rocketstore.store.results import GetMessageStatus

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8, max_hash_slot_num=8,
                    max_index_num=16, preallocate_commit_log=False, file_reserved_time_h=72, delete_when="99")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", SMALL) as s:
        yield s


def put(store: MessageStore, topic: str, count: int, queue_id: int = 0, body_bytes: int = 10,
        **fields: object) -> list[int]:
    offsets = []
    for i in range(count):
        result = store.put(Message.create(topic, bytes([i % 256]) * body_bytes, queue_id=queue_id, **fields))
        assert result.ok, result
        offsets.append(result.queue_offset)
    assert store.wait_dispatched()
    return offsets


def read_all(store: MessageStore, topic: str, queue_id: int) -> list[Message]:
    found = []
    offset = store.min_offset(topic, queue_id)
    while batch := store.get(topic, queue_id, offset, 32).messages:
        found.extend(batch)
        offset = batch[-1].queue_offset + 1
    return found


def queue_dir(store: MessageStore, topic: str, queue_id: int | None = None) -> Path:
    root = Path(store.config.consume_queue_dir) / topic
    return root if queue_id is None else root / str(queue_id)


# --- clean_unused_topics -----------------------------------------------------------------------------------


def test_unused_topics_lose_their_queues_files_and_queue_offsets(store: MessageStore) -> None:
    put(store, "Live", 3, queue_id=0)
    put(store, "Live", 2, queue_id=1)
    put(store, "Gone", 4, queue_id=0)
    put(store, "Gone", 1, queue_id=3)
    put(store, "%RETRY%old-group", 2)
    assert queue_dir(store, "Gone", 3).is_dir()

    dropped = store.clean_unused_topics({"Live"})

    assert dropped == [("%RETRY%old-group", 0), ("Gone", 0), ("Gone", 3)]
    assert store.topics() == {"Live": [0, 1]}
    assert not queue_dir(store, "Gone").exists(), "queue and topic directories deleted"
    assert not queue_dir(store, "%RETRY%old-group").exists()
    assert store.get("Gone", 0, 0).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert (store.min_offset("Gone", 0), store.max_offset("Gone", 0)) == (0, 0)
    # the live topic is untouched and keeps numbering on
    assert [m.body for m in read_all(store, "Live", 0)] == [bytes([i]) * 10 for i in range(3)]
    assert put(store, "Live", 1, queue_id=0) == [3]
    # the commitlog forgot the dropped queues' next offsets: a new message starts a new queue at 0
    assert put(store, "Gone", 2, queue_id=3) == [0, 1]
    assert [m.queue_offset for m in read_all(store, "Gone", 3)] == [0, 1]
    assert store.clean_unused_topics({"Live", "Gone"}) == []


def test_schedule_op_half_and_lmq_topics_are_never_unused(store: MessageStore) -> None:
    put(store, "Delayed", 2, properties={"DELAY": "3"})  # stored in SCHEDULE_TOPIC_XXXX until due
    put(store, OP_HALF_TOPIC, 1)
    put(store, "%LMQ%some-queue", 1)
    put(store, "RMQ_SYS_TRANS_HALF_TOPIC", 1)
    assert SCHEDULE_TOPIC in store.topics()

    dropped = store.clean_unused_topics(set())

    assert dropped == [("RMQ_SYS_TRANS_HALF_TOPIC", 0)], "the half topic is kept only through the topic table"
    assert sorted(store.topics()) == ["%LMQ%some-queue", OP_HALF_TOPIC, SCHEDULE_TOPIC]
    assert len(read_all(store, SCHEDULE_TOPIC, 2)) == 2


def test_dropped_queues_stay_dropped_after_a_restart_when_their_records_are_not_the_newest(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        put(store, "Gone", 3)
        put(store, "Live", 3)
        assert store.clean_unused_topics({"Live"}) == [("Gone", 0)]
    with MessageStore.open(tmp_path, SMALL) as store:
        assert store.topics() == {"Live": [0]}
        assert put(store, "Gone", 1) == [0]


def test_a_read_only_store_refuses_to_drop_queues(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        put(store, "T", 1)
    with MessageStore.open(tmp_path, SMALL, read_only=True) as store:
        with pytest.raises(PermissionError):
            store.clean_unused_topics(set())
        with pytest.raises(PermissionError):
            store.clean_expired_consume_queues()
        assert store.topics() == {"T": [0]}
    assert (tmp_path / "consumequeue" / "T" / "0").is_dir()


# --- clean_expired_consume_queues -----------------------------------------------------------------------------


def _age_commitlog(store: MessageStore, hours: float) -> None:
    past = time.time() - hours * 3600
    for f in Path(store.config.commit_log_dir).iterdir():
        os.utime(f, (past, past))


def test_queues_whose_messages_retention_deleted_are_dropped(store: MessageStore) -> None:
    put(store, "Old", 4, body_bytes=300)
    put(store, "Old", 2, queue_id=1, body_bytes=300)
    put(store, "Delayed", 2, body_bytes=300, properties={"DELAY": "3"})
    put(store, "Mixed", 2, body_bytes=300)
    put(store, "Filler", 20, body_bytes=300)  # several more segments
    put(store, "Mixed", 1, body_bytes=300)  # lands in the newest segment, which retention never deletes
    put(store, "Recent", 2, body_bytes=10)
    assert store.clean_expired_consume_queues() == [], "nothing expired yet"

    _age_commitlog(store, 100)
    report = store.delete_expired_files(force=True)
    assert report.commit_log_files_deleted > 0
    assert store.get("Old", 0, 0).status is GetMessageStatus.OFFSET_TOO_SMALL

    dropped = store.clean_expired_consume_queues()

    assert dropped == [("Filler", 0), ("Old", 0), ("Old", 1)]
    assert sorted(store.topics()) == ["Mixed", "Recent", SCHEDULE_TOPIC]
    assert not queue_dir(store, "Old").exists()
    assert [m.queue_offset for m in read_all(store, "Mixed", 0)] == [2], "partly expired: kept"
    assert len(read_all(store, "Recent", 0)) == 2
    assert put(store, "Old", 1, body_bytes=10) == [0], "a new message of a dropped queue starts again at 0"


def test_an_empty_store_has_nothing_to_clean(store: MessageStore) -> None:
    assert store.clean_expired_consume_queues() == []
    assert store.clean_unused_topics(set()) == []


# --- racing the store's threads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("flush_disk_type", [FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH])
def test_clean_ups_while_writers_and_the_dispatcher_run_keep_other_queues_whole(tmp_path: Path,
                                                                              flush_disk_type: str) -> None:
    """Writers keep putting to live topics and to a topic that is dropped again and again; the flusher syncs
    the consume queues as often as it can.  Afterwards every live queue holds exactly what was put, dense and
    in order, the dropped topic's queue is consistent with its records, and nothing was fenced."""
    config = SMALL.replace(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1024,
                           flush_disk_type=flush_disk_type, flush_interval_commit_log_ms=1,
                           flush_interval_consume_queue_ms=1, flush_consume_queue_least_pages=0)
    live = [("Busy", 0), ("Busy", 1), ("Other", 0)]
    written = dict.fromkeys(live, 0)
    cap = 5000  # puts per thread at most (each segment costs an open file)
    stop = threading.Event()
    errors: list[BaseException] = []

    with MessageStore.open(tmp_path, config) as store:
        def write(topic: str, queue_id: int) -> None:
            try:
                while not stop.is_set() and written[(topic, queue_id)] < cap:
                    body = f"{topic}-{queue_id}-{written[(topic, queue_id)]}".encode()
                    assert store.put(Message.create(topic, body, queue_id=queue_id)).ok
                    written[(topic, queue_id)] += 1
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                errors.append(exc)

        def churn() -> None:
            try:
                i = 0
                while not stop.is_set() and i < 4 * cap:
                    assert store.put(Message.create("Churn", f"c{i}".encode(), queue_id=i % 2)).ok
                    i += 1
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=write, args=key) for key in live] + [threading.Thread(target=churn)]
        for t in threads:
            t.start()
        dropped_churn = 0
        try:
            cleans = 0
            deadline = time.monotonic() + 60
            while (cleans < 20 or min(written.values()) < 200) and not errors:
                assert time.monotonic() < deadline, f"writers stalled: {written}"
                dropped = store.clean_unused_topics({"Busy", "Other"})
                cleans += 1
                assert set(dropped) <= {("Churn", 0), ("Churn", 1)}
                dropped_churn += len(dropped)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors
        assert store.wait_dispatched(30)
        assert store.fenced is None
        assert dropped_churn > 0 and min(written.values()) > 0, "the clean-ups really overlapped the writes"

        for (topic, queue_id), count in written.items():
            got = read_all(store, topic, queue_id)
            assert [m.queue_offset for m in got] == list(range(count))
            assert [m.body for m in got] == [f"{topic}-{queue_id}-{i}".encode() for i in range(count)]
        for queue_id in (0, 1):
            # whatever the churn queues hold since their last drop is dense and points at the right records
            got = read_all(store, "Churn", queue_id)
            first = store.min_offset("Churn", queue_id)
            assert [m.queue_offset for m in got] == list(range(first, first + len(got)))
            assert all(m.topic == "Churn" and m.queue_id == queue_id for m in got)


def test_dropped_queues_whose_records_are_the_newest_come_back_after_a_restart(tmp_path: Path) -> None:
    """As in 4.9.3: dispatch resumes after the newest entry of the queues that remain, so records written after
    it are dispatched again at the next open, and a dropped queue holding them is rebuilt (whole)."""
    with MessageStore.open(tmp_path, SMALL) as store:
        put(store, "Live", 2)
        put(store, "Gone", 3)
        assert store.clean_unused_topics({"Live"}) == [("Gone", 0)]
    with MessageStore.open(tmp_path, SMALL) as store:
        assert store.topics() == {"Gone": [0], "Live": [0]}
        assert [m.queue_offset for m in read_all(store, "Gone", 0)] == [0, 1, 2]
        assert put(store, "Gone", 1) == [3]


def test_a_reader_holding_a_dropped_queue_finds_nothing(store: MessageStore) -> None:
    put(store, "Gone", 3)
    held = store._queues.get("Gone", 0)  # what a read in progress holds
    assert held is not None and held.entry(1) is not None
    store.clean_unused_topics(set())
    assert held.entry(1) is None
    assert held.entries(0, 10) is None
    assert store.get("Gone", 0, 0).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE


def test_a_large_dispatch_backlog_is_not_dispatched_under_the_writer_lock(tmp_path: Path) -> None:
    """Dispatch far behind when the wait for it ends (here: a store without its dispatch thread, and a wait
    that dispatches nothing): the drop answers 'too busy' instead of dispatching megabytes while puts wait on
    the writer lock; once dispatch has caught up, the same drop goes through."""
    config = StoreConfig(mapped_file_size_commit_log=8 << 20, preallocate_commit_log=False)
    with MessageStore.open(tmp_path / "store", config, background=False) as s:
        for i in range(2 * DISPATCH_UNDER_LOCK_BYTES // 1000 + 1):
            assert s.put(Message.create("Gone", b"x" * 1000)).ok
        assert s.max_commit_log_offset > DISPATCH_UNDER_LOCK_BYTES
        threads = s._threads
        dropper = QueueDropper(s._commitlog, s._queues, s._dispatcher, threads, wait_s=0.05)
        real_wait = threads.wait_dispatched
        threads.wait_dispatched = lambda timeout_s=10.0: False  # type: ignore[method-assign]
        with pytest.raises(StoreError, match="dispatch stays behind"):
            dropper.drop(lambda cq: True, "test")
        assert s._dispatcher.reput_offset < s.max_commit_log_offset - DISPATCH_UNDER_LOCK_BYTES  # not dispatched
        threads.wait_dispatched = real_wait  # type: ignore[method-assign]
        assert dropper.drop(lambda cq: True, "test") == [("Gone", 0)]
