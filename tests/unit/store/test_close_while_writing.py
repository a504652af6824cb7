"""Closing a store while other threads put: close refuses the puts that race it, flushes everything it
acknowledged (answering sync-flush puts that wait for their sync), and shuts down cleanly (no abort marker,
so the next open recovers normally)."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import FlushDiskType, StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

SMALL = StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=200)


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _close_while_writing(path: Path, config: StoreConfig) -> None:
    store = MessageStore.open(path, config)
    acked: Counter[int] = Counter()
    statuses: Counter[PutMessageStatus] = Counter()
    failures: list[BaseException] = []

    def writer(queue_id: int) -> None:
        try:
            while True:
                result = store.put(Message.create("T", b"x" * 50, queue_id=queue_id))
                statuses[result.status] += 1
                if result.ok:
                    acked[queue_id] += 1
                elif result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(q,), daemon=True) for q in range(3)]
    for t in threads:
        t.start()
    while sum(acked.values()) < 300 and not failures:
        time.sleep(0.01)
    store.close()
    for t in threads:
        t.join(timeout=60)
    assert failures == []
    assert not any(t.is_alive() for t in threads)
    assert not (path / "abort").exists()
    # under SYNC_FLUSH, the puts close finds waiting for their sync are answered by a last sync, not with
    # FLUSH_DISK_TIMEOUT
    assert set(statuses) <= {PutMessageStatus.PUT_OK, PutMessageStatus.SERVICE_NOT_AVAILABLE}
    with MessageStore.open(path, config) as reopened:
        assert reopened.last_exit_ok
        assert [reopened.max_offset("T", queue_id) for queue_id in range(3)] == [acked[q] for q in range(3)]


@pytest.mark.parametrize("flush_disk_type", [FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH])
def test_close_while_threads_put_is_a_clean_shutdown_that_keeps_every_acknowledged_message(
        tmp_path: Path, fast_switching: None, flush_disk_type: str) -> None:
    config = SMALL.replace(flush_disk_type=flush_disk_type)
    for round_no in range(5):
        _close_while_writing(tmp_path / f"store{round_no}", config)
