"""flush(), delete_expired_files() and clean_unused_topics() called on one thread while close() runs on
another passed their "is it open?" check, then waited for the queue files lock that close's own flush held.
Once close had returned (files closed, directory lock released) they went on: flush() wrote the checkpoint
file again (into a directory another process may have opened by then; deleted by its user, flush() raised
FileNotFoundError), and a queue drop answered that it had dropped a queue whose closed files it no longer
deleted (the queue was back at the next open).  They now find the store closed (StoreClosedError), and
close() closes the files under that lock, so none of them runs across it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import StoreClosedError

LIVENESS_S = 10.0  # guards against hanging, never a performance limit


class HeldBackLock:
    """The store's queue files lock, but the thread named *late* takes it only once *go* is set."""

    def __init__(self, lock: Any, late: str) -> None:
        self._lock = lock
        self._late = late
        self.waiting = threading.Event()
        self.go = threading.Event()

    def __enter__(self) -> bool:
        if threading.current_thread().name == self._late:
            self.waiting.set()
            assert self.go.wait(LIVENESS_S)
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


def _race_close(tmp_path: Path, call: Callable[[MessageStore], object],
                after_close: Callable[[str], None] = lambda path: None) -> tuple[list[object], str]:
    """Run *call* on a thread that reaches the queue files lock before close() and takes it after close()
    returned (and *after_close* ran, with the store's directory); what it returned or raised, and the
    store's directory."""
    path = str(tmp_path / "store")
    store = MessageStore.open(path, StoreConfig(mapped_file_size_commit_log=4096, file_reserved_time_h=0))
    for i in range(100):
        assert store.put(Message.create("Gone", b"x" * 100, keys=f"k{i}")).ok
    assert store.wait_dispatched()
    held = HeldBackLock(store._threads.queue_files_lock, "late-caller")
    store._threads.queue_files_lock = held  # type: ignore[assignment]
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call(store))
        except Exception as exc:  # noqa: BLE001 - what the caller gets is the point
            outcome.append(exc)

    caller = threading.Thread(target=run, name="late-caller", daemon=True)
    caller.start()
    assert held.waiting.wait(LIVENESS_S)
    store.close()
    after_close(path)
    held.go.set()
    caller.join(LIVENESS_S)
    assert not caller.is_alive()
    return outcome, path


def test_a_flush_that_waited_for_close_writes_nothing(tmp_path: Path) -> None:
    def delete_checkpoint(path: str) -> None:
        os.unlink(os.path.join(path, "checkpoint"))  # close wrote it: a write after close makes it again

    outcome, path = _race_close(tmp_path, lambda s: s.flush(), delete_checkpoint)
    assert len(outcome) == 1 and isinstance(outcome[0], StoreClosedError), outcome
    assert not os.path.exists(os.path.join(path, "checkpoint"))


def test_a_retention_pass_that_waited_for_close_is_refused(tmp_path: Path) -> None:
    later = int(time.time() * 1000) + 10**9
    outcome, path = _race_close(tmp_path, lambda s: s.delete_expired_files(force=True, now_ms=later))
    assert len(outcome) == 1 and isinstance(outcome[0], StoreClosedError), outcome


def test_a_queue_drop_that_waited_for_close_deletes_nothing(tmp_path: Path) -> None:
    outcome, path = _race_close(tmp_path, lambda s: s.clean_unused_topics(set()))
    assert len(outcome) == 1 and isinstance(outcome[0], StoreClosedError), outcome
    assert os.listdir(os.path.join(path, "consumequeue", "Gone", "0"))


def test_the_store_reopens_with_its_messages(tmp_path: Path) -> None:
    _race_close(tmp_path, lambda s: s.clean_unused_topics(set()))
    with MessageStore.open(str(tmp_path / "store"), StoreConfig(mapped_file_size_commit_log=4096)) as store:
        assert store.max_offset("Gone", 0) == 100


def test_a_flush_while_another_thread_closes_is_refused(tmp_path: Path) -> None:
    # a thread that flushes in a loop kept close waiting for the files lock (for 30 s and more in a random
    # schedule): from the moment a close begins, flush() and a retention pass are refused
    store = MessageStore.open(str(tmp_path / "store"), StoreConfig(mapped_file_size_commit_log=4096))
    assert store.put(Message.create("T", b"x")).ok
    held = HeldBackLock(store._threads.queue_files_lock, "closer")  # close stops at its own flush's lock
    store._threads.queue_files_lock = held  # type: ignore[assignment]
    closer = threading.Thread(target=store.close, name="closer", daemon=True)
    closer.start()
    try:
        assert held.waiting.wait(LIVENESS_S)
        with pytest.raises(StoreClosedError):
            store.flush()
        with pytest.raises(StoreClosedError):
            store.delete_expired_files(force=True)
        with pytest.raises(StoreClosedError):
            store.clean_unused_topics(set())
        assert store.get("T", 0, 0).message_count == 1  # reads go on until the files close
    finally:
        held.go.set()
        closer.join(LIVENESS_S)
    assert not closer.is_alive()
    with pytest.raises(StoreClosedError):
        store.flush()
