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

from local_cluster import LocalCluster, eventually

from rocketstore.client.admin import AdminClient

TOPIC = "RoutedBeforeClose"
CREATED = "CreatedWhileClosing"


def _waiting(lock: asyncio.Lock) -> int:
    return len(lock._waiters or ())  # the requests queued behind the registration in progress


def test_topic_created_while_the_broker_closes_does_not_route_it_again(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b", "broker-b")
        cluster.create_topic_on(TOPIC, [broker_b.address])
        handlers = cluster.namesrv.handlers
        routes = cluster.namesrv.routes

        def routed_on_b() -> bool:
            if "broker-b" in routes.brokers or broker_b.address in routes.live:
                return True
            for topic in (TOPIC, CREATED):
                route = routes.route(topic)
                if route is not None and any(bd.broker_name == "broker-b" for bd in route.broker_datas):
                    return True
            return False

        async def create_while_closing() -> int:
            lock = handlers._registering
            await lock.acquire()  # the name server is busy with a (big) registration
            try:
                closing = asyncio.get_running_loop().create_task(broker_b.close())
                # broker-b's unregistration reached the name server and waits there; broker-b still serves
                await eventually(lambda: _waiting(lock) >= 1, 10.0, "broker-b's unregistration")
                assert not closing.done()
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.create_topic(CREATED, broker_addr=broker_b.address, read_queue_nums=2,
                                             write_queue_nums=2)
                await closing  # its unregistration timed out; its connection to the name server is closed
                queued = _waiting(lock)
            finally:
                lock.release()
            # everything that reached the name server has been applied
            await eventually(lambda: not lock.locked() and not _waiting(lock), 10.0,
                             "the name server to be idle")
            return queued

        queued = cluster.run(create_while_closing())
        assert queued == 1, "broker-b registered again after its unregistration"
        cluster.wait_until(lambda: not routed_on_b(), 10.0, "the closed broker-b to leave the route")
