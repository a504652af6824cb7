"""A consumer group through a name server outage, as 4.9.3's clients go through one: a route the name
servers cannot give (down, or restarted and not yet told of the brokers: TOPIC_NOT_EXIST) leaves the
client's tables as they are (MQClientInstance.updateTopicRouteInfoFromNameServer), and the rebalance goes on
with the queues it knows and the members the brokers know (RebalanceImpl.rebalanceByTopic).  So a member
that leaves meanwhile has its queues taken over by the others, not left unconsumed until the name servers
answer again.  Real name server, broker and consumers on 127.0.0.1; outcomes only."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

from local_cluster import LocalCluster, eventually, run_within
from test_python_push_consumer import FAST, create_topic, topic_queues

import pytest

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.namesrv import NameServer

TOPIC = "Hunt17ConnOutageTopic"
GROUP = "hunt17-conn-outage-group"


async def _restart_empty(cluster: LocalCluster) -> None:
    """The name server closed and started again on its port: it knows no broker until their next
    registration (30 s away), so it answers TOPIC_NOT_EXIST meanwhile."""
    port = cluster.namesrv.port
    await cluster.namesrv.close()
    cluster.namesrv = NameServer()
    await cluster.namesrv.start("127.0.0.1", port)


@pytest.mark.parametrize("outage", ["down", "restarted empty"])
def test_a_member_leaving_while_the_name_server_is_away_has_its_queues_taken_over(tmp_path: Path,
                                                                                   outage: str) -> None:
    got: dict[str, list[str]] = defaultdict(list)

    def handler_for(name: str):  # type: ignore[no-untyped-def]
        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                got[m.body.decode()].append(name)
            return ConsumeStatus.CONSUME_SUCCESS

        return handle

    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> None:
            await create_topic(cluster, TOPIC)
            a = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handler_for("a"), **FAST)
            b = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handler_for("b"), **FAST)
            stopped = []
            try:
                async with Producer(cluster.namesrv_addr, "hunt17-conn-outage-producer") as producer:
                    await a.start()
                    await b.start()
                    await eventually(lambda: a.assignment(TOPIC) and b.assignment(TOPIC)
                                     and a.assignment(TOPIC) | b.assignment(TOPIC) == topic_queues(TOPIC),
                                     20, "the queues split over both members")
                    warm = [await producer.send(TOPIC, f"warm-{i}".encode()) for i in range(8)]
                    await eventually(lambda: len(got) == len(warm), 20, "the warm-up messages")

                    # routes are cached; the name server gives none from here on
                    cluster.run(cluster.namesrv.close() if outage == "down" else _restart_empty(cluster))
                    # past a's route refresh interval: its next rebalance asks the (gone) name server
                    await asyncio.sleep(FAST["route_refresh_interval_s"] * 3)
                    await b.shutdown()  # unregisters: the broker tells a, whose rebalance must go on
                    stopped.append(b)
                    await eventually(lambda: a.assignment(TOPIC) == topic_queues(TOPIC), 20,
                                     "a to take every queue while the name server is down")
                    bodies = [f"during-{i}" for i in range(8)]
                    for body in bodies:
                        await producer.send(TOPIC, body.encode())
                    await eventually(lambda: all(body in got for body in bodies), 20,
                                     "every message sent during the outage")
                    assert {body: got[body] for body in bodies} == {body: ["a"] for body in bodies}
            finally:
                await a.shutdown()
                if not stopped:
                    await b.shutdown()

        run_within(go, 90)
