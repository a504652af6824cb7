"""A failed sync is final (the PostgreSQL fsync lesson, RocketMQ issue 2706): no OK for anything not
durable, and the store refuses later writes instead of retrying and pretending.  Also the OS page cache
busy answer when the write lock is held too long."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig


def _config(**kw: object) -> StoreConfig:
    base: dict[str, object] = {"mapped_file_size_commit_log": 8192, "mapped_file_size_consume_queue": 20 * 16,
                               "max_hash_slot_num": 8, "max_index_num": 16, "flush_disk_type": "SYNC_FLUSH",
                               "sync_flush_timeout_ms": 2000}
    base.update(kw)
    return StoreConfig(**base)  # type: ignore[arg-type]


def test_failed_fdatasync_fences_the_store_and_acknowledges_nothing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = MessageStore.open(tmp_path, _config())
    try:
        assert store.put(Message.create("Fence", b"before")).ok
        real = os.fdatasync

        def failing(fd: int) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fdatasync", failing)
        result = store.put(Message.create("Fence", b"during"))
        assert result.status is PutMessageStatus.UNKNOWN_ERROR
        monkeypatch.setattr(os, "fdatasync", real)
        # the disk "works" again, but the store does not pretend: later writes are refused
        later = store.put(Message.create("Fence", b"after"))
        assert later.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.fenced is not None and "Input/output error" in store.fenced
    finally:
        store.close()
    # a fenced store leaves its abort marker: the next open recovers abnormally and keeps the first message
    assert (tmp_path / "abort").exists()
    with MessageStore.open(tmp_path, _config()) as again:
        assert again.recovery.abnormal
        assert again.message_at(0) is not None and again.message_at(0).body == b"before"


def test_put_answers_os_pagecache_busy_while_the_write_lock_is_held_too_long(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config(flush_disk_type="ASYNC_FLUSH", os_page_cache_busy_timeout_ms=50)) as store:
        commitlog = store._commitlog
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with commitlog.lock:
                commitlog.lock_begin_ms = int(time.time() * 1000)
                held.set()
                release.wait(5)
                commitlog.lock_begin_ms = 0

        t = threading.Thread(target=hold)
        t.start()
        try:
            assert held.wait(5)
            deadline = time.monotonic() + 5
            status = None
            while time.monotonic() < deadline:
                status = store.put(Message.create("Busy", b"x")).status
                if status is PutMessageStatus.OS_PAGECACHE_BUSY:
                    break
            assert status is PutMessageStatus.OS_PAGECACHE_BUSY
        finally:
            release.set()
            t.join()
        assert store.put(Message.create("Busy", b"y")).ok


def test_sync_put_answers_flush_disk_timeout_and_consumers_never_see_it_before_it_is_durable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # RocketMQ issue 8239: consumers saw messages that a crash then erased.  Here the disk is slow: a put
    # that waits for a sync times out, and until the sync lands no reader sees the message.  (The put that
    # found nobody syncing runs the stuck sync on its own thread: it answers when the disk does, with the
    # timeout status, since its sync took longer than sync_flush_timeout_ms.)
    with MessageStore.open(tmp_path, _config(sync_flush_timeout_ms=100)) as store:
        real = os.fdatasync
        gate = threading.Event()
        syncing = threading.Event()

        def slow(fd: int) -> None:
            syncing.set()
            gate.wait(10)
            real(fd)

        monkeypatch.setattr(os, "fdatasync", slow)
        led: list[PutMessageStatus] = []
        leader = threading.Thread(target=lambda: led.append(store.put(Message.create("Slow", b"first")).status))
        leader.start()
        assert syncing.wait(10)
        result = store.put(Message.create("Slow", b"pending"))
        assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        time.sleep(0.05)  # give the dispatcher every chance to (wrongly) publish them
        assert store.max_offset("Slow", 0) == 0
        assert store.get("Slow", 0, 0).status.name == "NO_MESSAGE_IN_QUEUE"
        gate.set()
        leader.join(10)
        assert led == [PutMessageStatus.FLUSH_DISK_TIMEOUT]
        assert store.wait_dispatched(10)
        assert [m.body for m in store.get("Slow", 0, 0).messages] == [b"first", b"pending"]
