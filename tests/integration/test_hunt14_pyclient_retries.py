"""A producer's retries across two brokers, as 4.9.3's DefaultMQProducerImpl.sendDefaultImpl retries: an
answer whose code is in retryResponseCodes (NO_PERMISSION among them) and a broker that went away are
retried on the other broker, from the route the producer holds even when the name server is gone."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.broker import Broker
from rocketstore.client import Producer
from rocketstore.remoting.transport import run

TOPIC = "Hunt14RetryTopic"


class TwoBrokers:
    def __init__(self, cluster: LocalCluster, broker_b: Broker) -> None:
        self.cluster = cluster
        self.broker_b = broker_b


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[TwoBrokers]:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b")
        try:
            cluster.create_topic_on(TOPIC, [cluster.broker_addr, broker_b.address], queues=2)
            yield TwoBrokers(cluster, broker_b)
        finally:
            cluster.run(broker_b.close())


def test_no_permission_from_one_broker_is_retried_on_the_other(two_brokers: TwoBrokers) -> None:
    cluster = two_brokers.cluster

    async def go() -> list[str]:
        async with Producer(cluster.namesrv_addr, "hunt14-retry-pg") as producer:
            await producer.send(TOPIC, b"warm-up")  # the route is cached from here on

            def wipe() -> None:
                # broker-a's write permission is wiped while the topic is an order topic there: it answers
                # NO_PERMISSION to sends, and the producer's cached route still says it is writeable
                cluster.broker.topics.update_order_flags({TOPIC: "broker-a:2;broker-b:2"})
                cluster.broker.config = dataclasses.replace(cluster.broker.config, broker_permission=4)

            cluster.call(wipe)
            results = [await producer.send(TOPIC, f"m{i}".encode()) for i in range(8)]
            return [r.message_queue.broker_name for r in results]

    brokers = run(asyncio.wait_for(go(), 30))
    assert brokers == ["broker-b"] * 8


def test_a_dead_broker_is_retried_on_the_other_while_the_name_server_is_gone(two_brokers: TwoBrokers) -> None:
    cluster = two_brokers.cluster

    async def go() -> list[str]:
        async with Producer(cluster.namesrv_addr, "hunt14-retry-pg", timeout_s=2.0) as producer:
            for i in range(4):  # the route is cached and both brokers' connections are open
                await producer.send(TOPIC, f"warm-up {i}".encode())
            cluster.run(cluster.namesrv.close())
            cluster.run(two_brokers.broker_b.close())
            results = [await producer.send(TOPIC, f"m{i}".encode()) for i in range(8)]
            return [r.message_queue.broker_name for r in results]

    brokers = run(asyncio.wait_for(go(), 60))
    assert brokers == ["broker-a"] * 8
