"""close() of a store whose commitlog write lock a put left held (a KeyboardInterrupt that reached the putting
thread right as its lock.acquire returned, before the try that releases it: found interrupting a put loop at
random moments, about one run in three) hung for ever waiting for that lock.  It now logs the lock as left
held, once it sees no append under way at two looks, and closes."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig
from rocketstore.store import commitlog as commitlog_module

LIVENESS_S = 10.0  # a guard against hanging forever, never a performance limit


def test_close_does_not_wait_for_ever_for_a_lock_left_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(commitlog_module, "LEFT_HELD_CHECK_S", 0.05)
    store = MessageStore.open(tmp_path / "s", StoreConfig(mapped_file_size_commit_log=1 << 20,
                                                          os_page_cache_busy_timeout_ms=50))
    assert store.put(Message.create("T", b"x")).status is PutMessageStatus.PUT_OK
    store._commitlog.lock.acquire()  # what the interrupted put left behind
    assert store.put(Message.create("T", b"x")).status is PutMessageStatus.OS_PAGECACHE_BUSY
    closer = threading.Thread(target=store.close, daemon=True)
    with caplog.at_level(logging.ERROR, logger="rocketstore.store.commitlog"):
        closer.start()
        closer.join(LIVENESS_S)
    assert not closer.is_alive(), "close() waited for a lock nobody will release"
    assert "left held" in caplog.text
    assert store.put(Message.create("T", b"x")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    with MessageStore.open(tmp_path / "s", StoreConfig(mapped_file_size_commit_log=1 << 20)) as again:
        assert again.max_offset("T", 0) == 1


def test_close_still_waits_for_an_append_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commitlog_module, "LEFT_HELD_CHECK_S", 0.05)
    store = MessageStore.open(tmp_path / "s", StoreConfig(mapped_file_size_commit_log=1 << 20))
    commitlog = store._commitlog
    commitlog.lock.acquire()
    commitlog.lock_begin_ms = 1  # an append under way (a slow one: a new segment on a slow disk)
    closer = threading.Thread(target=store.close, daemon=True)
    closer.start()
    closer.join(0.5)
    assert closer.is_alive()  # it waits for the append, however long
    commitlog.lock_begin_ms = 0
    commitlog.lock.release()
    closer.join(LIVENESS_S)
    assert not closer.is_alive()
