"""A registration the name server applies after the broker's connection closed: 4.9.3's rule is that a
closed channel removes its broker at once (onChannelDestroy); a registration read before the close but
applied after it (it waited behind a big registration being decoded) must not bring the dead broker back
into the routes for the 120 s until it expires.

A real name server and two brokers on 127.0.0.1 port 0 (tests/integration/local_cluster.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from local_cluster import LocalCluster, lock_waiters, registrations_held


async def _poll(fn, what: str, timeout_s: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not fn():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)


def test_a_registration_applied_after_its_connection_closed_does_not_route_the_broker(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "a") as cluster:
        b = cluster.start_broker(tmp_path / "b", "broker-b")
        try:
            cluster.create_topic_on("Shared21", [cluster.broker_addr, b.address])
            routes = cluster.namesrv.routes
            assert b.registrar is not None
            registrar = b.registrar

            async def go() -> None:
                async with registrations_held(cluster) as lock:
                    sending = asyncio.get_running_loop().create_task(registrar.register_all())
                    await _poll(lambda: lock_waiters(lock) >= 1, "broker-b's registration to wait")
                    # the broker dies (no UNREGISTER): its connection closes while its registration waits
                    await registrar.close(unregister=False)
                    await asyncio.gather(sending, return_exceptions=True)
                    await _poll(lambda: "broker-b" not in routes.brokers, "broker-b dropped with its connection")
                await _poll(lambda: not lock.locked() and lock_waiters(lock) == 0, "the waiting registration")

            cluster.run(go())
            assert "broker-b" not in cluster.call(lambda: routes.brokers)
            assert b.address not in cluster.call(lambda: routes.live)
            route = cluster.call(lambda: routes.route("Shared21"))
            assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
        finally:
            cluster.run(b.close())
