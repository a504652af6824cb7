"""Producers of one process given the same ``instance_name`` share a client id, as Java clients with one
instanceName share an MQClientInstance.  The broker pushes a reply to the connection that last heartbeated
with the request's REPLY_TO_CLIENT id, which may belong to another of those producers (another
RequestProducer, on this event loop or another thread's, or a TransactionProducer): every request must
still get its reply.  An in-process name server + broker, a PushConsumer answering with send_reply;
deadlines only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Self, TypeVar

import pytest
from local_cluster import LocalCluster, run_within
from test_python_push_consumer import FAST, create_topic

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Producer,
    PushConsumer,
    RequestProducer,
    TransactionMessage,
    TransactionProducer,
)

T = TypeVar("T")

TEST_TIMEOUT_S = 60.0
WAIT_S = 15.0
TOPIC = "RpcShared"
INSTANCE = "shared-instance"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", broker_cluster_name="DefaultCluster") as c:
        yield c


def arun(fn: Callable[[], Awaitable[T]]) -> T:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


class Replier:
    """A PushConsumer of TOPIC answering each request with ``re: <body>``."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.producer = Producer(cluster.namesrv_addr, "rpc-replier")

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                await self.producer.send_reply(m, b"re: " + m.body)
            return ConsumeStatus.CONSUME_SUCCESS

        self.consumer = PushConsumer(cluster.namesrv_addr, "rpc-server", {TOPIC: "*"}, handle,
                                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST)

    async def __aenter__(self) -> Self:
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.shutdown()
        await self.producer.close()


async def _heartbeated_later(producer: RequestProducer | TransactionProducer) -> None:
    """Start *producer* in a later millisecond than what heartbeated before, so the broker, which picks the
    most recent heartbeat of a client id, picks its connection."""
    await asyncio.sleep(0.01)
    await producer.start()


def test_two_request_producers_with_one_instance_name_each_get_their_replies(cluster: LocalCluster) -> None:
    async def go() -> list[bytes]:
        await create_topic(cluster, TOPIC)
        async with Replier(cluster):
            first = RequestProducer(cluster.namesrv_addr, "rpc-client-a", instance_name=INSTANCE)
            second = RequestProducer(cluster.namesrv_addr, "rpc-client-b", instance_name=INSTANCE)
            assert first.client_id == second.client_id
            try:
                bodies = [(await first.request(TOPIC, b"a-0", timeout_s=WAIT_S)).body]
                await _heartbeated_later(second)
                bodies.append((await second.request(TOPIC, b"b-0", timeout_s=WAIT_S)).body)
                bodies.append((await first.request(TOPIC, b"a-1", timeout_s=WAIT_S)).body)
                return bodies
            finally:
                await first.close()
                await second.close()

    assert arun(go) == [b"re: a-0", b"re: b-0", b"re: a-1"]


def test_a_reply_pushed_to_a_producer_on_another_event_loop_reaches_its_request(cluster: LocalCluster) -> None:
    """The requester runs on a loop of its own thread; the producer the broker pushes to, on this one."""
    requester_ready = threading.Event()
    other_started = threading.Event()

    def requester_thread() -> bytes:
        async def go() -> bytes:
            async with RequestProducer(cluster.namesrv_addr, "rpc-client-a", instance_name=INSTANCE) as requester:
                requester_ready.set()
                await asyncio.get_running_loop().run_in_executor(None, other_started.wait, WAIT_S)
                return (await requester.request(TOPIC, b"from another loop", timeout_s=WAIT_S)).body

        return arun(go)

    async def go() -> bytes:
        await create_topic(cluster, TOPIC)
        loop = asyncio.get_running_loop()
        async with Replier(cluster):
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                requested = loop.run_in_executor(pool, requester_thread)
                await loop.run_in_executor(None, requester_ready.wait, WAIT_S)
                async with RequestProducer(cluster.namesrv_addr, "rpc-client-b", instance_name=INSTANCE) as other:
                    await _heartbeated_later(other)
                    other_started.set()
                    return await requested

    assert arun(go) == b"re: from another loop"


def test_a_reply_pushed_to_a_transaction_producer_of_the_same_instance_reaches_the_request(
        cluster: LocalCluster) -> None:
    def check(message: TransactionMessage) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE

    async def go() -> bytes:
        await create_topic(cluster, TOPIC)
        async with Replier(cluster):
            requester = RequestProducer(cluster.namesrv_addr, "rpc-client", instance_name=INSTANCE)
            transactional = TransactionProducer(cluster.namesrv_addr, "tx-group", check, instance_name=INSTANCE)
            try:
                await requester.start()
                await _heartbeated_later(transactional)
                return (await requester.request(TOPIC, b"ping", timeout_s=WAIT_S)).body
            finally:
                await requester.close()
                await transactional.close()

    assert arun(go) == b"re: ping"
