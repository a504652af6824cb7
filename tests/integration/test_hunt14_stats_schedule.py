"""Statistics of delayed deliveries against a real broker: 4.9.3's ScheduleMessageService (with its default
enableScheduleMessageStats) counts each message it moves to its real topic as a put of that topic
(TOPIC_PUT_NUMS / TOPIC_PUT_SIZE, one event a delivery), in BROKER_PUT_NUMS, and as a get of group
SCHEDULE_CONSUMER from SCHEDULE_TOPIC_XXXX (GROUP_GET_NUMS / GROUP_GET_SIZE)."""

from __future__ import annotations

import time

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient, BrokerStatsData
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.transport import run

TOPIC = "DelayStatsTopic"
COUNT = 3


def view(cluster: LocalCluster, name: str, key: str) -> BrokerStatsData:
    async def go() -> BrokerStatsData:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.view_stats(cluster.broker_addr, name, key)

    return run(go())


def test_delayed_deliveries_count_as_puts_of_their_topic_and_gets_of_the_schedule_consumer(
        cluster: LocalCluster) -> None:
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "delay-stats-producer") as producer:
            for i in range(COUNT):
                result = await producer.send(TOPIC, f"later {i}".encode(), properties={"DELAY": "1"}, queue_id=0)
                assert result.status == "SEND_OK"

    run(send())
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == COUNT, 30, "the delayed deliveries")
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    scheduled = view(cluster, "TOPIC_PUT_NUMS", "SCHEDULE_TOPIC_XXXX")
    assert scheduled.minute.sum == COUNT  # the sends, stored under the schedule topic
    delivered = view(cluster, "TOPIC_PUT_NUMS", TOPIC)
    assert delivered.minute.sum == COUNT and delivered.minute.avgpt == pytest.approx(1.0)
    delivered_bytes = view(cluster, "TOPIC_PUT_SIZE", TOPIC).minute.sum
    assert delivered_bytes > 0
    assert view(cluster, "BROKER_PUT_NUMS", "DefaultCluster").minute.sum == 2 * COUNT
    got = view(cluster, "GROUP_GET_NUMS", "SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER")
    assert got.minute.sum == COUNT and got.minute.avgpt == pytest.approx(1.0)
    assert view(cluster, "GROUP_GET_SIZE", "SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER").minute.sum == delivered_bytes
    with pytest.raises(BrokerError, match="not exist"):
        view(cluster, "BROKER_GET_NUMS", "DefaultCluster")  # no pull was made: deliveries are not pulls
