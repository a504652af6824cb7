"""A broker that is closing still serves until it has unregistered from the name servers; a topic an admin
creates on it in that window must not be registered after the unregistration.  The name server applies
registrations one at a time (a big body is decoded off the loop); when it is still busy as the closing
broker's connection closes, a registration sent after the unregistration is applied after it, over the
closed connection, and the closed broker stays routed until the name server's 120 s expiry.

A real name server and brokers in process; the name server's own registration lock is held by the test to
keep it busy."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_cluster import LocalCluster, eventually, lock_waiters, registrations_held, routed_in

from rocketstore.client.admin import AdminClient

TOPIC = "RoutedBeforeClose"
CREATED = "CreatedWhileClosing"


def test_topic_created_while_the_broker_closes_does_not_route_it_again(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b", "broker-b")
        cluster.create_topic_on(TOPIC, [broker_b.address])
        routes = cluster.namesrv.routes

        def routed_on_b() -> bool:
            return ("broker-b" in routes.brokers or broker_b.address in routes.live
                    or routed_in(cluster, "broker-b", TOPIC, CREATED))

        async def create_while_closing() -> int:
            # the name server is busy with a (big) registration
            async with registrations_held(cluster) as lock:
                closing = asyncio.get_running_loop().create_task(broker_b.close())
                # broker-b's unregistration reached the name server and waits there; broker-b still serves
                await eventually(lambda: lock_waiters(lock) >= 1, 10.0, "broker-b's unregistration")
                assert not closing.done()
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.create_topic(CREATED, broker_addr=broker_b.address, read_queue_nums=2,
                                             write_queue_nums=2)
                await closing  # its unregistration timed out; its connection to the name server is closed
                queued = lock_waiters(lock)
            # everything that reached the name server has been applied
            await eventually(lambda: not lock.locked() and not lock_waiters(lock), 10.0,
                             "the name server to be idle")
            return queued

        queued = cluster.run(create_while_closing())
        assert queued == 1, "broker-b registered again after its unregistration"
        cluster.wait_until(lambda: not routed_on_b(), 10.0, "the closed broker-b to leave the route")
