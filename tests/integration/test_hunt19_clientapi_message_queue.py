"""The producer's MessageQueue API, as 4.9.3's DefaultMQProducer has it: fetchPublishMessageQueues(topic)
answers the topic's write queues of every broker, and send(msg, mq) / sendOneway(msg, mq) / send(msgs, mq)
store the message in that one queue of that one broker (a queue id alone names a queue of each broker that
has it); a per-call timeout on a batch and an ordered send (send(msgs, timeout), send(msg, selector, arg,
timeout)); BlockingProducer's send_async (send(msg, SendCallback)) against two real brokers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from local_cluster import LocalCluster
from test_hunt14_pyclient_retries import TOPIC, TwoBrokers, two_brokers  # noqa: F401 - the fixture, reused
from test_python_push_consumer import FAST

from rocketstore.client import (
    BlockingProducer,
    ClientError,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageQueue,
    NoRouteError,
    OutgoingMessage,
    Producer,
    PushConsumer,
    RequestProducer,
    SendCallTimeoutError,
    SendResult,
)
from rocketstore.remoting.transport import run


def _read(two: TwoBrokers, broker_name: str, queue_id: int) -> list[bytes]:
    """The bodies in one queue of one broker (on the cluster's loop)."""
    broker = two.cluster.broker if broker_name == "broker-a" else two.broker_b
    return [m.body for m in broker.store.get(TOPIC, queue_id, 0, 64).messages]


def _bodies_on(two: TwoBrokers, broker_name: str, queue_id: int) -> list[bytes]:
    """The bodies in one queue of one broker once everything written is dispatched (from the test thread)."""
    broker = two.cluster.broker if broker_name == "broker-a" else two.broker_b
    assert broker.store.wait_dispatched(10)
    return two.cluster.call(lambda: _read(two, broker_name, queue_id))


@asynccontextmanager
async def _replying(cluster: LocalCluster, prefix: str,
                    seen: list[tuple[str, int]]) -> AsyncIterator[RequestProducer]:
    """A requester (group *prefix*-rpc-client) whose requests on TOPIC are answered ``re: <body>`` by a push
    consumer (*prefix*-rpc-server) through a producer (*prefix*-rpc-replier); *seen* gets the broker and
    queue each request came in on."""
    replier = Producer(cluster.namesrv_addr, f"{prefix}-rpc-replier")

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        for m in messages:
            seen.append((m.broker_name, m.queue_id))
            await replier.send_reply(m, b"re: " + m.body)
        return ConsumeStatus.CONSUME_SUCCESS

    async with replier, \
            PushConsumer(cluster.namesrv_addr, f"{prefix}-rpc-server", {TOPIC: "*"}, handle,
                         consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST), \
            RequestProducer(cluster.namesrv_addr, f"{prefix}-rpc-client") as requester:
        yield requester


def test_fetch_publish_queues_and_send_to_one_message_queue(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    b1 = MessageQueue(TOPIC, "broker-b", 1)
    a0 = MessageQueue(TOPIC, "broker-a", 0)
    b0 = MessageQueue(TOPIC, "broker-b", 0)

    async def go() -> tuple[list[MessageQueue], list[MessageQueue], MessageQueue]:
        async with Producer(cluster.namesrv_addr, "hunt19-mq-pg") as producer:
            queues = await producer.fetch_publish_message_queues(TOPIC)
            sent = [(await producer.send(TOPIC, f"s{i}".encode(), message_queue=b1)).message_queue
                    for i in range(6)]
            await producer.send_oneway(TOPIC, b"oneway-a0", message_queue=a0)
            two = [OutgoingMessage(b"batch-1"), OutgoingMessage(b"batch-2")]
            batch = await producer.send_batch(TOPIC, two, message_queue=b0)
            with pytest.raises(NoRouteError, match="do not know it"):
                await producer.fetch_publish_message_queues("Hunt19NoSuchTopic")
            with pytest.raises(ClientError, match="message's topic not equal mq's topic"):
                await producer.send(TOPIC, b"x", message_queue=MessageQueue("OtherTopic", "broker-a", 0))
            with pytest.raises(NoRouteError, match=r"broker\[broker-c\] is not a publish broker"):
                await producer.send(TOPIC, b"x", message_queue=MessageQueue(TOPIC, "broker-c", 0))
            with pytest.raises(NoRouteError, match="queueId 7 is not .* on broker broker-b"):
                await producer.send(TOPIC, b"x", message_queue=MessageQueue(TOPIC, "broker-b", 7))
            with pytest.raises(ValueError, match="not both"):
                await producer.send(TOPIC, b"x", queue_id=0, message_queue=b0)
            return queues, sent, batch.message_queue

    queues, sent, batch_queue = run(asyncio.wait_for(go(), 30))
    assert queues == [MessageQueue(TOPIC, name, i) for name in ("broker-a", "broker-b") for i in range(2)]
    assert sent == [b1] * 6  # every send on broker-b's queue 1, none on broker-a's queue 1
    assert batch_queue == b0
    assert _bodies_on(two_brokers, "broker-b", 1) == [f"s{i}".encode() for i in range(6)]
    assert _bodies_on(two_brokers, "broker-b", 0) == [b"batch-1", b"batch-2"]
    assert _bodies_on(two_brokers, "broker-a", 1) == []
    # the oneway send is not answered: wait until broker-a stored it
    cluster.wait_until(lambda: _read(two_brokers, "broker-a", 0) == [b"oneway-a0"], 15, "the oneway send")


def test_per_call_timeout_of_a_batch_and_an_ordered_send(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster

    async def go() -> None:
        # a fresh producer: its route look-up alone spends a timeout of a nanosecond, so nothing is sent
        async with Producer(cluster.namesrv_addr, "hunt19-timeout-pg", timeout_s=30.0) as producer:
            with pytest.raises(SendCallTimeoutError):
                await producer.send_batch(TOPIC, [OutgoingMessage(b"late")], timeout_s=1e-9)
        async with Producer(cluster.namesrv_addr, "hunt19-timeout-pg", timeout_s=30.0) as producer:
            with pytest.raises(SendCallTimeoutError, match="sendSelectImpl call timeout"):
                await producer.send_orderly(TOPIC, b"late", "key", timeout_s=1e-9)
            # the producer's own bound still applies to the next call
            assert (await producer.send_orderly(TOPIC, b"in time", "key")).status == "SEND_OK"

    run(asyncio.wait_for(go(), 30))
    stored = _bodies_on(two_brokers, "broker-a", 0) + _bodies_on(two_brokers, "broker-a", 1) + \
        _bodies_on(two_brokers, "broker-b", 0) + _bodies_on(two_brokers, "broker-b", 1)
    assert stored == [b"in time"]


def test_blocking_send_async_calls_back(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    a1 = MessageQueue(TOPIC, "broker-a", 1)
    done = threading.Event()
    called: list[SendResult] = []

    def on_done(future: object) -> None:
        called.append(future.result())  # type: ignore[attr-defined]
        done.set()

    with BlockingProducer(cluster.namesrv_addr, "hunt19-async-pg") as producer:
        assert producer.fetch_publish_message_queues(TOPIC)[1] == a1
        future = producer.send_async(TOPIC, b"async", message_queue=a1)
        future.add_done_callback(on_done)
        result = future.result(30)
        assert done.wait(30)
        assert producer.send(TOPIC, b"sync", message_queue=a1).message_queue == a1
        failed = producer.send_async(TOPIC, b"x", message_queue=MessageQueue(TOPIC, "broker-c", 0))
        with pytest.raises(NoRouteError):
            failed.result(30)
    assert called == [result]
    assert result.message_queue == a1 and result.status == "SEND_OK"
    assert _bodies_on(two_brokers, "broker-a", 1) == [b"async", b"sync"]


def test_a_request_to_a_message_queue_is_answered(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    b1 = MessageQueue(TOPIC, "broker-b", 1)
    seen: list[tuple[str, int]] = []

    async def go() -> list[bytes]:
        async with _replying(cluster, "hunt19", seen) as requester:
            return [(await requester.request(TOPIC, f"ping{i}".encode(), timeout_s=20,
                                             message_queue=b1)).body for i in range(3)]

    bodies = run(asyncio.wait_for(go(), 60))
    assert bodies == [b"re: ping0", b"re: ping1", b"re: ping2"]
    assert seen == [("broker-b", 1)] * 3
