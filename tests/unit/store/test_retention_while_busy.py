"""Retention passes while the store is busy: writers, readers, the dispatcher and the flusher keep working
while commitlog, consume-queue and index files are deleted under them."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.message_store import MessageStore

# tiny segments, and every segment but the newest old enough to go at each pass
BUSY = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                   max_index_num=64, file_reserved_time_h=0, flush_interval_commit_log_ms=1,
                   flush_commit_log_least_pages=0, preallocate_commit_log=False)



def test_a_retention_pass_keeps_segments_the_dispatcher_has_not_reached(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", BUSY, background=False) as store:
        for i in range(200):
            assert store.put(Message.create("T", b"x" * 100, keys=f"k{i}", queue_id=i % 2)).ok
        assert store.max_commit_log_offset > 5 * BUSY.mapped_file_size_commit_log
        # nothing dispatched yet: deleting these segments would lose their consume-queue entries for good
        report = store.delete_expired_files(force=True)
        assert report.commit_log_files_deleted == 0
        assert store.wait_dispatched()
        assert store.delete_expired_files(force=True).commit_log_files_deleted > 0
        for queue_id in (0, 1):
            assert store.max_offset("T", queue_id) == 100
        # the queues go on: a later message is dispatched and found
        assert store.put(Message.create("T", b"later", queue_id=1)).queue_offset == 100
        assert store.wait_dispatched()
        got = store.get("T", 1, 100)
        assert [m.body for m in got.messages] == [b"later"]


def test_writers_readers_and_the_flusher_survive_retention_deleting_under_them(
        tmp_path: Path, fast_switching: None) -> None:
    store = MessageStore.open(tmp_path / "store", BUSY)
    puts = 6000
    done = threading.Event()
    failures: list[BaseException] = []
    written: list[tuple[int, int]] = []  # (queue id, store timestamp) of some puts

    def cleaner() -> None:
        while not done.is_set():
            store.delete_expired_files(force=True)

    def reader() -> None:
        i = 0
        while not done.is_set():
            i += 1
            queue_id = i % 2
            store.get("T", queue_id, store.min_offset("T", queue_id))
            store.query("T", f"k{i % puts}")
            store.offset_by_time("T", queue_id, int(time.time() * 1000) - i % 50)
            store.earliest_message_time()
            store.earliest_message_time("T", queue_id)
            store.message_at(store.min_commit_log_offset)

    def guarded(target):  # type: ignore[no-untyped-def]
        def run() -> None:
            try:
                target()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                failures.append(exc)
                done.set()
        return run

    threads = [threading.Thread(target=guarded(f), daemon=True) for f in (cleaner, reader, reader)]
    for t in threads:
        t.start()
    try:
        for i in range(puts):
            result = store.put(Message.create("T", b"y" * 100, keys=f"k{i}", queue_id=i % 2))
            assert result.ok, result
            if i % 500 == 0:
                written.append((i % 2, result.store_timestamp))
            if failures:
                break
    finally:
        done.set()
        for t in threads:
            t.join(timeout=60)
    try:
        assert failures == []
        assert store.wait_dispatched()
        for queue_id in (0, 1):
            assert store.max_offset("T", queue_id) == puts // 2
        assert "rocketstore-flush" in {t.name for t in threading.enumerate()}
        assert store.fenced is None
    finally:
        store.close()


def test_a_segment_added_while_head_segments_are_deleted_is_never_lost(tmp_path: Path,
                                                                      fast_switching: None) -> None:
    # scratch segments (anonymous mappings) are cheap to make, so the two threads meet often
    files = FileQueue(str(tmp_path / "segments"), 4096, writable=False)
    done = threading.Event()

    def delete_head() -> None:
        while not done.is_set():
            files.delete_first(1)

    deleter = threading.Thread(target=delete_head, daemon=True)
    deleter.start()
    lost_at = None
    newest = None
    try:
        for i in range(200_000):
            if newest is not None and files.last() is not newest:
                lost_at = i
                break
            while len(files) > 64 and deleter.is_alive():
                time.sleep(0)  # a starved deleter would let the list (and each pass over it) grow without end
            newest = files.create_next()
            newest.wrote = newest.size_bytes
    finally:
        done.set()
        deleter.join(timeout=60)
        files.close()
    assert lost_at is None


def test_a_segment_added_while_the_head_is_being_deleted_is_kept(tmp_path: Path) -> None:
    # the race above made certain: the deleter stops between reading the segment list and storing the list
    # without its head, while the main thread adds a segment.  With the list lock, create_next waits for
    # the deleter (which gives up waiting after 1 s); without it, the deleter's list (read before) lost it
    files = FileQueue(str(tmp_path / "segments"), 4096, writable=False)
    for _ in range(3):
        files.create_next()
    store_list = files._set
    deleter_storing = threading.Event()
    added = threading.Event()

    def paused_store(new: list[Any]) -> None:
        if threading.current_thread().name == "deleter":
            deleter_storing.set()
            added.wait(timeout=1.0)
        store_list(new)

    files._set = paused_store  # type: ignore[method-assign]
    deleter = threading.Thread(target=files.delete_first, args=(1,), name="deleter")
    deleter.start()
    try:
        assert deleter_storing.wait(timeout=10)
        newest = files.create_next()
        added.set()
        deleter.join(timeout=10)
        assert files.last() is newest
        assert len(files) == 3
    finally:
        added.set()
        files.close()


def test_flushing_a_segment_that_retention_just_deleted_is_not_an_error(tmp_path: Path) -> None:
    # the flush thread took the segment list just before a retention pass deleted its head: the flush of
    # the deleted segment must neither raise (which ended the flush thread) nor fence the store
    files = FileQueue(str(tmp_path / "segments"), 4096, writable=True)
    head = files.create_next()
    head.append(b"x" * 100)
    files.create_next().append(b"y" * 10)
    snapshot = list(files)
    assert files.delete_first(1) == [head]
    for segment in snapshot:
        segment.flush(0)
    assert files.flush(0)
    files.close()
