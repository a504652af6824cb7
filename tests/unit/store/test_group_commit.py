"""Group commit (sync flush): no writer is acknowledged before a sync that covers its bytes returned, the
chain that wakes covered writers never strands one, a failed sync fails everyone, and the dispatcher is
handed the durable records."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store import mapped_file as mapped_file_module
from rocketstore.store.config import StoreConfig
from rocketstore.store.flush import GroupCommit
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

LIVENESS_S = 30.0  # a guard against hanging forever, never a performance limit


def _until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIVENESS_S
    while not predicate():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.001)


class FakeLog:
    """Stands in for the commitlog: writers append (move ``written``), the flush makes it all durable."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.written = 0
        self.synced = 0  # the end the last *completed* sync covered
        self.syncs = 0
        self.gate: threading.Event | None = None  # when set, a sync waits on it (a slow disk)
        self.fail: BaseException | None = None

    def append(self, size: int) -> int:
        with self.lock:
            self.written += size
            return self.written

    def flush(self) -> int:
        end = self.written
        if self.gate is not None:
            self.gate.wait(LIVENESS_S)
        if self.fail is not None:
            raise self.fail
        time.sleep(random.random() * 0.0005)
        self.synced = max(self.synced, end)
        self.syncs += 1
        return end


def _group_commit(log: FakeLog, **kw: object) -> tuple[GroupCommit, list[BaseException]]:
    failures: list[BaseException] = []
    gc = GroupCommit(log.flush, failures.append, **kw)  # type: ignore[arg-type]
    gc.start(0)
    return gc, failures


@pytest.mark.parametrize("writers", [1, 8, 64])
def test_no_writer_returns_before_a_sync_covering_its_end(writers: int) -> None:
    log = FakeLog()
    gc, failures = _group_commit(log)
    early: list[tuple[int, int]] = []

    def writer() -> None:
        for _ in range(40):
            end = log.append(random.randint(1, 300))
            acknowledged = gc.wait_durable(end, LIVENESS_S)
            if not acknowledged or log.synced < end:
                early.append((end, log.synced))

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(LIVENESS_S)
        assert not any(t.is_alive() for t in threads)
    finally:
        gc.stop()
    assert early == []
    assert not failures
    assert gc.durable_offset == log.written
    if writers > 1:
        assert log.syncs < writers * 40  # writers shared syncs


def test_a_sync_releases_exactly_the_writers_it_covers_whatever_their_queue_order() -> None:
    log = FakeLog()
    log.gate = threading.Event()
    gc, _ = _group_commit(log)
    results: dict[int, bool] = {}

    def wait(end: int) -> None:
        results[end] = gc.wait_durable(end, LIVENESS_S)

    try:
        log.written = 100
        first = threading.Thread(target=wait, args=(100,))
        first.start()
        _until(lambda: len(gc._waiters) == 1 and not gc._idle)
        time.sleep(0.01)  # the flusher is inside the (blocked) sync of end 100
        # queued after the sync started: one end past it, one at it, in that order
        late = threading.Thread(target=wait, args=(300,))
        late.start()
        _until(lambda: len(gc._waiters) >= 2)
        early = threading.Thread(target=wait, args=(50,))
        early.start()
        _until(lambda: len(gc._waiters) >= 3)
        log.written = 300
        log.gate.set()
        for t in (first, late, early):
            t.join(LIVENESS_S)
        assert results == {100: True, 50: True, 300: True}
    finally:
        log.gate.set()
        gc.stop()


def test_a_writer_that_times_out_inside_a_chain_passes_it_on() -> None:
    # The flusher took A and B out of the queue as one chain, but A's predecessor has not woken A yet
    # (simulated: nobody opens A's gate).  A times out, finds itself covered, and must wake B, which
    # otherwise would sleep until its own, much longer, timeout.
    gc = GroupCommit(lambda: 0, lambda exc: None)  # never started: the test plays the flusher
    results: dict[str, bool] = {}

    def wait(name: str, end: int, timeout_s: float) -> None:
        results[name] = gc.wait_durable(end, timeout_s)

    a = threading.Thread(target=wait, args=("a", 10, 0.2))
    a.start()
    _until(lambda: len(gc._waiters) >= 1)
    b = threading.Thread(target=wait, args=("b", 20, 3600.0), daemon=True)  # only A can wake B in time
    b.start()
    _until(lambda: len(gc._waiters) >= 2)
    with gc._lock:
        waiter_a, waiter_b = gc._waiters
        gc._waiters = []
        gc.durable_offset = 20
        waiter_a[2] = waiter_b[1]  # the chain: A opens B; nobody opens A
    a.join(LIVENESS_S)
    b.join(LIVENESS_S)
    assert not b.is_alive(), "B was not woken by A"
    assert results == {"a": True, "b": True}


def test_wait_times_out_while_the_disk_stalls_and_a_failed_sync_fails_everyone() -> None:
    log = FakeLog()
    log.gate = threading.Event()
    gc, failures = _group_commit(log)
    try:
        end = log.append(10)
        assert gc.wait_durable(end, 0.05) is False  # the sync is stuck: the writer is not held past its timeout
        waiting: list[bool] = []
        t = threading.Thread(target=lambda: waiting.append(gc.wait_durable(log.append(10), LIVENESS_S)))
        t.start()
        _until(lambda: bool(gc._waiters))
        log.fail = OSError(5, "Input/output error")
        log.gate.set()
        t.join(LIVENESS_S)
        assert waiting == [False]
        assert isinstance(gc.failed, OSError) and failures == [gc.failed]
        assert gc.wait_durable(log.append(10), LIVENESS_S) is False  # fenced: nothing later is acknowledged
        assert gc.durable_offset == 0
    finally:
        log.gate.set()
        gc.stop()


def test_the_dispatcher_is_handed_durable_records_when_the_syncs_stop() -> None:
    log = FakeLog()
    handed = threading.Event()
    seen: list[int] = []
    gc: GroupCommit

    def on_durable() -> None:
        seen.append(gc.durable_offset)
        handed.set()

    gc, _ = _group_commit(log, on_durable=on_durable)
    try:
        end = log.append(10)
        assert gc.wait_durable(end, LIVENESS_S)
        assert handed.wait(LIVENESS_S)
        assert seen[-1] == end
    finally:
        gc.stop()


def test_stop_releases_waiters_and_refuses_new_ones() -> None:
    log = FakeLog()
    log.gate = threading.Event()
    gc, _ = _group_commit(log)
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(gc.wait_durable(log.append(10), LIVENESS_S)))
    t.start()
    _until(lambda: bool(gc._waiters))
    stopper = threading.Thread(target=gc.stop)
    stopper.start()
    t.join(LIVENESS_S)
    assert got == [False]
    log.gate.set()
    stopper.join(LIVENESS_S)
    assert not stopper.is_alive()
    assert gc.wait_durable(log.append(10), LIVENESS_S) is False


def test_sync_flush_store_acknowledges_only_synced_bytes_under_concurrency(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                         max_hash_slot_num=16, max_index_num=64, flush_disk_type="SYNC_FLUSH")
    durable_end = [0]
    original_flush = mapped_file_module.MappedFile.flush

    def recording_flush(mf: mapped_file_module.MappedFile, least_pages: int = 0) -> int:
        flushed = original_flush(mf, least_pages)
        if mf.writable:
            durable_end[0] = max(durable_end[0], mf.start_offset + flushed)
        return flushed

    monkeypatch.setattr(mapped_file_module.MappedFile, "flush", recording_flush)
    early: list[tuple[int, int]] = []
    statuses: list[PutMessageStatus] = []
    with MessageStore.open(tmp_path / "store", config) as store:
        def writer(n: int) -> None:
            for i in range(30):
                r = store.put(Message.create("Sync", b"x" * (50 + 37 * i % 400), keys=f"k{n}-{i}",
                                             queue_id=n % 4))
                statuses.append(r.status)
                end = r.commit_log_offset + r.wrote_bytes
                if durable_end[0] < end:
                    early.append((end, durable_end[0]))

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(LIVENESS_S)
        assert store.wait_dispatched(LIVENESS_S)
        assert sum(store.max_offset("Sync", q) for q in range(4)) == 16 * 30
    assert set(statuses) == {PutMessageStatus.PUT_OK}
    assert early == []
