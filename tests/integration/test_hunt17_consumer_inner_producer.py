"""A consumer's heartbeats against 4.9.3's: MQClientInstance registers its inner producer (group
CLIENT_INNER_PRODUCER) at start, so prepareHeartbeatData lists it in producerDataSet beside the consumer's
data, and shutdown unregisters the consumer group, then that producer group.  The broker's reply push
finds a client id's most recently heartbeated producer connection, which may then be a consumer's: a
consumer given a RequestProducer's instance name hands such a reply over.  In-process name server and
broker; deadlines only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from local_cluster import LocalCluster, eventually, run_within
from test_python_push_consumer import FAST, create_topic

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    Producer,
    PushConsumer,
    RequestProducer,
)
from rocketstore.client.producer import CLIENT_INNER_PRODUCER_GROUP

T = TypeVar("T")

WAIT_S = 15.0
TOPIC = "Hunt17InnerProducer"
INSTANCE = "hunt17-shared-instance"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", broker_cluster_name="DefaultCluster") as c:
        yield c


def arun(fn: Callable[[], Awaitable[T]]) -> T:
    return run_within(fn, 60.0)  # type: ignore[arg-type]


def inner_producer_ids(cluster: LocalCluster) -> list[str]:
    """The client ids under CLIENT_INNER_PRODUCER, read on the cluster's loop."""
    return cluster.call(lambda: sorted(
        c.client_id for c in cluster.broker.clients.producer_channels(CLIENT_INNER_PRODUCER_GROUP)))


async def _ok(messages: list[ConsumedMessage]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


@pytest.mark.parametrize("kind", ["push", "lite"])
def test_a_consumer_heartbeats_and_unregisters_the_inner_producer_group(
        cluster: LocalCluster, kind: str) -> None:
    async def go() -> None:
        await create_topic(cluster, TOPIC)
        if kind == "push":
            consumer: Any = PushConsumer(cluster.namesrv_addr, "hunt17-inner-push", {TOPIC: "*"}, _ok, **FAST)
        else:
            consumer = LitePullConsumer(cluster.namesrv_addr, "hunt17-inner-lite", heartbeat_interval_s=0.5,
                                        rebalance_interval_s=0.5)
            consumer.subscribe(TOPIC, "*")
        assert consumer.heartbeat_data().producer_groups == (CLIENT_INNER_PRODUCER_GROUP,)
        await consumer.start()
        try:
            await eventually(lambda: inner_producer_ids(cluster) == [consumer.client_id], WAIT_S,
                             "the heartbeat's producer")
            # the unregistration itself, not the connection closing (which forgets the client too)
            await consumer._unregister_all()
            assert inner_producer_ids(cluster) == []
            assert cluster.call(lambda: cluster.broker.clients.consumer_ids(consumer.group)) == []
        finally:
            await consumer.shutdown()

    arun(go)


def test_a_reply_pushed_to_a_consumer_of_the_same_instance_name_reaches_its_request(
        cluster: LocalCluster) -> None:
    async def go() -> list[bytes]:
        await create_topic(cluster, TOPIC)
        replier = Producer(cluster.namesrv_addr, "hunt17-inner-replier")

        async def answer(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                await replier.send_reply(m, b"re: " + m.body)
            return ConsumeStatus.CONSUME_SUCCESS

        server = PushConsumer(cluster.namesrv_addr, "hunt17-inner-server", {TOPIC: "*"}, answer,
                              consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST)
        requester = RequestProducer(cluster.namesrv_addr, "hunt17-inner-requester", instance_name=INSTANCE)
        await server.start()
        try:
            bodies = [(await requester.request(TOPIC, b"first", timeout_s=WAIT_S)).body]
            # a consumer of the same client id heartbeats after the requester: the broker now pushes there
            await asyncio.sleep(0.01)
            other = PushConsumer(cluster.namesrv_addr, "hunt17-inner-other", {TOPIC: "*"}, _ok,
                                 instance_name=INSTANCE, **FAST)
            assert other.client_id == requester.client_id
            await other.start()
            try:
                def pushes_to_the_consumer() -> bool:
                    clients = cluster.broker.clients
                    channel = clients.producer_channel(requester.client_id)
                    consumers = clients.consumers["hunt17-inner-other"].channels
                    return channel is not None and channel.connection in consumers

                assert cluster.call(pushes_to_the_consumer)
                bodies.append((await requester.request(TOPIC, b"second", timeout_s=WAIT_S)).body)
            finally:
                await other.shutdown()
            return bodies
        finally:
            await requester.close()
            await server.shutdown()
            await replier.close()

    assert arun(go) == [b"re: first", b"re: second"]
