"""A broker closed while one of its registrations is still being applied by the name server (a big topic
table is decoded off the loop, one registration at a time) must leave the route at once: the unregistration
that follows the registration on the wire must not be overtaken by it, or the name server keeps routing the
closed broker until its 120 s expiry.  A real name server and brokers in process; the name server's own
registration lock is held by the test to keep the registration in flight."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_cluster import LocalCluster, eventually, lock_waiters, registrations_held, routed_in

TOPIC = "ClosedWhileRegistering"


def test_broker_closed_during_a_registration_leaves_the_route(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b", "broker-b")
        cluster.create_topic_on(TOPIC, [broker_b.address])
        routes = cluster.namesrv.routes

        def routed_on_b() -> bool:
            return routed_in(cluster, "broker-b", TOPIC)

        async def hold_and_close() -> None:
            # the name server is busy with a (big) registration
            async with registrations_held(cluster) as lock:
                broker_b.registrar.request_registration()
                # broker-b's registration reached the name server and waits there
                await eventually(lambda: lock_waiters(lock) >= 1, 10.0, "broker-b's registration")
                closing = asyncio.get_running_loop().create_task(broker_b.close())
                for _ in range(400):  # its unregistration reached the name server (applied, or queued)
                    if not routed_on_b() or lock_waiters(lock) >= 2 or closing.done():
                        break
                    await asyncio.sleep(0.025)
            await closing

        cluster.run(hold_and_close())
        cluster.wait_until(lambda: not routed_on_b() and "broker-b" not in routes.brokers, 10.0,
                           "the closed broker-b to leave the route")
