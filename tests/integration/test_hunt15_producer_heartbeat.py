"""A plain Producer heartbeats as 4.9.3's DefaultMQProducer does through MQClientInstance: HEART_BEAT with its
group in producerDataSet to every master it knows (on start, once a send read a route, then every
heartbeatBrokerInterval), UNREGISTER_CLIENT on close.  So the broker's producer table lists it and
``rocketstore producer connections`` shows it.  Real name server and broker, real clients."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok_json, refused
from local_cluster import LocalCluster
from local_cluster import producer_ids_on_loop as ids_on_loop

from rocketstore.broker.clients import ClientChannel
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
    RequestProducer,
)
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand

TOPIC = "Hunt15HbTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def client_ids(cluster: LocalCluster, group: str) -> list[str]:
    return cluster.call(lambda: ids_on_loop(cluster, group))


async def until_registered(cluster: LocalCluster, group: str) -> list[ClientChannel]:
    """*group*'s producer table once it is not empty (on the cluster's loop, where the producer runs too)."""
    async with asyncio.timeout(10):
        while not cluster.broker.clients.producer_channels(group):
            await asyncio.sleep(0.01)
    return cluster.broker.clients.producer_channels(group)


def test_a_producer_that_sent_is_in_the_producer_table_and_leaves_it_on_close(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    producer = Producer(cluster.namesrv_addr, "hunt15-hb-plain")  # never started: the first send's route does
    cluster.run(producer.send(TOPIC, b"one"))
    try:
        cluster.wait_until(lambda: ids_on_loop(cluster, "hunt15-hb-plain") == [producer.client_id], 10,
                           "the producer's heartbeat")
        capsys.readouterr()
        info = ok_json(capsys, cluster, "producer", "connections", "hunt15-hb-plain", "-t", TOPIC)
        assert info["broker"] == cluster.broker_addr
        [client] = info["connectionSet"]
        assert client["clientId"] == producer.client_id
    finally:
        cluster.run(producer.close())
    assert client_ids(cluster, "hunt15-hb-plain") == []
    refused(capsys, cluster, "producer", "connections", "hunt15-hb-plain", "-t", TOPIC)


def test_start_heartbeats_before_any_send_and_the_interval_is_a_setting(cluster: LocalCluster) -> None:
    producer = Producer(cluster.namesrv_addr, "hunt15-hb-timed", heartbeat_interval_s=0.2)

    async def first() -> None:
        await producer.__aenter__()

    cluster.run(first())
    try:
        # start() has the masters of TBW102's route heartbeated at once, in the background
        cluster.wait_until(lambda: ids_on_loop(cluster, "hunt15-hb-timed") == [producer.client_id], 10,
                           "the heartbeat after start")
        [channel] = cluster.call(lambda: cluster.broker.clients.producer_channels("hunt15-hb-timed"))
        seen_ms = channel.last_update_ms
        cluster.wait_until(
            lambda: cluster.broker.clients.producer_channels("hunt15-hb-timed")[0].last_update_ms > seen_ms,
            10, "a periodic heartbeat")
    finally:
        cluster.run(producer.close())
    assert client_ids(cluster, "hunt15-hb-timed") == []


def test_close_unregisters_the_group_on_a_connection_that_stays_open(cluster: LocalCluster) -> None:
    """UNREGISTER_CLIENT itself (not the connection closing) takes the producer out of the table: the broker
    is told on the connection the heartbeats used, which the test keeps open by taking it from the pool
    before close() and watching the table between the unregister and the pool's close."""
    producer = Producer(cluster.namesrv_addr, "hunt15-hb-unreg")
    seen: list[list[str]] = []

    async def go() -> None:
        await producer.start()
        await until_registered(cluster, "hunt15-hb-unreg")
        real_close = producer.pool.close

        async def close_after_look() -> None:  # the pool's own close, after a look at the table
            seen.append(sorted(c.client_id for c in cluster.broker.clients.producer_channels("hunt15-hb-unreg")))
            await real_close()

        producer.pool.close = close_after_look  # type: ignore[method-assign]
        await producer.close()

    cluster.run(go())
    assert seen == [[]]


def test_a_producer_and_a_consumer_of_one_client_id_are_both_known_and_leave_separately(
        cluster: LocalCluster) -> None:
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(cluster.namesrv_addr, "hunt15-hb-cg", {TOPIC: "*"}, handle, instance_name="shared",
                            heartbeat_interval_s=0.3, rebalance_interval_s=0.3)
    producer = Producer(cluster.namesrv_addr, "hunt15-hb-pg", instance_name="shared")
    assert producer.client_id == consumer.client_id
    cluster.run(consumer.start())
    try:
        cluster.run(producer.start())
        cluster.wait_until(lambda: ids_on_loop(cluster, "hunt15-hb-pg") == [producer.client_id], 10,
                           "the producer's heartbeat")
        cluster.wait_until(lambda: cluster.broker.clients.consumer_ids("hunt15-hb-cg") == [consumer.client_id],
                           10, "the consumer's heartbeat")
        cluster.run(producer.close())
        assert client_ids(cluster, "hunt15-hb-pg") == []
        # the producer's unregister named only its producer group: the consumer of the same id stays
        cluster.run(asyncio.sleep(0.8))  # two consumer heartbeat periods
        assert cluster.call(lambda: cluster.broker.clients.consumer_ids("hunt15-hb-cg")) == [consumer.client_id]
    finally:
        cluster.run(consumer.shutdown())


def test_a_transaction_check_on_a_plain_producers_connection_is_dropped_and_other_requests_refused(
        cluster: LocalCluster) -> None:
    """The broker may pick a plain producer of a transactional group to check a transaction: as a
    DefaultMQProducer without a listener it answers nothing, and the connection keeps working."""
    producer = Producer(cluster.namesrv_addr, "hunt15-hb-served")

    async def go() -> None:
        await producer.start()
        [channel] = await until_registered(cluster, "hunt15-hb-served")
        connection = channel.connection
        assert connection is not None
        answer = await connection.request(  # type: ignore[attr-defined]
            RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "x", "clientId": "y"}),
            5)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        await connection.oneway(  # type: ignore[attr-defined]
            RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {}, b"", oneway=True), 5)
        result = await producer.send(TOPIC, b"still fine")
        assert result.status == "SEND_OK"
        await producer.close()

    cluster.run(go())


def test_the_heartbeat_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Producer("127.0.0.1:9876", "ok-group", heartbeat_interval_s=0)


def test_a_reply_pushed_to_a_plain_producer_of_the_requesters_client_id_still_arrives(cluster: LocalCluster) -> None:
    """Java's one MQClientInstance per client id serves every producer of it.  Here a plain Producer given the
    requester's instance_name heartbeats last, so the broker pushes the reply on its connection: it hands the
    reply over to the request waiting in this process."""
    topic = "Hunt15HbRpcTopic"
    cluster.create_topic(topic, 1)

    async def go() -> bytes:
        async with Producer(cluster.namesrv_addr, "hunt15-hb-replier") as replier:
            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                for m in messages:
                    await replier.send_reply(m, b"re: " + m.body)
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "hunt15-hb-rpc-server", {topic: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    heartbeat_interval_s=0.3, rebalance_interval_s=0.3), \
                    RequestProducer(cluster.namesrv_addr, "hunt15-hb-rpc-client", instance_name="rpc-shared") as requester:
                await requester.discover(topic)
                await asyncio.sleep(0.05)  # the plain producer's heartbeat is the later one
                async with Producer(cluster.namesrv_addr, "hunt15-hb-other", instance_name="rpc-shared") as other:
                    await until_registered(cluster, "hunt15-hb-other")
                    channel = cluster.broker.clients.producer_channel(requester.client_id)
                    assert channel is not None and channel.connection is cluster.broker.clients.producer_channels(
                        "hunt15-hb-other")[0].connection
                    assert other.client_id == requester.client_id
                    reply = await requester.request(topic, b"ping", timeout_s=15.0)
                    return reply.body

    assert cluster.run(go(), 60) == b"re: ping"
