"""The clients' service state, as 4.9.3's ServiceState: ``service_state`` / ``is_running`` of producers and
consumers (CREATE_JUST, RUNNING, SHUTDOWN_ALREADY), and a start after a failed start refused with
"The ... service state not OK, maybe started once, START_FAILED" (not SHUTDOWN_ALREADY: 4.9.3 sets
START_FAILED before its checks and keeps it), for the asyncio clients and their blocking wrappers, against
a real name server and broker."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import FAST

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingPushConsumer,
    BrokerError,
    ClientError,
    ConsumeStatus,
    LitePullConsumer,
    MessageSelector,
    Producer,
    PushConsumer,
    ServiceState,
)
from rocketstore.remoting.transport import run

TOPIC = "Hunt20StateTopic"
#: a subscription the broker refuses (it runs without enablePropertyFilter): joining the group fails the start
SQL = MessageSelector.by_sql("a > 1")
NOT_OK = "service state not OK, maybe started once, START_FAILED"


def _ok(messages: object) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


async def _start_fails_for_good(client: Any, error: type[Exception], words: str, kind: str) -> None:
    """*client*'s first start fails with *error* (matching *words*) and leaves it START_FAILED, not running;
    its next start is refused as "The *kind* service state not OK, ... START_FAILED".  Blocking clients
    (whose ``start`` returns no awaitable) too."""
    for raised, match in ((error, words), (ClientError, f"The {kind} {NOT_OK}")):
        with pytest.raises(raised, match=match):
            started = client.start()
            if inspect.isawaitable(started):
                await started
        assert client.service_state is ServiceState.START_FAILED and not client.is_running


def test_producer_states_and_a_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)

    async def go() -> None:
        producer = Producer(cluster.namesrv_addr, "hunt20-state-pg")
        assert producer.service_state is ServiceState.CREATE_JUST and not producer.is_running
        await producer.start()
        assert producer.service_state is ServiceState.RUNNING and producer.is_running
        assert (await producer.send(TOPIC, b"x")).status == "SEND_OK"
        await producer.close()
        assert producer.service_state is ServiceState.SHUTDOWN_ALREADY and not producer.is_running
        with pytest.raises(ClientError, match="maybe started once, SHUTDOWN_ALREADY"):
            await producer.start()

        bad = Producer(cluster.namesrv_addr, "bad group!")
        await _start_fails_for_good(bad, ClientError, "illegal characters", "producer")
        await bad.close()
        assert bad.service_state is ServiceState.START_FAILED

    run(asyncio.wait_for(go(), 60))


def test_blocking_producer_start_after_a_failed_one(cluster: LocalCluster) -> None:
    producer = BlockingProducer(cluster.namesrv_addr, "bad group!")
    run(_start_fails_for_good(producer, ClientError, "illegal characters", "producer"))

    with BlockingProducer(cluster.namesrv_addr, "hunt20-bstate-pg") as good:
        assert good.is_running and good.service_state is ServiceState.RUNNING
    assert good.service_state is ServiceState.SHUTDOWN_ALREADY


def test_push_consumer_states_and_a_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)

    async def go() -> None:
        consumer = PushConsumer(cluster.namesrv_addr, "hunt20-state-cg", {TOPIC: "*"}, _ok, **FAST)
        assert consumer.service_state is ServiceState.CREATE_JUST and not consumer.is_running
        await consumer.start()
        assert consumer.service_state is ServiceState.RUNNING and consumer.is_running
        with pytest.raises(ClientError, match="maybe started once, RUNNING"):
            await consumer.start()
        await consumer.shutdown()
        assert consumer.service_state is ServiceState.SHUTDOWN_ALREADY and not consumer.is_running
        with pytest.raises(ClientError, match="maybe started once, SHUTDOWN_ALREADY"):
            await consumer.start()

        failing = PushConsumer(cluster.namesrv_addr, "hunt20-fail-cg", {TOPIC: SQL}, _ok, **FAST)
        await _start_fails_for_good(failing, BrokerError, "SQL92", "PushConsumer")
        bad = PushConsumer(cluster.namesrv_addr, "bad group!", {TOPIC: "*"}, _ok, **FAST)
        await _start_fails_for_good(bad, ClientError, "illegal characters", "PushConsumer")

    run(asyncio.wait_for(go(), 60))


def test_lite_pull_consumer_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)

    async def go() -> None:
        failing = LitePullConsumer(cluster.namesrv_addr, "hunt20-lite-fail-cg")
        failing.subscribe(TOPIC, SQL)
        await _start_fails_for_good(failing, BrokerError, "SQL92", "PullConsumer")

    run(asyncio.wait_for(go(), 60))


def test_blocking_consumers_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)
    push = BlockingPushConsumer(cluster.namesrv_addr, "hunt20-bfail-cg", {TOPIC: SQL}, _ok, **FAST)
    run(_start_fails_for_good(push, BrokerError, "SQL92", "PushConsumer"))
    lite = BlockingLitePullConsumer(cluster.namesrv_addr, "hunt20-blite-fail-cg")
    lite.subscribe(TOPIC, SQL)
    run(_start_fails_for_good(lite, BrokerError, "SQL92", "PullConsumer"))

    with BlockingPushConsumer(cluster.namesrv_addr, "hunt20-bok-cg", {TOPIC: "*"}, _ok, **FAST) as ok:
        assert ok.is_running and ok.service_state is ServiceState.RUNNING
    assert ok.service_state is ServiceState.SHUTDOWN_ALREADY and not ok.is_running
