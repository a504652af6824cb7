"""Sends to a chosen queue id as 4.9.3's send(msg, mq) makes them (DefaultMQProducerImpl.send(Message,
MessageQueue, long) and sendOneway(Message, MessageQueue): one sendKernelImpl, the queue not checked against
the route): a queue id below readQueueNums but at or past writeQueueNums is sent, and the broker stores it in
that queue (msgCheck takes any id below max(write, read)); a failure is raised and never retried on another
broker; a plain send still goes to the write queues only and still retries."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored
from test_hunt14_pyclient_retries import TOPIC as RETRY_TOPIC
from test_hunt14_pyclient_retries import TwoBrokers, two_brokers  # noqa: F401 - the fixture, reused
from test_hunt16_producer_queue_id import TOPIC, cluster  # noqa: F401 - cluster: read 4, write 2 queues

from rocketstore.client import NoRouteError, OutgoingMessage, Producer
from rocketstore.client.errors import NoPermissionError
from rocketstore.remoting.transport import run


def test_queue_ids_past_the_write_queues_but_read_are_sent_to(cluster: LocalCluster) -> None:  # noqa: F811
    async def go() -> tuple[list[int], list[int], str]:
        async with Producer(cluster.namesrv_addr, "hunt17-queue-pg") as producer:
            chosen = [(await producer.send(TOPIC, b"s3", queue_id=3)).message_queue.queue_id,
                      (await producer.send_batch(TOPIC, [OutgoingMessage(b"b2a"), OutgoingMessage(b"b2b")],
                                                 queue_id=2)).message_queue.queue_id]
            await producer.send_oneway(TOPIC, b"o3", queue_id=3)
            plain = [(await producer.send(TOPIC, f"p{i}".encode())).message_queue.queue_id for i in range(4)]
            with pytest.raises(NoRouteError) as caught:  # at or past max(write, read): refused before sending
                await producer.send(TOPIC, b"x", queue_id=4)
            return chosen, plain, str(caught.value)

    chosen, plain, refusal = asyncio.run(asyncio.wait_for(go(), 30))
    assert chosen == [3, 2]
    assert set(plain) <= {0, 1}
    assert refusal.endswith(
        f"queueId 4 is not a writeable queue of topic '{TOPIC}' (its queue ids: [0, 1, 2, 3])")
    # the oneway send is not answered: wait until the broker has all 8
    stored = {m.body: m.queue_id for m in wait_stored(cluster, TOPIC, 8, "the sends", queues=4)}
    assert {b: q for b, q in stored.items() if not b.startswith(b"p")} == {b"s3": 3, b"b2a": 2, b"b2b": 2,
                                                                            b"o3": 3}


def test_a_send_to_a_queue_id_is_not_retried_on_another_broker(two_brokers: TwoBrokers) -> None:  # noqa: F811
    cluster, broker_b = two_brokers.cluster, two_brokers.broker_b  # noqa: F811 - this test's own cluster

    async def go() -> list[str]:
        async with Producer(cluster.namesrv_addr, "hunt17-queue-retry-pg") as producer:
            await producer.send(RETRY_TOPIC, b"warm-up")  # the route is cached from here on

            def wipe() -> None:  # broker-a answers NO_PERMISSION; the producer's route still says writeable
                cluster.broker.topics.update_order_flags({RETRY_TOPIC: "broker-a:2;broker-b:2"})
                cluster.broker.config = dataclasses.replace(cluster.broker.config, broker_permission=4)

            cluster.call(wipe)
            outcomes = []
            for i in range(6):
                try:
                    result = await producer.send(RETRY_TOPIC, f"q{i}".encode(), queue_id=0)
                    outcomes.append(result.message_queue.broker_name)
                except NoPermissionError:
                    outcomes.append("refused")
            # a plain send still retries on the other broker
            plain = [(await producer.send(RETRY_TOPIC, f"p{i}".encode())).message_queue.broker_name
                     for i in range(4)]
            assert plain == ["broker-b"] * 4
            return outcomes

    outcomes = run(asyncio.wait_for(go(), 30))
    # one attempt each, on the two brokers' queue 0 in turn: broker-a's refusals are raised, not sent again
    assert sorted(set(outcomes)) == ["broker-b", "refused"]
    assert broker_b.store.wait_dispatched(10)
    on_b = cluster.call(lambda: [m.body for m in broker_b.store.get(RETRY_TOPIC, 0, 0, 32).messages])
    assert sorted(b for b in on_b if b.startswith(b"q")) == sorted(
        f"q{i}".encode() for i, outcome in enumerate(outcomes) if outcome == "broker-b")


def test_a_negative_queue_id_is_sent_and_the_broker_picks_a_write_queue(
        cluster: LocalCluster) -> None:  # noqa: F811
    async def go() -> tuple[int, int]:
        async with Producer(cluster.namesrv_addr, "hunt17-queue-neg-pg") as producer:
            sent = await producer.send(TOPIC, b"n1", queue_id=-1)
            batch = await producer.send_batch(TOPIC, [OutgoingMessage(b"nb")], queue_id=-1)
            return sent.message_queue.queue_id, batch.message_queue.queue_id

    # as Java's send(msg, new MessageQueue(topic, broker, -1)): the answer names the queue the broker chose
    answered = asyncio.run(asyncio.wait_for(go(), 30))
    assert set(answered) <= {0, 1}
    cluster.wait_dispatched()
    stored = {m.body: m.queue_id for m in stored_messages(cluster, TOPIC, 4)}
    assert (stored[b"n1"], stored[b"nb"]) == answered
