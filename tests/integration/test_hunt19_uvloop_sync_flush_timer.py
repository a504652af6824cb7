"""A SYNC_FLUSH broker on uvloop (rocketstore[fast]: the broker's loop is uvloop's when it is installed)
whose syncFlushTimeout was shortened at run time answers every send that waits for a stalled disk
FLUSH_DISK_TIMEOUT.  uvloop's call_at/call_later turn a delay under half a millisecond into a plain Handle
(no ``when()``, unlike asyncio's TimerHandle): the expiry timer of a send whose deadline is now must not be
asked for its time by the next send.  A real broker and name server; the stalled disk is
test_sync_flush_broker's DiskGate.  Runs on both loops (``both_loops``; the suite's own loop is asyncio's,
tests/conftest.py); the uvloop run is skipped where uvloop is not installed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_sync_flush_broker import DiskGate, gate  # noqa: F401 - gate: the fixture, reused

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import EVENT_LOOP_ENV, new_event_loop


def test_the_broker_runs_on_uvloop_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    uvloop = pytest.importorskip("uvloop")
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)  # as a user runs it: no choice made
    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


@pytest.mark.both_loops
def test_sends_after_a_shortened_sync_flush_timeout_all_time_out_on_uvloop(
        tmp_path: Path, gate: DiskGate, event_loop_kind: str) -> None:  # noqa: F811
    overrides = {"flush_disk_type": "SYNC_FLUSH", "sync_flush_timeout_ms": 120_000}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        assert (type(cluster.loop).__module__.split(".")[0] == "uvloop") == (event_loop_kind == "uvloop")

        async def scenario() -> list[str]:
            async with Producer(cluster.namesrv_addr, "uvl-producer", timeout_s=30, retry_times=0) as producer, \
                    AdminClient(cluster.namesrv_addr) as admin:
                # answered, but the expiry timer of its 120-s deadline still runs
                assert (await producer.send("UvlTopic", b"warm")).status == "SEND_OK"
                assert await admin.update_broker_config({"syncFlushTimeout": "0"},
                                                        broker_addr=cluster.broker_addr) == [cluster.broker_addr]
                gate.open.clear()
                # written together, read by the broker in one go: the second send's put finds the timer the
                # first one's deadline (now) set
                sends = [asyncio.ensure_future(producer.send("UvlTopic", f"m{i}".encode())) for i in range(8)]
                results = await asyncio.wait_for(asyncio.gather(*sends, return_exceptions=True), 60)  # hang guard
                gate.open.set()
                return [r.status if not isinstance(r, BaseException) else repr(r) for r in results]

        assert cluster.run(scenario(), 90) == ["FLUSH_DISK_TIMEOUT"] * 8
