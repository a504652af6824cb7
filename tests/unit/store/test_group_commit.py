"""Group commit (sync flush): no writer is acknowledged before a sync that covers its bytes returned, a
writer that finds nobody syncing syncs on its own thread and hands the writers that came meanwhile to the
flusher, the gates of covered writers are opened oldest first and never strand one, a failed sync fails
everyone, and the dispatcher is handed the durable records (once per busy period while syncs follow each
other)."""

from __future__ import annotations

import random
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store import flush as flush_module
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
        self.entered = 0  # syncs started
        self.threads: list[str] = []  # the thread each completed sync ran on
        self.gate: threading.Event | None = None  # when set, a sync waits on it (a slow disk)
        self.fail: BaseException | None = None

    def append(self, size: int) -> int:
        with self.lock:
            self.written += size
            return self.written

    def flush(self) -> int:
        end = self.written
        self.entered += 1
        if self.gate is not None:
            self.gate.wait(LIVENESS_S)
        if self.fail is not None:
            raise self.fail
        time.sleep(random.random() * 0.0005)
        self.synced = max(self.synced, end)
        self.syncs += 1
        self.threads.append(threading.current_thread().name)
        return end


def _group_commit(log: FakeLog, **kw: object) -> tuple[GroupCommit, list[BaseException]]:
    failures: list[BaseException] = []
    gc = GroupCommit(log.flush, failures.append, **kw)  # type: ignore[arg-type]
    gc.start(0)
    return gc, failures


@pytest.mark.parametrize("leaders", [True, False])
@pytest.mark.parametrize("writers", [1, 8, 64])
def test_no_writer_returns_before_a_sync_covering_its_end(writers: int, leaders: bool) -> None:
    log = FakeLog()
    gc, failures = _group_commit(log, leaders=leaders)
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
        first = threading.Thread(target=wait, args=(100,), name="first")
        first.start()
        _until(lambda: log.entered == 1)  # the first writer leads: it is inside the (blocked) sync of end 100
        # queued after the sync started: one end past it, one at it, in that order
        late = threading.Thread(target=wait, args=(300,))
        late.start()
        _until(lambda: len(gc._waiters) == 1)
        early = threading.Thread(target=wait, args=(50,))
        early.start()
        _until(lambda: len(gc._waiters) == 2)
        log.written = 300
        log.gate.set()
        for t in (first, late, early):
            t.join(LIVENESS_S)
        assert results == {100: True, 50: True, 300: True}
        # the leader synced on its own thread; the writer its sync did not cover was the flusher's
        assert log.threads == ["first", "rocketstore-group-commit"]
    finally:
        log.gate.set()
        gc.stop()


def test_a_writer_about_to_block_opens_the_oldest_covered_gate() -> None:
    # The flusher moved A and B (covered by a sync) to the gates to open; a writer C that registers and
    # blocks must open A's gate (the oldest) on its way to sleep, and leave B's for the next one.
    gc = GroupCommit(lambda: 0, lambda exc: None)  # never started: the test plays the flusher
    gc._owner = flush_module._FLUSHER  # (syncing): the writers queue
    results: dict[str, bool] = {}

    def wait(name: str, end: int) -> None:
        results[name] = gc.wait_durable(end, 3600.0)

    a = threading.Thread(target=wait, args=("a", 10), daemon=True)
    b = threading.Thread(target=wait, args=("b", 20), daemon=True)
    a.start()
    _until(lambda: len(gc._waiters) == 1)
    b.start()
    _until(lambda: len(gc._waiters) == 2)
    with gc._lock:
        gc.durable_offset = 20
        gc._take_covered(20)
        assert gc._waiters == [] and len(gc._ready) == 2
    c = threading.Thread(target=wait, args=("c", 30), daemon=True)
    c.start()
    a.join(LIVENESS_S)
    assert not a.is_alive() and results["a"] is True
    assert len(gc._ready) == 1  # B's gate waits for the next thread that blocks
    with gc._lock:
        gc.durable_offset = 30
        gc._release_all()
    for t in (b, c):
        t.join(LIVENESS_S)
    assert results == {"a": True, "b": True, "c": True}


def test_a_covered_writer_whose_gate_nobody_opens_still_returns_durable() -> None:
    # A sync covered the writer, but every thread that could open its gate is gone (the flusher stuck in
    # the next sync, no other writer): the writer must find out by itself, long before its own timeout.
    gc = GroupCommit(lambda: 0, lambda exc: None)
    gc._owner = flush_module._FLUSHER  # (stuck in a sync): the writer queues
    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(gc.wait_durable(10, 3600.0)), daemon=True)
    t.start()
    _until(lambda: len(gc._waiters) == 1)
    with gc._lock:
        gc.durable_offset = 10
        gc._take_covered(10)  # in _ready, never opened
    t.join(LIVENESS_S)
    assert not t.is_alive(), "the covered writer slept on"
    assert results == [True]


@pytest.mark.parametrize("writers", [1, 8])
def test_while_syncs_follow_each_other_the_dispatcher_is_woken_once_per_busy_period(
        monkeypatch: pytest.MonkeyPatch, writers: int) -> None:
    # A fake clock that moves 1 ms per sync: with syncs back to back, on_durable must come about once per
    # HAND_OVER_BUSY_S (10 syncs), not once per sync, and the last durable end must still be handed over.
    clock = [1000.0]
    monkeypatch.setattr(flush_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    log = FakeLog()
    real_flush = log.flush

    def flush_1ms() -> int:
        clock[0] += 0.001
        return real_flush()

    log.flush = flush_1ms  # type: ignore[method-assign]
    handed: list[int] = []
    gc: GroupCommit

    def on_durable() -> None:
        handed.append(gc.durable_offset)

    failures: list[BaseException] = []
    gc = GroupCommit(log.flush, failures.append, on_durable=on_durable)
    gc.start(0)
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            assert gc.wait_durable(log.append(100), LIVENESS_S)

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    try:
        for t in threads:
            t.start()
        _until(lambda: log.syncs >= 200)
        stop.set()
        for t in threads:
            t.join(LIVENESS_S)
        end = log.written
        _until(lambda: bool(handed) and handed[-1] == end)
    finally:
        stop.set()
        gc.stop()
    assert not failures
    # ~syncs / 10 while busy; the idle path (1 ms without a request) may add a few, never one per sync
    assert len(handed) * 4 < log.syncs, (len(handed), log.syncs)


@pytest.mark.parametrize("leaders", [True, False])
def test_wait_times_out_while_the_disk_stalls_and_a_failed_sync_fails_everyone(leaders: bool) -> None:
    log = FakeLog()
    log.gate = threading.Event()
    gc, failures = _group_commit(log, leaders=leaders)
    try:
        leader: list[bool] = []
        if leaders:  # a writer leads the stuck sync: it cannot return before the disk does
            first = threading.Thread(target=lambda: leader.append(gc.wait_durable(log.append(10), LIVENESS_S)))
            first.start()
            _until(lambda: log.entered == 1)
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
        if leaders:
            first.join(LIVENESS_S)
            assert leader == [False]
        assert isinstance(gc.failed, OSError) and failures == [gc.failed]
        gc._thread.join(LIVENESS_S)
        assert not gc._thread.is_alive()  # the flusher ends with the failed sync, whoever ran it
        assert gc.wait_durable(log.append(10), LIVENESS_S) is False  # fenced: nothing later is acknowledged
        assert gc.durable_offset == 0
    finally:
        log.gate.set()
        gc.stop()


@pytest.mark.parametrize("leaders", [True, False])
def test_a_lone_writer_syncs_on_its_own_thread_unless_leaders_are_off(leaders: bool) -> None:
    log = FakeLog()
    gc, failures = _group_commit(log, leaders=leaders)
    try:
        for _ in range(50):
            assert gc.wait_durable(log.append(100), LIVENESS_S)
    finally:
        gc.stop()
    assert not failures
    me = threading.current_thread().name
    assert log.syncs == 50
    assert set(log.threads) == {me if leaders else "rocketstore-group-commit"}


def test_a_sync_requested_without_waiting_runs_on_the_flusher() -> None:
    log = FakeLog()
    gc, failures = _group_commit(log)
    try:
        end = log.append(100)
        gc.request(end)
        _until(lambda: gc.durable_offset == end)
        assert log.threads == ["rocketstore-group-commit"]
        gc.request(end)  # nothing new: no sync
        assert gc.wait_durable(end, LIVENESS_S)
        assert log.syncs == 1
    finally:
        gc.stop()
    assert not failures


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


def test_stop_releases_waiters_waits_for_a_leaders_sync_and_refuses_new_ones() -> None:
    # (the store closes its files once stop returns: no sync may still be running then)
    log = FakeLog()
    log.gate = threading.Event()
    gc, _ = _group_commit(log)
    led: list[bool] = []
    leader = threading.Thread(target=lambda: led.append(gc.wait_durable(log.append(10), LIVENESS_S)))
    leader.start()
    _until(lambda: log.entered == 1)
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(gc.wait_durable(log.append(10), LIVENESS_S)))
    t.start()
    _until(lambda: bool(gc._waiters))
    stopper = threading.Thread(target=gc.stop)
    stopper.start()
    t.join(LIVENESS_S)
    assert got == [False]
    assert stopper.is_alive()  # the leader is still inside its sync
    log.gate.set()
    stopper.join(LIVENESS_S)
    assert not stopper.is_alive()
    leader.join(LIVENESS_S)
    assert led == [True]  # its sync returned: its bytes are durable
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


def test_a_put_that_does_not_wait_asks_for_the_sync_and_listeners_learn_when_it_is_durable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """put(flush="ask") under SYNC_FLUSH: PUT_OK at once while the disk stalls; the durability
    listener is called on the syncing thread after the sync, when durable_offset covers the record."""
    config = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                         max_hash_slot_num=16, max_index_num=64, flush_disk_type="SYNC_FLUSH")
    stall = threading.Event()
    original_flush = mapped_file_module.MappedFile.flush

    def stalling_flush(mf: mapped_file_module.MappedFile, least_pages: int = 0) -> int:
        if threading.current_thread().name == "rocketstore-group-commit":
            stall.wait(LIVENESS_S)
        return original_flush(mf, least_pages)

    monkeypatch.setattr(mapped_file_module.MappedFile, "flush", stalling_flush)
    seen: list[tuple[str, int]] = []
    with MessageStore.open(tmp_path / "store", config) as store:
        def listener() -> None:
            seen.append((threading.current_thread().name, store.durable_offset))

        store.add_durable_listener(listener)
        results = [store.put(Message.create("NoWait", b"x" * 100), flush="ask") for _ in range(5)]
        assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 5
        end = results[-1].commit_log_offset + results[-1].wrote_bytes
        assert store.durable_offset < end and not seen  # asked for, not done: the disk stalls
        stall.set()
        _until(lambda: bool(seen) and seen[-1][1] >= end)
        assert {name for name, _ in seen} == {"rocketstore-group-commit"}
        assert store.durable_offset >= end and not store.flush_failed
        store.remove_durable_listener(listener)
        count = len(seen)
        assert store.put(Message.create("NoWait", b"y")).ok  # a waiting put: its own sync, nobody told
        assert len(seen) == count
    assert store.flush_failed  # closed: the group commit stopped


def test_puts_made_for_later_wait_for_one_requested_sync(tmp_path: Path) -> None:
    """flush="later": the puts neither wait nor ask; one request_flush makes them all durable in a sync."""
    config = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                         max_hash_slot_num=16, max_index_num=64, flush_disk_type="SYNC_FLUSH")
    with MessageStore.open(tmp_path / "store", config) as store:
        syncs: list[int] = []
        store.add_durable_listener(lambda: syncs.append(store.durable_offset))
        before = store.durable_offset
        results = [store.put(Message.create("Later", b"z" * 60), flush="later") for _ in range(8)]
        results.append(store.put_batch([Message.create("Later", b"b") for _ in range(3)], flush="later"))
        assert all(r.ok for r in results)
        end = results[-1].commit_log_offset + results[-1].wrote_bytes
        time.sleep(0.05)  # (nothing would sync them: no put asked)
        assert store.durable_offset == before and not syncs
        store.request_flush(end)
        _until(lambda: store.durable_offset >= end)
        assert len(syncs) == 1 and syncs[0] >= end
