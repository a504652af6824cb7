"""A master that takes connections but never answers (a hung broker the name servers still list) costs the
exporter one timeout per collection, not one per topic and group it holds, and takes nothing from the
figures of the masters that answer.

Before, every topic's offsets were read with one call over all the topic's masters (a topic the hung
master shares lost the healthy master's figures too, after a timeout), every group's consume stats and
connections were asked of it again, and the group's online clients were looked up on it first (the
masters of the group's %RETRY% topic): the timeout made the group read as having no client online.  With
40 topics a collection took minutes, past any Prometheus scrape timeout, so nothing at all was scraped."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import collect, render
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.transport import run

TOPIC = "Hunt25HungTopic"
GROUP = "hunt25-hung-group"
HUNG = "a-hung"  # sorts before broker-a: asked first where masters are taken in name order


def test_a_hung_master_is_asked_once_and_the_others_are_served(tmp_path: Any) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "hunt25-hung-producer") as producer:
                for _ in range(2):
                    await producer.send(TOPIC, b"m", queue_id=0)

        run(send())
        cluster.wait_dispatched()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        async def start() -> PushConsumer:
            consumer = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    heartbeat_interval_s=0.5, persist_interval_s=0.2)
            await consumer.start()
            return consumer

        consumer = cluster.run(start())
        try:
            cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, TOPIC, 0) == 2, 20, "the consumer")

            held: list[asyncio.StreamWriter] = []

            async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                held.append(writer)  # reads nothing, answers nothing

            async def listen() -> asyncio.Server:
                return await asyncio.start_server(silent, "127.0.0.1", 0)

            server = cluster.run(listen())
            hung_addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
            topics = [TOPIC, f"%RETRY%{GROUP}"] + [f"Hunt25HungOnly{i}" for i in range(6)]
            body = RegisterBrokerBody({t: TopicConfig(t, 4, 4) for t in topics},
                                      DataVersion(int(time.time() * 1000), 1))
            cluster.call(lambda: cluster.namesrv.routes.register_broker(
                "DefaultCluster", hung_addr, HUNG, 0, "", body, int(time.time() * 1000)))

            async def scrape() -> str:
                async with AdminClient(cluster.namesrv_addr, timeout_s=0.5) as admin:
                    return render(await collect(admin))

            text = run(scrape())
            server.close()
            for writer in held:
                writer.close()
        finally:
            cluster.run(consumer.shutdown())
    values = {(s.name, frozenset(s.labels.items())): s.value
              for family in text_string_to_metric_families(text) for s in family.samples}

    def one(name: str, **labels: str) -> float:
        found = [v for (n, ls), v in values.items() if n == name and set(labels.items()) <= ls]
        assert len(found) == 1, (name, labels, sorted(k for k in values if k[0] == name))
        return found[0]

    assert one("rocketstore_exporter_scrape_errors") == 1  # the hung master, once
    assert one("rocketmq_producer_offset", broker="broker-a", topic=TOPIC) == 2
    assert one("rocketmq_group_count", group=GROUP, localaddr=consumer.client_id) == 1
    assert one("rocketmq_group_diff", group=GROUP, topic=TOPIC, countOfOnlineConsumers="1") == 0
    assert not [k for k in values if ("broker", HUNG) in k[1] or ("brokerHost", HUNG) in k[1]]
