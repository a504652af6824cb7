"""An online broadcasting group's rocketmq_consumer_offset: 0 on each broker of the topics it consumes.

A broadcasting group keeps its offsets in its clients, so the broker's consume stats (which list the
groups holding offsets there) say nothing of it, and the exporter served no rocketmq_consumer_offset for
it.  apache/rocketmq-exporter finds the group as consuming the topic (QUERY_TOPIC_CONSUME_BY_WHO lists
online subscribers) and asks that topic's consume stats of it (GET_CONSUME_STATS), which a 4.9.3 broker
answers with every queue at consumerOffset 0 when it holds none of the group's: it serves 0 per broker.
It serves no group diff nor store-time latency of a broadcasting group (those are clustering only), not
even of a topic the brokers hold offsets of it for (a group that consumed by clustering before), and
reads the group's pull rates as any group's.
"""

from __future__ import annotations

import time
from typing import Any

from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageModel,
    Producer,
    PullConsumer,
    PushConsumer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import collect, render
from rocketstore.remoting.transport import run

TOPIC = "Hunt26FixexpBroadcastTopic"
HELD = "Hunt26FixexpBroadcastHeld"  # a topic the broker holds an offset of the group for
GROUP = "hunt26-fixexp-broadcast"


def test_an_online_broadcasting_group_has_offset_0_on_each_broker(tmp_path: Any) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)
        cluster.create_topic(HELD)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "hunt26-fixexp-bc-producer") as producer:
                for i in range(4):
                    await producer.send(TOPIC, b"m", queue_id=i % 2)
                await producer.send(HELD, b"m", queue_id=0)
                await producer.send(HELD, b"m", queue_id=0)

        async def commit() -> None:  # the group's offset on the broker from a former clustering life
            async with PullConsumer(cluster.namesrv_addr, GROUP) as puller:
                mq = (await puller.queues(HELD))[0]
                await puller.commit_offset(mq, 1)

        run(send())
        cluster.wait_dispatched()
        run(commit())
        cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, HELD, 0) == 1, 20, "the commit")
        got: list[ConsumedMessage] = []

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            got.extend(messages)
            return ConsumeStatus.CONSUME_SUCCESS

        async def start() -> PushConsumer:
            consumer = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*", HELD: "*"}, handle,
                                    message_model=MessageModel.BROADCASTING,
                                    offset_dir=str(tmp_path / "offsets"),
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    heartbeat_interval_s=0.5, persist_interval_s=0.2)
            await consumer.start()
            return consumer

        consumer = cluster.run(start())
        try:
            cluster.wait_until(lambda: len(got) == 6, 20, "the broadcast consumer")
            cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

            async def scrape() -> str:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    return render(await collect(admin))

            text = run(scrape())
        finally:
            cluster.run(consumer.shutdown())
        assert not cluster.broker.offsets.query(GROUP, TOPIC, 0) > 0  # the broker holds none of its offsets
    values = {(s.name, frozenset(s.labels.items())): s.value
              for family in text_string_to_metric_families(text) for s in family.samples}

    def find(name: str, **labels: str) -> list[float]:
        return [v for (n, ls), v in values.items() if n == name and set(labels.items()) <= ls]

    assert find("rocketmq_consumer_offset", group=GROUP, topic=TOPIC) == [0]
    assert find("rocketmq_consumer_offset", group=GROUP, topic=TOPIC, broker="broker-a",
                cluster="DefaultCluster") == [0]
    assert find("rocketmq_consumer_offset", group=GROUP, topic=HELD) == [1]  # what the broker holds
    assert find("rocketmq_group_count", group=GROUP) == [1]
    assert len(find("rocketmq_consumer_tps", group=GROUP, topic=TOPIC, broker="broker-a")) == 1  # it pulled
    assert not find("rocketmq_group_diff", group=GROUP)
    assert not find("rocketmq_group_get_latency_by_storetime", group=GROUP)
    assert find("rocketstore_exporter_scrape_errors") == [0]
