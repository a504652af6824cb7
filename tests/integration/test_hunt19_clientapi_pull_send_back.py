"""PullConsumer.send_message_back, 4.9.3's DefaultMQPullConsumer.sendMessageBack(msg, delayLevel, brokerName)
on a real broker: a message pulled and given back comes again from ``%RETRY%<group>`` after its delay, with
its reconsume count raised and its original topic kept; one past max_reconsume_times goes to
``%DLQ%<group>`` at once."""

from __future__ import annotations

import asyncio

from local_cluster import LocalCluster

from rocketstore.client import MessageQueue, Producer, PullConsumer, PullStatus
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.transport import run

TOPIC = "Hunt19PullBack"
GROUP = "hunt19-pull-back-cg"


def _stored(cluster: LocalCluster, topic: str) -> list[StoredMessage]:
    """Every message of *topic*'s queue 0 on the broker (on the cluster's loop)."""
    return list(cluster.broker.store.get(topic, 0, 0, 32).messages)


def test_a_pulled_message_given_back_comes_again_from_the_retry_topic(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC)
    mq = MessageQueue(TOPIC, "broker-a", 0)

    async def go() -> tuple[StoredMessage, StoredMessage]:
        async with Producer(cluster.namesrv_addr, "hunt19-pull-back-pg") as producer:
            await producer.send(TOPIC, b"retry me", tags="T", keys="k-retry")
            await producer.send(TOPIC, b"dead letter", tags="T", keys="k-dlq")
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            pulled: list[StoredMessage] = []
            for _ in range(200):  # a send is answered before the dispatcher puts it in the consume queue
                result = await consumer.pull(mq, len(pulled), 32)
                if result.status == PullStatus.FOUND:
                    pulled.extend(result.messages)
                if len(pulled) >= 2:
                    break
                await asyncio.sleep(0.05)
            first, second = pulled
            await consumer.send_message_back(first, "broker-a", 1)  # delay level 1: 1 s
            await consumer.send_message_back(second, "broker-a", max_reconsume_times=0)
        return first, second

    first, second = run(asyncio.wait_for(go(), 30))
    dead = cluster.wait_until(lambda: _stored(cluster, f"%DLQ%{GROUP}"), 15, "the dead letter")
    assert [m.body for m in dead] == [b"dead letter"]
    retried = cluster.wait_until(lambda: _stored(cluster, f"%RETRY%{GROUP}"), 15, "the retried message")
    assert [m.body for m in retried] == [b"retry me"]
    again = retried[0]
    assert again.reconsume_times == 1
    assert again.properties[PropertyName.RETRY_TOPIC] == TOPIC
    assert again.properties[PropertyName.UNIQ_KEY] == first.properties[PropertyName.UNIQ_KEY]
    assert again.properties["KEYS"] == "k-retry"
    assert dead[0].properties[PropertyName.UNIQ_KEY] == second.properties[PropertyName.UNIQ_KEY]
