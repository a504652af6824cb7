"""``service_state`` / ``is_running`` of the transactional producer (its blocking wrapper too) and the plain
pull consumer, as 4.9.3's ServiceState: CREATE_JUST, RUNNING, SHUTDOWN_ALREADY, and START_FAILED for good
after a refused start (TransactionMQProducer is a DefaultMQProducer; DefaultMQPullConsumerImpl.start sets
START_FAILED before its checks), against a real name server and broker."""

from __future__ import annotations

import asyncio

import pytest
from local_cluster import LocalCluster
from test_hunt20_clientapi_states import _start_fails_for_good

from rocketstore.client import (
    BlockingTransactionProducer,
    ClientError,
    LocalTransactionState,
    PullConsumer,
    ServiceState,
    TransactionProducer,
)
from rocketstore.remoting.transport import run

TOPIC = "Hunt20Route2StateTopic"


def _commit(message: object) -> LocalTransactionState:
    return LocalTransactionState.COMMIT_MESSAGE


def _execute(message: object, arg: object) -> LocalTransactionState:
    return LocalTransactionState.COMMIT_MESSAGE


def test_transaction_producer_states_and_a_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)

    async def go() -> None:
        producer = TransactionProducer(cluster.namesrv_addr, "hunt20-route2-state-tpg", _commit)
        assert producer.service_state is ServiceState.CREATE_JUST and not producer.is_running
        await producer.start()
        assert producer.service_state is ServiceState.RUNNING and producer.is_running
        assert (await producer.send_in_transaction(TOPIC, b"x", _execute)).status == "SEND_OK"
        await producer.close()
        assert producer.service_state is ServiceState.SHUTDOWN_ALREADY and not producer.is_running

        bad = TransactionProducer(cluster.namesrv_addr, "DEFAULT_PRODUCER", _commit)
        await _start_fails_for_good(bad, ClientError, "producerGroup can not equal DEFAULT_PRODUCER",
                                    "producer")
        # a send hears makeSureStateOK's words (no "maybe started once": that is a start's)
        with pytest.raises(ClientError, match="The producer service state not OK, START_FAILED"):
            await bad.send_in_transaction(TOPIC, b"x", _execute)
        await bad.close()
        assert bad.service_state is ServiceState.START_FAILED

    run(asyncio.wait_for(go(), 60))


def test_blocking_transaction_producer_states_and_a_start_after_a_failed_one(cluster: LocalCluster) -> None:
    bad = BlockingTransactionProducer(cluster.namesrv_addr, "DEFAULT_PRODUCER", _commit)
    run(_start_fails_for_good(bad, ClientError, "producerGroup can not equal DEFAULT_PRODUCER", "producer"))

    with BlockingTransactionProducer(cluster.namesrv_addr, "hunt20-route2-bstate-tpg", _commit) as good:
        assert good.is_running and good.service_state is ServiceState.RUNNING
    assert good.service_state is ServiceState.SHUTDOWN_ALREADY and not good.is_running


def test_pull_consumer_states_and_a_start_after_a_failed_one(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)

    async def go() -> None:
        consumer = PullConsumer(cluster.namesrv_addr, "hunt20-route2-state-cg")
        assert consumer.service_state is ServiceState.CREATE_JUST and not consumer.is_running
        async with consumer:
            assert consumer.service_state is ServiceState.RUNNING and consumer.is_running
            assert await consumer.queues(TOPIC)
            with pytest.raises(ClientError, match="The PullConsumer service state not OK, maybe started once, "
                                                  "RUNNING"):
                await consumer.start()
        assert consumer.service_state is ServiceState.SHUTDOWN_ALREADY and not consumer.is_running

        for group, words in (("DEFAULT_CONSUMER", "consumerGroup can not equal DEFAULT_CONSUMER"),
                             ("bad group!", "illegal characters")):
            bad = PullConsumer(cluster.namesrv_addr, group)
            await _start_fails_for_good(bad, ClientError, words, "PullConsumer")
            await bad.close()
            assert bad.service_state is ServiceState.START_FAILED

    run(asyncio.wait_for(go(), 60))
