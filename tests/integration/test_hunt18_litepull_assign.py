"""Lite pull consumer (4.9.3's DefaultLitePullConsumer) against a real name server + broker: ``pause`` between
``assign`` and ``start`` holds once started (4.9.3 keeps each assigned queue's paused flag from assign on),
and ``resume`` lets the queue pull; an assign-mode consumer heartbeats its brokers (online for
``consumerConnection``) and unregisters at close."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually
from test_lite_pull_consumer import FAST, poll_until
from test_python_push_consumer import arun, create_topic

from rocketstore.client import ClientError, ConsumedMessage, LitePullConsumer, MessageQueue, Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.admin_types import ConsumerConnectionInfo


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_a_queue_paused_between_assign_and_start_does_not_pull_until_resumed(cluster: LocalCluster) -> None:
    topic = "LitePauseEarly"
    paused, running = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        async with Producer(cluster.namesrv_addr, "lite-producer") as producer:
            for i in range(6):
                await producer.send(topic, f"m{i}".encode(), queue_id=i % 2)
        consumer = LitePullConsumer(cluster.namesrv_addr, "lite-pause-early-group", **FAST)
        consumer.assign([paused, running])
        consumer.pause([paused])
        async with consumer:
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 3, "the running queue's messages")
            # the paused queue pulled nothing: a while later still only the running queue's messages came
            got.extend(await consumer.poll(1.5))
            assert {m.queue_id for m in got} == {1}
            assert len(got) == 3
            consumer.resume([paused])
            rest: list[ConsumedMessage] = []
            await poll_until(consumer, rest, 3, "the resumed queue's messages")
            assert sorted(m.queue_offset for m in rest) == [0, 1, 2] and {m.queue_id for m in rest} == {0}

    arun(go)


def test_a_pause_of_a_queue_assigned_away_before_start_is_forgotten(cluster: LocalCluster) -> None:
    topic = "LitePauseReassigned"
    mq = MessageQueue(topic, "broker-a", 0)

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        async with Producer(cluster.namesrv_addr, "lite-producer") as producer:
            for i in range(3):
                await producer.send(topic, f"m{i}".encode(), queue_id=0)
        consumer = LitePullConsumer(cluster.namesrv_addr, "lite-pause-reassigned-group", **FAST)
        consumer.assign([mq])
        consumer.pause([mq])
        consumer.assign([MessageQueue(topic, "broker-a", 1)])
        consumer.assign([mq])  # assigned anew: a fresh queue state, not paused (as 4.9.3's)
        async with consumer:
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 3, "the queue's messages")

    arun(go)


def test_an_assign_mode_consumer_is_online_on_its_brokers_and_unregisters_at_close(cluster: LocalCluster) -> None:
    """4.9.3's client instance heartbeats every consumer it holds, an assign-mode lite consumer too (its
    consumer data without subscriptions): ``consumerConnection`` finds the group, until it shuts down."""
    topic, group = "LiteAssignOnline", "lite-assign-online-group"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        async with AdminClient(cluster.namesrv_addr) as admin:
            async with LitePullConsumer(cluster.namesrv_addr, group, **FAST) as consumer:
                consumer.assign([MessageQueue(topic, "broker-a", 0)])
                info = await eventually(lambda: _connection_info(admin, group), 10, "the group online")
                assert [c.client_id for c in info.connections] == [consumer.client_id]
                assert info.subscriptions == {}
                assert info.consume_type == "CONSUME_ACTIVELY"
            assert cluster.call(lambda: cluster.broker.clients.consumers.get(group)) is None

    arun(go)


async def _connection_info(admin: AdminClient, group: str) -> ConsumerConnectionInfo | None:
    try:
        return await admin.consumer_connection_info(group)
    except ClientError:
        return None
