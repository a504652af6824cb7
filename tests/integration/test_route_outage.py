"""A name server outage longer than a route's freshness (30 s): clients go on with the last route they
learnt, as a Java client keeps its route table, instead of failing every send and pull."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.errors import NoRouteError
from rocketstore.client.route import ROUTE_TTL_S, RouteCache

TOPIC = "OutageTopic"


def _age(routes: RouteCache) -> None:
    """Make every cached route older than ROUTE_TTL_S, as 30 s of waiting would."""
    for topic, (_, route) in list(routes._routes.items()):
        routes._routes[topic] = (time.monotonic() - ROUTE_TTL_S - 1, route)


def test_sends_and_pulls_go_on_with_the_last_route_while_the_name_servers_are_down(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def go() -> tuple[list[str], list[bytes]]:
            async with Producer(cluster.namesrv_addr, "outage-producer", timeout_s=2) as producer, \
                    PullConsumer(cluster.namesrv_addr, "outage-consumer", timeout_s=2) as consumer:
                assert (await producer.send(TOPIC, b"before")).status == "SEND_OK"
                [mq] = await consumer.queues(TOPIC)
                await consumer.pull(mq, 0, 1)
                await cluster.namesrv.server.close()  # the name server goes away; the broker stays
                _age(producer.routes)
                _age(consumer.routes)
                statuses = [(await producer.send(TOPIC, f"during {i}".encode())).status for i in range(3)]
                pulled = []
                for _ in range(200):  # the broker's dispatch writes the consume queue a moment after a put
                    pulled = (await consumer.pull(mq, 0, 32)).messages
                    if len(pulled) == 4:
                        break
                    await asyncio.sleep(0.05)
                with pytest.raises(NoRouteError):  # an admin's fresh look-up still says it cannot
                    await producer.routes.route(TOPIC, refresh=True)
                return statuses, [m.body for m in pulled]

        statuses, bodies = cluster.run(go())
        assert statuses == ["SEND_OK"] * 3
        assert bodies == [b"before", b"during 0", b"during 1", b"during 2"]
