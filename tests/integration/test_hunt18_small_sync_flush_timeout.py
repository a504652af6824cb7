"""syncFlushTimeout changed at run time (UPDATE_BROKER_CONFIG) acts from the next send, as 4.9.3 reads it at
every put, while a send already waiting for its flush keeps the deadline it had: with the disk stalled, a
send made after the timeout was shortened is answered FLUSH_DISK_TIMEOUT before one made earlier under the
long timeout, which is answered SEND_OK once the disk comes back.  A real SYNC_FLUSH broker and name
server; the stalled disk is test_sync_flush_broker's DiskGate (os.fdatasync held on the group-commit
thread).  Hang guards only, no timing assertions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_sync_flush_broker import DiskGate, gate  # noqa: F401 - gate: the fixture, reused

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient

#: the durable waits' expiry timer is the loop's (uvloop's call_at differs)
pytestmark = pytest.mark.both_loops


def test_a_shortened_sync_flush_timeout_acts_on_the_next_send_and_spares_the_waiting_one(
        tmp_path: Path, gate: DiskGate) -> None:  # noqa: F811
    overrides = {"flush_disk_type": "SYNC_FLUSH", "sync_flush_timeout_ms": 120_000}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        async def scenario() -> tuple[str, bool, str, str]:
            async with Producer(cluster.namesrv_addr, "sft-producer", timeout_s=180, retry_times=0) as producer, \
                    AdminClient(cluster.namesrv_addr) as admin:
                assert (await producer.send("SftTopic", b"warm")).status == "SEND_OK"
                gate.open.clear()
                early = asyncio.ensure_future(producer.send("SftTopic", b"early"))
                assert await asyncio.to_thread(gate.blocked.wait, 10)  # its sync is stuck on the disk
                assert await admin.update_broker_config({"syncFlushTimeout": "300"},
                                                        broker_addr=cluster.broker_addr) == [cluster.broker_addr]
                late = await asyncio.wait_for(producer.send("SftTopic", b"late"), 30)  # hang guard
                early_waiting = not early.done()
                store_timeout = str(cluster.broker.store.config.sync_flush_timeout_ms)
                gate.open.set()
                return late.status, early_waiting, (await asyncio.wait_for(early, 30)).status, store_timeout

        late, early_waiting, early, store_timeout = cluster.run(scenario(), 90)
        assert late == "FLUSH_DISK_TIMEOUT"
        assert early_waiting  # its 120-s deadline was kept
        assert early == "SEND_OK"
        assert store_timeout == "300"  # the store's own (embedded) waits read it per put too


def test_a_shortened_sync_flush_timeout_acts_when_no_send_waits(
        tmp_path: Path, gate: DiskGate) -> None:  # noqa: F811
    """The warm-up send was answered, but the expiry timer of its long deadline still runs when the timeout
    is shortened: the next send's short deadline must not wait for that timer."""
    overrides = {"flush_disk_type": "SYNC_FLUSH", "sync_flush_timeout_ms": 120_000}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        async def scenario() -> str:
            async with Producer(cluster.namesrv_addr, "sft-producer-2", timeout_s=180, retry_times=0) as producer, \
                    AdminClient(cluster.namesrv_addr) as admin:
                assert (await producer.send("SftTopic2", b"warm")).status == "SEND_OK"
                assert await admin.update_broker_config({"syncFlushTimeout": "300"},
                                                        broker_addr=cluster.broker_addr) == [cluster.broker_addr]
                gate.open.clear()
                late = await asyncio.wait_for(producer.send("SftTopic2", b"late"), 30)  # hang guard
                gate.open.set()
                return late.status

        assert cluster.run(scenario(), 90) == "FLUSH_DISK_TIMEOUT"
