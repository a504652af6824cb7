"""close() takes a write lock held with no append under way at two looks for one an interrupted put left held,
logs "left held ... closing without it" and closes anyway.  Two holders that are no append held it so
without marking themselves: a slave's replica write (which may make a new segment: seconds on a slow disk)
and a queue drop (clean_unused_topics / clean_expired_consume_queues, which dispatch and delete files under
it).  Closing under them closed the files they were writing.  They now mark themselves, and close waits."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig
from rocketstore.store import commitlog as commitlog_module

LIVENESS_S = 30.0  # guards against hanging, never a performance limit
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20)


class CountingLock:
    """A Lock that counts the timed waits that ended without it (close's looks at a held lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failed_waits = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if not got and timeout > 0:
            self.failed_waits += 1
        return got

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIVENESS_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def _queue_drop(store: MessageStore, inside: threading.Event, go_on: threading.Event) -> Callable[[], object]:
    class LiveTopics:
        def __contains__(self, topic: object) -> bool:  # asked under the write lock
            inside.set()
            go_on.wait(LIVENESS_S)
            return False

    return lambda: store.clean_unused_topics(LiveTopics())


def _replica_write(store: MessageStore, inside: threading.Event, go_on: threading.Event) -> Callable[[], object]:
    with MessageStore.open(store.config.store_path_root_dir + "-master", CONFIG) as master:
        assert master.put(Message.create("Replicated", b"r")).status is PutMessageStatus.PUT_OK
        data = master.read_replica(0, 1 << 20)
    files = store._commitlog.files
    make_segment = files.last_writable

    def slow_segment(start_hint: int = 0) -> object:  # a segment made on a slow disk
        inside.set()
        go_on.wait(LIVENESS_S)
        return make_segment(start_hint)

    files.last_writable = slow_segment  # type: ignore[method-assign]
    return lambda: store.append_replica(0, data)


@pytest.mark.parametrize("holder", [_queue_drop, _replica_write], ids=["queue drop", "replica write"])
def test_close_waits_for_a_holder_of_the_write_lock_that_is_no_append(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        holder: Callable[[MessageStore, threading.Event, threading.Event], Callable[[], object]]) -> None:
    monkeypatch.setattr(commitlog_module, "LEFT_HELD_CHECK_S", 0.01)
    store = MessageStore.open(str(tmp_path / "s"), CONFIG)
    if holder is _queue_drop:
        assert store.put(Message.create("Unused", b"x")).status is PutMessageStatus.PUT_OK
        store.flush()
    lock = store._commitlog.lock = CountingLock()  # type: ignore[assignment]
    inside, go_on = threading.Event(), threading.Event()
    work = holder(store, inside, go_on)
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    closer = threading.Thread(target=store.close, daemon=True)
    try:
        with caplog.at_level(logging.ERROR, logger="rocketstore.store.commitlog"):
            worker.start()
            assert inside.wait(LIVENESS_S)
            closer.start()
            # before: close gave up on the lock at its second look and closed the files under the holder
            _wait_until(lambda: lock.failed_waits >= 4 or not closer.is_alive(), "close looks at the lock")
            assert closer.is_alive(), "close went on while the write lock's holder was still at work"
            go_on.set()
            worker.join(LIVENESS_S)
            closer.join(LIVENESS_S)
        assert not worker.is_alive() and not closer.is_alive()
        assert "left held" not in caplog.text
        assert outcome, "the holder failed"
        if holder is _queue_drop:
            assert outcome == [[("Unused", 0)]]
        else:
            assert outcome[0] > 0  # type: ignore[operator]
    finally:
        go_on.set()
        worker.join(LIVENESS_S)
        closer.join(LIVENESS_S)
        store.close()
