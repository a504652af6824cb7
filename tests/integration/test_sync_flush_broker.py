"""A SYNC_FLUSH broker answers a send only once its record is on disk, and answers many sends in flight
with one sync per group (its loop waits on futures, no thread per send): a stalled disk holds every
answer back, a stall longer than syncFlushTimeout is answered FLUSH_DISK_TIMEOUT, a failed sync is an
error for everyone waiting, and a message that says WAIT=false is answered without waiting."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import ClientError, Producer, SendResult
from rocketstore.errors import RemotingError

#: durable waits live on the broker's loop (timers, thread hops): asyncio's and uvloop's
pytestmark = pytest.mark.both_loops

GROUP_COMMIT_THREAD = "rocketstore-group-commit"


class DiskGate:
    """os.fdatasync that blocks on the group-commit thread while the gate is shut (a stalled disk), and
    counts that thread's syncs."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.syncs = 0
        self.blocked = threading.Event()  # a sync is waiting at the shut gate
        self.error: OSError | None = None
        self._real = os.fdatasync

    def __call__(self, fd: int) -> None:
        if threading.current_thread().name == GROUP_COMMIT_THREAD:
            if not self.open.is_set():
                self.blocked.set()
                self.open.wait(30)
            if self.error is not None:
                raise self.error
            self.syncs += 1
        self._real(fd)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[DiskGate]:
    g = DiskGate()
    monkeypatch.setattr(os, "fdatasync", g)
    yield g
    g.open.set()


def _cluster(tmp_path: Path, **store: object) -> LocalCluster:
    return LocalCluster(tmp_path / "store", store_overrides={"flush_disk_type": "SYNC_FLUSH", **store})


async def _send_all(producer: Producer, topic: str, n: int) -> list[asyncio.Task[SendResult]]:
    return [asyncio.ensure_future(producer.send(topic, f"m{i}".encode(), keys=f"k{i}")) for i in range(n)]


def test_sends_in_flight_are_answered_only_after_the_sync_and_share_it(tmp_path: Path, gate: DiskGate) -> None:
    with _cluster(tmp_path) as cluster:
        async def scenario() -> list[SendResult]:
            async with Producer(cluster.namesrv_addr, "sync-producer", timeout_s=30) as producer:
                warm = await producer.send("SyncTopic", b"warm")  # route + topic, one sync
                assert warm.status == "SEND_OK"
                syncs_before = gate.syncs
                gate.open.clear()
                tasks = await _send_all(producer, "SyncTopic", 48)
                assert await asyncio.to_thread(gate.blocked.wait, 10), "no sync was started"
                done, _ = await asyncio.wait(tasks, timeout=0.5)
                assert not done, "a send was answered while its record was not on disk"
                gate.open.set()
                results = await asyncio.gather(*tasks)
                # 48 sends that waited together: a handful of syncs, not one each
                assert gate.syncs - syncs_before < 10
                return results

        results = cluster.run(scenario(), 60)
        assert [r.status for r in results] == ["SEND_OK"] * 48
        assert cluster.call(lambda: cluster.broker.put_count) == 49
        durable = cluster.call(lambda: cluster.broker.store.durable_offset)
        assert durable == cluster.call(lambda: cluster.broker.store.max_commit_log_offset)
    # every acknowledged message is there after a clean restart
    with _cluster(tmp_path) as again:
        found = again.call(lambda: again.broker.store.query("SyncTopic", "k47", 4, 0, 2**62))
        assert [m.body for m in found.messages] == [b"m47"]


def test_a_disk_stall_longer_than_sync_flush_timeout_is_answered_flush_disk_timeout(
        tmp_path: Path, gate: DiskGate) -> None:
    with _cluster(tmp_path, sync_flush_timeout_ms=300) as cluster:
        async def scenario() -> tuple[list[str], str]:
            async with Producer(cluster.namesrv_addr, "stall-producer", timeout_s=30) as producer:
                assert (await producer.send("StallTopic", b"warm")).status == "SEND_OK"
                gate.open.clear()
                stalled = [r.status for r in await asyncio.gather(*await _send_all(producer, "StallTopic", 5))]
                gate.open.set()
                after = (await producer.send("StallTopic", b"after")).status
                return stalled, after

        stalled, after = cluster.run(scenario(), 60)
        assert stalled == ["FLUSH_DISK_TIMEOUT"] * 5
        assert after == "SEND_OK"  # the disk came back: the store goes on


def test_a_failed_sync_is_an_error_for_every_send_waiting_on_it(tmp_path: Path, gate: DiskGate) -> None:
    with _cluster(tmp_path) as cluster:
        async def scenario() -> list[BaseException | SendResult]:
            async with Producer(cluster.namesrv_addr, "eio-producer", timeout_s=30, retry_times=0) as producer:
                assert (await producer.send("EioTopic", b"warm")).status == "SEND_OK"
                gate.error = OSError(errno.EIO, "Input/output error")
                gate.open.clear()
                tasks = await _send_all(producer, "EioTopic", 8)
                assert await asyncio.to_thread(gate.blocked.wait, 10)
                gate.open.set()
                return list(await asyncio.gather(*tasks, return_exceptions=True))

        outcomes = cluster.run(scenario(), 60)
        assert all(isinstance(o, (ClientError, RemotingError)) for o in outcomes), outcomes
        assert cluster.call(lambda: cluster.broker.store.fenced) is not None


def test_a_message_with_wait_false_is_answered_without_waiting_for_the_disk(tmp_path: Path,
                                                                          gate: DiskGate) -> None:
    with _cluster(tmp_path) as cluster:
        async def scenario() -> tuple[str, str]:
            async with Producer(cluster.namesrv_addr, "nowait-producer", timeout_s=30) as producer:
                assert (await producer.send("NoWaitTopic", b"warm")).status == "SEND_OK"
                gate.open.clear()
                waiting = asyncio.ensure_future(producer.send("NoWaitTopic", b"waits"))
                quick = await asyncio.wait_for(producer.send("NoWaitTopic", b"quick", properties={"WAIT": "false"}),
                                               20)
                assert not waiting.done(), waiting.result()
                gate.open.set()
                return quick.status, (await waiting).status

        assert cluster.run(scenario(), 60) == ("SEND_OK", "SEND_OK")


def test_a_busy_polling_broker_holds_still_while_its_sends_wait_for_a_sync(tmp_path: Path, gate: DiskGate) -> None:
    """busyPollMicros: the loop polls between requests, but not while sends wait for the syncing thread (which
    needs the GIL to answer them); it polls again once the answers are out."""
    from rocketstore.remoting import busy_poll

    with _cluster(tmp_path) as plain:  # the default: no poller on the loop
        assert plain.call(lambda: busy_poll.of(plain.loop)) is None
    with LocalCluster(tmp_path / "busy", busy_poll_micros=500,
                      store_overrides={"flush_disk_type": "SYNC_FLUSH"}) as cluster:
        poller = cluster.call(lambda: busy_poll.of(cluster.loop))
        assert poller is not None

        async def scenario() -> tuple[bool, list[str], int, int]:
            async with Producer(cluster.namesrv_addr, "busy-sync-producer", timeout_s=30) as producer:
                assert (await producer.send("BusySync", b"warm")).status == "SEND_OK"
                gate.open.clear()
                tasks = await _send_all(producer, "BusySync", 8)
                assert await asyncio.to_thread(gate.blocked.wait, 10), "no sync was started"
                for _ in range(3):
                    await asyncio.sleep(0)
                polling_while_waiting = poller.polling
                gate.open.set()
                statuses = [r.status for r in await asyncio.gather(*tasks)]
                spins = poller.spins
                assert (await producer.send("BusySync", b"after")).status == "SEND_OK"
                return polling_while_waiting, statuses, spins, poller.spins

        polling_while_waiting, statuses, spins_before, spins_after = cluster.run(scenario(), 60)
        assert not polling_while_waiting
        assert statuses == ["SEND_OK"] * 8
        assert spins_after > spins_before
    with LocalCluster(tmp_path / "busy", store_overrides={"flush_disk_type": "SYNC_FLUSH"}) as again:
        found = again.call(lambda: again.broker.store.query("BusySync", "k7", 4, 0, 2**62))
        assert [m.body for m in found.messages] == [b"m7"]
    assert busy_poll.of(cluster.loop) is None  # the broker turned it off as it closed
