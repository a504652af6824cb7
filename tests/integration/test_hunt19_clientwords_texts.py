"""The Python clients' refusals say what 4.9.3's Java clients say, then our detail after "Cause: ", so users
and their log searches find the same words (as the "No route info of this topic" / "No name server address"
texts of dd25ac5):

* a closed producer (plain, request, transactional): DefaultMQProducerImpl.makeSureStateOK's "The producer
  service state not OK, SHUTDOWN_ALREADY" and its start's "..., maybe started once, SHUTDOWN_ALREADY";
* send_orderly without route: sendSelectImpl's "No route info for this topic, <topic>";
* fetch_publish_message_queues of an unknown topic: MQAdminImpl's "Can not find Message Queue for this topic,
  <topic>";
* a consumer started twice: "The PushConsumer / PullConsumer service state not OK, maybe started once,
  RUNNING"; a lite pull consumer not running: "The consumer not running, please start it first.";
* the blocking wrappers shut down: the same words as their asyncio clients'.

A real name server and broker (auto-create off) on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingPushConsumer,
    ConsumerNotRunningError,
    ConsumeStatus,
    LitePullConsumer,
    LocalTransactionState,
    Producer,
    PushConsumer,
    RequestProducer,
    TransactionProducer,
)
from rocketstore.client.errors import ClientError, NoRouteError

TOPIC = "Hunt19WordsTopic"
UNKNOWN = "Hunt19WordsUnknown"
FAQ = "See http://rocketmq.apache.org/docs/faq/ for further details."
CLOSED = f"The producer service state not OK, SHUTDOWN_ALREADY {FAQ} Cause: "
STARTED_CLOSED = f"The producer service state not OK, maybe started once, SHUTDOWN_ALREADY {FAQ} Cause: "


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", auto_create_topic_enable=False) as c:
        c.create_topic(TOPIC, 2)
        yield c


async def _refusal(awaitable: Any, error: type[Exception] = ClientError) -> str:
    with pytest.raises(error) as caught:
        await awaitable
    return str(caught.value)


def test_a_closed_producer_says_service_state_not_ok(cluster: LocalCluster) -> None:
    async def go() -> list[str]:
        producer = Producer(cluster.namesrv_addr, "hunt19-words-closed")
        await producer.send(TOPIC, b"before")
        await producer.close()
        requester = RequestProducer(cluster.namesrv_addr, "hunt19-words-requester")
        await requester.close()
        tx = TransactionProducer(cluster.namesrv_addr, "hunt19-words-tx",
                                 lambda message: LocalTransactionState.COMMIT_MESSAGE)
        await tx.close()
        return [await _refusal(producer.send(TOPIC, b"x")),
                await _refusal(producer.send_orderly(TOPIC, b"x", 1)),
                await _refusal(producer.fetch_publish_message_queues(TOPIC)),
                await _refusal(requester.request(TOPIC, b"x")),
                await _refusal(tx.send_in_transaction(TOPIC, b"x", lambda m, a: LocalTransactionState.COMMIT_MESSAGE)),
                await _refusal(producer.start()),
                await _refusal(tx.start())]

    texts = cluster.run(go())
    assert texts[:4] == [CLOSED + "the producer is closed"] * 4, texts
    assert texts[4] == CLOSED + "the transactional producer is closed"
    assert texts[5] == STARTED_CLOSED + "the producer is closed"
    assert texts[6] == STARTED_CLOSED + "the transactional producer is closed"


def test_no_route_words_of_send_orderly_and_fetch_publish_message_queues(cluster: LocalCluster) -> None:
    async def go() -> tuple[NoRouteError, NoRouteError]:
        async with Producer(cluster.namesrv_addr, "hunt19-words-route", retry_times=0) as producer:
            with pytest.raises(NoRouteError) as orderly:
                await producer.send_orderly(UNKNOWN, b"x", 1)
            with pytest.raises(NoRouteError) as fetched:
                await producer.fetch_publish_message_queues(UNKNOWN)
            return orderly.value, fetched.value

    orderly, fetched = cluster.run(go())
    assert str(orderly).startswith(f"No route info for this topic, {UNKNOWN} Cause: the name servers do not "
                                   f"know it"), orderly
    assert orderly.topic == UNKNOWN and "No route info of this topic" not in str(orderly)
    assert str(fetched) == f"Can not find Message Queue for this topic, {UNKNOWN} Cause: the name servers do " \
                           f"not know it", fetched
    assert fetched.topic == UNKNOWN


def test_consumers_started_twice_or_not_running_say_4_9_3_words(cluster: LocalCluster) -> None:
    async def go() -> list[str]:
        texts = []
        push = PushConsumer(cluster.namesrv_addr, "hunt19-words-push", {TOPIC: "*"},
                            lambda messages: ConsumeStatus.CONSUME_SUCCESS)
        async with push:
            texts.append(await _refusal(push.start()))
        lite = LitePullConsumer(cluster.namesrv_addr, "hunt19-words-lite")
        lite.subscribe(TOPIC)
        texts.append(await _refusal(lite.poll(0), ConsumerNotRunningError))
        async with lite:
            texts.append(await _refusal(lite.start()))
        texts.append(await _refusal(lite.poll(0), ConsumerNotRunningError))
        texts.append(await _refusal(lite.start()))
        return texts

    texts = cluster.run(go())
    again = "service state not OK, maybe started once,"
    assert texts == [
        f"The PushConsumer {again} RUNNING {FAQ} Cause: the push consumer is already started",
        "The consumer not running, please start it first.",
        f"The PullConsumer {again} RUNNING {FAQ} Cause: the lite pull consumer is already started",
        "The consumer not running, please start it first. Cause: the lite pull consumer is closed",
        f"The PullConsumer {again} SHUTDOWN_ALREADY {FAQ} Cause: the lite pull consumer is shut down",
    ], texts


def test_blocking_clients_shut_down_say_4_9_3_words(cluster: LocalCluster) -> None:
    producer = BlockingProducer(cluster.namesrv_addr, "hunt19-words-blocking")
    producer.shutdown()
    with pytest.raises(ClientError) as caught:
        producer.send(TOPIC, b"x")
    assert str(caught.value) == CLOSED + "BlockingProducer is shut down"
    push = BlockingPushConsumer(cluster.namesrv_addr, "hunt19-words-blocking-push", {TOPIC: "*"},
                                lambda messages: ConsumeStatus.CONSUME_SUCCESS)
    push.shutdown()
    with pytest.raises(ConsumerNotRunningError) as caught:
        push.suspend()
    assert str(caught.value) == f"The consumer service state not OK, SHUTDOWN_ALREADY {FAQ} Cause: " \
                                "BlockingPushConsumer is shut down"
    lite = BlockingLitePullConsumer(cluster.namesrv_addr, "hunt19-words-blocking-lite")
    lite.close()
    with pytest.raises(ConsumerNotRunningError) as caught:
        lite.poll(0)
    assert str(caught.value) == "The consumer not running, please start it first. Cause: BlockingLitePullConsumer " \
                                "is shut down"
