"""A MessageQueueSelector on the other send paths of 4.9.3's DefaultMQProducer: sendOneway(msg, selector,
arg) (send_oneway_orderly), send(msg, selector, arg, SendCallback) (BlockingProducer.send_orderly_async)
and request(msg, selector, arg, timeout) (request_orderly), against two real brokers: each message lands in
the queue the selector picked, and a selector that fails or picks nothing is refused in send_orderly's
words."""

from __future__ import annotations

import asyncio

import pytest
from test_hunt14_pyclient_retries import TOPIC, TwoBrokers, two_brokers  # noqa: F401 - the fixture, reused
from test_hunt19_clientapi_message_queue import _bodies_on, _read, _replying
from test_python_push_consumer import FAST

from rocketstore.client import (
    BlockingProducer,
    BlockingPushConsumer,
    BlockingRequestProducer,
    ClientError,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageQueue,
    Producer,
)
from rocketstore.remoting.transport import run


def _pick(broker_name: str, queue_id: int):  # noqa: ANN202 - a QueueSelector
    def select(queues: list[MessageQueue], key: object) -> MessageQueue:
        return next(q for q in queues if q.broker_name == broker_name and q.queue_id == queue_id)
    return select


def _fails(queues: list[MessageQueue], key: object) -> MessageQueue:
    raise KeyError(key)


def test_oneway_send_goes_to_the_selected_queue(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt20-oneway-sel-pg") as producer:
            for i in range(3):
                await producer.send_oneway_orderly(TOPIC, f"b1-{i}".encode(), i,
                                                   selector=_pick("broker-b", 1))
            with pytest.raises(ClientError, match="select message queue threw exception: KeyError"):
                await producer.send_oneway_orderly(TOPIC, b"never", "k", selector=_fails)
            with pytest.raises(ClientError, match="select message queue return null"):
                await producer.send_oneway_orderly(TOPIC, b"never", "k", selector=lambda queues, key: None)

    run(asyncio.wait_for(go(), 60))
    cluster.wait_until(lambda: len(_read(two_brokers, "broker-b", 1)) == 3, 30, "the oneway sends stored")
    assert _bodies_on(two_brokers, "broker-b", 1) == [b"b1-0", b"b1-1", b"b1-2"]
    assert _bodies_on(two_brokers, "broker-a", 0) + _bodies_on(two_brokers, "broker-a", 1) == []


def test_blocking_selected_sends_async_and_oneway(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    with BlockingProducer(cluster.namesrv_addr, "hunt20-blocking-sel-pg") as producer:
        future = producer.send_orderly_async(TOPIC, b"async", "key", selector=_pick("broker-a", 1))
        result = future.result(30)
        producer.send_oneway_orderly(TOPIC, b"oneway", "key", selector=_pick("broker-a", 1))
        failed = producer.send_orderly_async(TOPIC, b"never", "key", selector=_fails)
        with pytest.raises(ClientError, match="select message queue threw exception"):
            failed.result(30)
    assert result.status == "SEND_OK" and result.message_queue == MessageQueue(TOPIC, "broker-a", 1)
    cluster.wait_until(lambda: len(_read(two_brokers, "broker-a", 1)) == 2, 30, "both sends stored")
    assert _bodies_on(two_brokers, "broker-a", 1) == [b"async", b"oneway"]


def test_a_request_to_the_selected_queue_is_answered(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    seen: list[tuple[str, int]] = []

    async def go() -> list[bytes]:
        async with _replying(cluster, "hunt20", seen) as requester:
            with pytest.raises(ClientError, match="select message queue threw exception"):
                await requester.request_orderly(TOPIC, b"never", "k", timeout_s=20, selector=_fails)
            return [(await requester.request_orderly(TOPIC, f"ping{i}".encode(), i, timeout_s=20,
                                                     selector=_pick("broker-b", 0))).body for i in range(2)]

    assert run(asyncio.wait_for(go(), 60)) == [b"re: ping0", b"re: ping1"]
    assert seen == [("broker-b", 0)] * 2


def test_blocking_request_to_the_selected_queue(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster = two_brokers.cluster
    with BlockingProducer(cluster.namesrv_addr, "hunt20-brpc-replier") as replier:
        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                replier.send_reply(m, f"{m.broker_name}/{m.queue_id}".encode())
            return ConsumeStatus.CONSUME_SUCCESS

        with BlockingPushConsumer(cluster.namesrv_addr, "hunt20-brpc-server", {TOPIC: "*"}, handle,
                                  consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST), \
                BlockingRequestProducer(cluster.namesrv_addr, "hunt20-brpc-client") as requester:
            reply = requester.request_orderly(TOPIC, b"ping", "k", timeout_s=20,
                                              selector=_pick("broker-a", 0))
    assert reply.body == b"broker-a/0"
