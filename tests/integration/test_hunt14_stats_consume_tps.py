"""consumeTps of GET_CONSUME_STATS (mqadmin consumerProgress' "Consume TPS") and GET_BROKER_CONSUME_STATS
against a real broker: 4.9.3 answers tpsGroupGetNums, the last-minute tps of the GROUP_GET_NUMS item
``topic@group``, so it is the figure VIEW_BROKER_STATS_DATA (and the exporter's rocketmq_consumer_tps) shows."""

from __future__ import annotations

import time

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.transport import run

TOPIC = "TpsTopic"
GROUP = "tps-group"
COUNT = 12


def test_consume_tps_is_the_group_get_nums_minute_tps(cluster: LocalCluster) -> None:
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "tps-producer") as producer:
            for i in range(COUNT):
                assert (await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)).status == "SEND_OK"

    run(send())
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == COUNT, 20, "every message stored")

    async def pull() -> None:
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            [mq] = [q for q in await consumer.queues(TOPIC) if q.queue_id == 0]
            offset = 0
            while offset < COUNT:
                offset = (await consumer.pull(mq, offset, 32)).next_begin_offset
            await consumer.commit_offset(mq, offset)

    run(pull())
    cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, TOPIC, 0) == COUNT, 20, "the committed offset")
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    async def figures() -> tuple[float, float, float, float]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            before = (await admin.view_stats(cluster.broker_addr, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")).minute.tps
            progress = await admin.consume_progress(GROUP, TOPIC)
            in_broker = await admin.broker_consume_stats(cluster.broker_addr)
            after = (await admin.view_stats(cluster.broker_addr, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")).minute.tps
            [listed] = in_broker.groups[GROUP]
            return before, progress.consume_tps, listed.consume_tps, after

    for _ in range(3):  # the broker's own 10 s snapshot may fall between the calls: then ask again
        before, consume_tps, listed_tps, after = run(figures())
        if before == after:
            break
    assert before == after > 0
    assert consume_tps == pytest.approx(before) and listed_tps == pytest.approx(before)


def test_pull_latency_is_kept_per_queue_topic_and_group(cluster: LocalCluster) -> None:
    """GROUP_GET_LATENCY: 4.9.3 (enableDetailStat, on by default) keys it ``queueId@topic@group``; deleting
    the topic or the group forgets it."""
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "latency-producer") as producer:
            for queue_id in (0, 1):
                assert (await producer.send(TOPIC, b"m", queue_id=queue_id)).status == "SEND_OK"

    run(send())
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 1) == 1, 20, "the message of queue 1")

    async def pull() -> None:
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            for mq in await consumer.queues(TOPIC):
                if mq.queue_id in (0, 1):
                    assert len((await consumer.pull(mq, 0, 32)).messages) == 1

    run(pull())
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    async def view(key: str) -> int:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return (await admin.view_stats(cluster.broker_addr, "GROUP_GET_LATENCY", key)).minute.sum

    assert run(view(f"0@{TOPIC}@{GROUP}")) >= 0 and run(view(f"1@{TOPIC}@{GROUP}")) >= 0
    with pytest.raises(BrokerError, match=f"The stats <GROUP_GET_LATENCY> <{TOPIC}@{GROUP}> not exist"):
        run(view(f"{TOPIC}@{GROUP}"))
    cluster.call(lambda: cluster.broker.stats.topic_deleted(TOPIC))
    for queue_id in (0, 1):
        with pytest.raises(BrokerError, match="not exist"):
            run(view(f"{queue_id}@{TOPIC}@{GROUP}"))
