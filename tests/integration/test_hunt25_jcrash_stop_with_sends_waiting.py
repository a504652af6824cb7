"""A SYNC_FLUSH broker stopped (SIGTERM, ``rocketstore broker``'s close) while sends wait for their sync
closes cleanly.  Found against the real 4.9.3 broker with Java producers sending through a graceful stop:
4.9.3 closes its remoting server first and its store's group commit then finishes the waiting requests
(answers nobody can read any more); ours answered the waiting sends only after the store was detached from
the broker, the send's answer read ``broker.store`` and the close died with "the broker is not started"
(exit status 1 and a traceback instead of a clean stop).  Here the waiting send is held by a group commit
that is never asked to sync."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer

#: durable waits live on the broker's loop (timers, thread hops): asyncio's and uvloop's
pytestmark = pytest.mark.both_loops


def test_close_with_a_send_waiting_for_its_sync_ends_cleanly(tmp_path: Path) -> None:
    overrides = {"flush_disk_type": "SYNC_FLUSH", "sync_flush_timeout_ms": 120_000}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        async def scenario() -> tuple[BaseException | None, list[Any], bool]:
            loop = asyncio.get_running_loop()
            errors: list[Any] = []
            previous = loop.get_exception_handler()
            loop.set_exception_handler(lambda _loop, context: errors.append(context.get("exception")))
            try:
                async with Producer(cluster.namesrv_addr, "stop-producer", timeout_s=60,
                                    retry_times=0) as producer:
                    assert (await producer.send("StopTopic", b"warm")).status == "SEND_OK"
                    broker = cluster.broker
                    broker.store.request_flush = lambda end_offset: None  # type: ignore[method-assign]
                    send = asyncio.ensure_future(producer.send("StopTopic", b"in flight"))
                    for _ in range(500):
                        if len(broker.durable_waits):
                            break
                        await asyncio.sleep(0.01)
                    assert len(broker.durable_waits) == 1
                    failure: BaseException | None = None
                    try:
                        await broker.close()
                    except Exception as exc:  # noqa: BLE001 - what the stop died of
                        failure = exc
                    await asyncio.gather(send, return_exceptions=True)
                    await asyncio.sleep(0.05)  # a thread hop the close scheduled runs now
                    return failure, errors, broker.closed
            finally:
                loop.set_exception_handler(previous)

        failure, errors, closed = cluster.run(scenario(), 60)
        assert failure is None, repr(failure)
        assert [e for e in errors if isinstance(e, RuntimeError)] == []
        assert closed
    # the stop was clean: no abort marker left for the next start
    assert not (tmp_path / "store" / "abort").exists()
