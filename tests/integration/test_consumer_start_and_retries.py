"""Bug bash: push and blocking consumers as a RocketMQ 4.9.3 client user expects them.

The blocking consumers leave no thread behind when their start fails.

``with BlockingPushConsumer(...)`` whose start is refused (here: an SQL92 subscription on a broker without
enablePropertyFilter) raises from ``__enter__``, so ``__exit__`` never runs and the caller has no object to
shut down: the consumer's own loop thread must end with the failed start.  A second start of a running
consumer raises without stopping it.

An orderly push consumer left at the default max_reconsume_times (-1, Java's) retries a failing message
without limit, as Java's ConsumeMessageOrderlyService does; a concurrent one gives up after 16.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    BrokerError,
    ClientError,
    ConsumedMessage,
    ConsumeStatus,
    MessageSelector,
    Producer,
    PushConsumer,
    PushConsumerSettings,
)
from rocketstore.remoting.transport import run

TOPIC = "BugbashSqlTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:  # enablePropertyFilter off: SQL92 subscriptions are refused
        async def create_topic() -> None:
            async with Producer(c.namesrv_addr, "bugbash-producer") as producer:
                await producer.send(TOPIC, b"x")

        run(create_topic())
        yield c


def threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def handler(messages: object) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def test_a_push_consumer_whose_start_fails_in_with_leaves_no_thread(cluster: LocalCluster) -> None:
    group = "bugbash-push-start-fails"
    for _ in range(3):
        with pytest.raises(BrokerError, match="SQL92"), BlockingPushConsumer(
                cluster.namesrv_addr, group, {TOPIC: MessageSelector.by_sql("a > 1")}, handler):
            pytest.fail("the start should have been refused")
    assert threads_named(f"push-consumer-{group}") == []


def test_a_lite_pull_consumer_whose_start_fails_leaves_no_thread(cluster: LocalCluster) -> None:
    group = "bugbash-lite-start-fails"
    consumer = BlockingLitePullConsumer(cluster.namesrv_addr, group)
    consumer.subscribe(TOPIC, MessageSelector.by_sql("a > 1"))
    with pytest.raises(BrokerError, match="SQL92"):
        consumer.start()
    assert threads_named(f"lite-pull-consumer-{group}") == []
    consumer.close()  # nothing left to close: a no-op


def test_a_second_start_of_a_running_consumer_raises_and_the_consumer_keeps_running(cluster: LocalCluster) -> None:
    group = "bugbash-push-started-twice"
    with BlockingPushConsumer(cluster.namesrv_addr, group, {TOPIC: "*"}, handler) as consumer:
        with pytest.raises(ClientError, match="already started"):
            consumer.start()
        assert len(threads_named(f"push-consumer-{group}")) == 1
        assert consumer.assignment(TOPIC)  # its loop still answers
    assert threads_named(f"push-consumer-{group}") == []


def test_an_orderly_consumer_by_default_retries_a_failing_message_past_16_times_and_never_dead_letters_it(
        cluster: LocalCluster) -> None:
    """Java's DefaultMQPushConsumer leaves maxReconsumeTimes at -1, which an orderly consumer reads as
    Integer.MAX_VALUE: the queue retries its message until the handler takes it, and the messages after it
    wait.  (rocketstore's default used to dead-letter it after 16 local retries, then go on with the next
    message: the order the application relies on was broken without a word.)"""
    topic, group = "BugbashOrderlyPoison", "bugbash-orderly-poison"
    seen: list[tuple[str, int]] = []
    fail_until = 20  # attempts past Java's concurrent limit of 16

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend((m.body.decode(), m.reconsume_times) for m in messages)
        if messages[0].body == b"poison" and messages[0].reconsume_times < fail_until:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "bugbash-orderly-producer") as producer:
            for body in (b"before", b"poison", b"after"):
                await producer.send_orderly(topic, body, "one-key")
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                suspend_current_queue_s=0.02, rebalance_interval_s=0.5,
                                heartbeat_interval_s=0.5) as consumer:
            assert consumer.settings.max_reconsume_times == -1
            deadline = asyncio.get_running_loop().time() + 60
            while ("after", 0) not in seen:
                assert asyncio.get_running_loop().time() < deadline, f"'after' never came; seen {seen[-3:]}"
                await asyncio.sleep(0.05)

    run(go())
    assert seen == [("before", 0), *[("poison", n) for n in range(fail_until + 1)], ("after", 0)]
    assert cluster.call(lambda: cluster.broker.topics.get(f"%DLQ%{group}")) is None


def test_the_default_reconsume_limit_is_javas() -> None:
    def limit(**kw: object) -> int:
        return PushConsumerSettings(**kw).reconsume_limit()  # type: ignore[arg-type]

    assert limit() == 16
    assert limit(orderly=True) == (1 << 31) - 1
    assert limit(max_reconsume_times=3) == limit(max_reconsume_times=3, orderly=True) == 3
    assert limit(max_reconsume_times=0, orderly=True) == 0
    with pytest.raises(ValueError, match="max_reconsume_times"):
        PushConsumerSettings(max_reconsume_times=-2).check()
