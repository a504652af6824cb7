"""Which series the exporter lists, as apache/rocketmq-exporter lists them.

rocketmq-exporter serves a topic's or group's rate only when the broker's VIEW_BROKER_STATS_DATA has the stat
item (4.9.3 answers SYSTEM_ERROR "The stats <name> <key> not exist" for a key nothing was counted under,
and the exporter then adds no sample), and reads a group's rates (GROUP_GET_NUMS / _SIZE, SNDBCK_PUT_NUMS)
only of the topics it reads producer rates of, which leaves out %RETRY% and %DLQ% topics.  Serving 0 for
the rest put TBW102, the cluster's and the broker's own topics and the like into ``rocketmq_producer_tps``,
whose topic label the Grafana dashboard's topic list is made of.  Its offsets (``rocketmq_producer_offset``)
are served for every topic, as rocketmq-exporter does.  Its group-lag families carry their labels in the
order group, topic, countOfOnlineConsumers, msgModel."""

from __future__ import annotations

import time
from typing import Any

from local_cluster import LocalCluster, send_msg_back
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import collect, render
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.transport import run

TOPIC = "Hunt25ExporterTopic"
GIVER = "hunt25-exporter-giver"  # consumes, gives one message back, commits on its %RETRY% topic too
TAKER = "hunt25-exporter-taker"  # consumes only
RETRY = f"%RETRY%{GIVER}"


def test_only_series_with_a_stat_item_and_no_group_rates_of_retry_topics(tmp_path: Any) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def send() -> Any:
            async with Producer(cluster.namesrv_addr, "hunt25-exporter-producer") as producer:
                return await producer.send(TOPIC, b"m", queue_id=0)

        sent = run(send())
        cluster.wait_dispatched()

        async def consume() -> None:
            for group in (GIVER, TAKER):
                async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                    result = await consumer.pull(sent.message_queue, 0)
                    assert len(result.messages) == 1
                    await consumer.commit_offset(sent.message_queue, result.next_begin_offset)
            await send_msg_back(cluster.broker_addr, sent, GIVER, TOPIC, ["0"])  # creates the %RETRY% topic
            async with PullConsumer(cluster.namesrv_addr, GIVER) as consumer:
                await consumer.commit_offset(MessageQueue(RETRY, cluster.broker_name, 0), 0)

        run(consume())
        cluster.wait_until(lambda: cluster.broker.offsets.query(GIVER, TOPIC, 0) == 1
                           and cluster.broker.offsets.query(TAKER, TOPIC, 0) == 1
                           and cluster.broker.offsets.query(GIVER, RETRY, 0) == 0, 20, "the commits")
        cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

        async def scrape() -> str:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return render(await collect(admin))

        text = run(scrape())
    series: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append(sample.labels)

    def topics(name: str, group: str | None = None) -> set[str]:
        return {ls["topic"] for ls in series.get(name, []) if group is None or ls["group"] == group}

    # every topic's offsets, system topics too (TBW102 always exists)
    assert {TOPIC, "TBW102", cluster.broker_name} <= topics("rocketmq_producer_offset")
    # rates: only where something was put since the broker started
    for name in ("rocketmq_producer_tps", "rocketmq_producer_message_size"):
        listed = topics(name)
        assert TOPIC in listed
        assert not listed & {"TBW102", cluster.broker_name, "DefaultCluster", "SELF_TEST_TOPIC",
                             "OFFSET_MOVED_EVENT", "BenchmarkTest"}, (name, listed)
    # group rates: of the group's topics, not of its %RETRY% topic; offsets and latency of both
    for group in (GIVER, TAKER):
        assert topics("rocketmq_consumer_tps", group) == {TOPIC}
        assert topics("rocketmq_consumer_message_size", group) == {TOPIC}
    assert topics("rocketmq_consumer_offset", GIVER) == {TOPIC, RETRY}
    assert topics("rocketmq_group_get_latency_by_storetime", GIVER) == {TOPIC, RETRY}
    # send-backs: only the group that gave one back has the item
    assert topics("rocketmq_send_back_nums", GIVER) == {TOPIC}
    assert topics("rocketmq_send_back_nums", TAKER) == set()
    # the broker's own rates stay served (0 before the first put / get): the dashboard lists brokers by them
    assert len(series["rocketmq_broker_tps"]) == len(series["rocketmq_broker_qps"]) == 1
    # the lag families' label order, as rocketmq-exporter declares it
    lines = [line for line in text.splitlines() if line.startswith("rocketmq_group_diff{")
             and f'group="{TAKER}"' in line]
    assert lines and lines[0].startswith(
        f'rocketmq_group_diff{{group="{TAKER}",topic="{TOPIC}",countOfOnlineConsumers="0",msgModel="1"}} ')
