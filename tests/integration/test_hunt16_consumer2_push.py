"""The Python push consumer against a real name server + broker, on what 4.9.3's DefaultMQPushConsumer does
that a user notices: subscriptions changed after start, and a hung handler's message sent back after the
consume timeout (ConsumeMessageConcurrentlyService.cleanExpireMsg / ProcessQueue.cleanExpiredMsg)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer

TEST_TIMEOUT_S = 60.0
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}
SUCCESS = ConsumeStatus.CONSUME_SUCCESS


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def test_subscribe_and_unsubscribe_after_start(cluster: LocalCluster) -> None:
    """subscribe() after start: the new topic's queues are taken and its tag expression applies;
    unsubscribe(): the topic's queues are given up (offset committed) and its new messages not consumed."""
    group, first, second = "hunt16-c2-sub-group", "Hunt16C2SubA", "Hunt16C2SubB"
    cluster.create_topic(first, 2)
    cluster.create_topic(second, 2)
    seen: list[tuple[str, bytes]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend((m.topic, m.body) for m in messages)
        return SUCCESS

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "hunt16-c2-producer") as producer, \
                PushConsumer(cluster.namesrv_addr, group, {first: "*"}, handle, **FAST) as consumer:
            await producer.send(first, b"a1", queue_id=0)
            await eventually(lambda: (first, b"a1") in seen, 20, "a1 consumed")

            consumer.subscribe(second, "x || y")
            await eventually(lambda: len(consumer.assignment(second)) == 2, 20, f"{second}'s queues taken")
            for body, tag in ((b"b-x", "x"), (b"b-z", "z"), (b"b-y", "y")):
                await producer.send(second, body, tags=tag, queue_id=0)
            await eventually(lambda: (second, b"b-y") in seen, 20, "b-y consumed")
            assert (second, b"b-x") in seen
            assert (second, b"b-z") not in seen  # the tag expression given to subscribe() filters

            consumer.unsubscribe(first)
            await eventually(lambda: not consumer.assignment(first), 20, f"{first}'s queues given up")
            assert committed(cluster, group, first).get(0) == 1  # committed as the queue was given up
            await producer.send(first, b"a2", queue_id=0)
            await producer.send(second, b"b-last", tags="x", queue_id=0)
            await eventually(lambda: (second, b"b-last") in seen, 20, "b-last consumed")
            await asyncio.sleep(0)  # (a2 was sent before b-last, to a queue no longer pulled)
            assert (first, b"a2") not in seen
            assert consumer.assignment(second)  # the other subscription is untouched

    arun(scenario)


def test_hung_handler_message_is_sent_back_after_the_consume_timeout(cluster: LocalCluster) -> None:
    """A handler that hangs past consume_timeout_s: its message is sent back (it comes again through the
    retry topic with reconsumeTimes 1 while the first call still hangs) and no longer holds the queue's
    offset back (the messages after it are committed)."""
    group, topic = "hunt16-c2-timeout-group", "Hunt16C2Timeout"
    cluster.create_topic(topic, 1)
    calls: list[tuple[bytes, int, str]] = []

    async def scenario() -> None:
        release = asyncio.Event()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                calls.append((m.body, m.reconsume_times, m.topic))
            if any(m.body == b"hang" and m.reconsume_times == 0 for m in messages):
                await release.wait()
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt16-c2-producer") as producer:
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_timeout_s=1.0,
                                    **FAST):
                try:
                    await producer.send(topic, b"hang", queue_id=0)
                    await producer.send(topic, b"after", queue_id=0)
                    await eventually(lambda: (b"hang", 1, topic) in calls, 20, "the hung message again")
                    assert not release.is_set()  # ... while its first handler call still hangs
                    # the hung message no longer holds the offset back: both are committed
                    await eventually(lambda: committed(cluster, group, topic).get(0) == 2, 20, "offset 2")
                finally:
                    release.set()  # the hung handler ends, so the consumer can shut down
        assert calls.count((b"hang", 0, topic)) == 1
        assert (b"after", 0, topic) in calls

    arun(scenario)


def test_pull_interval_pauses_a_queue_after_a_pull_that_found_messages(cluster: LocalCluster) -> None:
    """pull_interval_s (pullInterval): after a pull that found messages the queue waits that long before
    its next pull, so the message stored after the first batch is not consumed meanwhile, while another
    queue's first pull still is."""
    group, slow, other = "hunt16-c2-interval-group", "Hunt16C2Interval", "Hunt16C2IntervalOther"
    cluster.create_topic(slow, 1)
    cluster.create_topic(other, 1)
    seen: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return SUCCESS

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "hunt16-c2-producer") as producer:
            for body in (b"s1", b"s2"):
                await producer.send(slow, body, queue_id=0)
            async with PushConsumer(cluster.namesrv_addr, group, {slow: "*", other: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    pull_batch_size=1,
                                    pull_interval_s=65.0, **FAST) as consumer:
                await eventually(lambda: b"s1" in seen, 20, "s1 consumed")
                await producer.send(other, b"o1", queue_id=0)
                await eventually(lambda: b"o1" in seen, 20, "o1 consumed")
                assert b"s2" not in seen  # s1's queue is still in its pause
                assert consumer.running_info().properties["pullInterval"] == "65000"

    arun(scenario)


def test_topic_pull_threshold_is_divided_among_the_queues_held(cluster: LocalCluster) -> None:
    """pull_threshold_for_topic (pullThresholdForTopic): each held queue's threshold is the topic's divided
    by the queues held; a queue whose handler hangs holds no more than that (plus the pull in flight)."""
    group, topic = "hunt16-c2-threshold-group", "Hunt16C2Threshold"
    cluster.create_topic(topic, 2)
    calls: list[bytes] = []

    async def scenario() -> None:
        release = asyncio.Event()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            calls.extend(m.body for m in messages)
            if any(m.queue_id == 0 for m in messages):
                await release.wait()
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt16-c2-producer") as producer:
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, pull_batch_size=1,
                                    pull_threshold_for_topic=4, **FAST) as consumer:
                try:
                    await eventually(lambda: len(consumer.assignment(topic)) == 2, 20, "both queues held")
                    # 4 divided among the queues held (the retry topic's count too), once a rebalance saw them
                    def divided() -> bool:
                        info = consumer.running_info().properties
                        return info["pullThresholdForQueue"] == str(max(1, 4 // len(consumer.process_queues)))

                    await eventually(divided, 20, "the topic threshold divided among the queues held")
                    held = len(consumer.process_queues)
                    assert consumer.running_info().properties["pullThresholdForTopic"] == "4"
                    for i in range(10):
                        await producer.send(topic, f"q0-{i}".encode(), queue_id=0)
                    await eventually(lambda: len([c for c in calls if c.startswith(b"q0-")]) >= 2, 20,
                                     "queue 0's handlers hanging")
                    await producer.send(topic, b"q1", queue_id=1)
                    await eventually(lambda: b"q1" in calls, 20, "q1 consumed")
                    pq = next(pq for mq, pq in consumer.process_queues.items()
                              if mq.topic == topic and mq.queue_id == 0)
                    assert pq.count <= max(1, 4 // held) + 1
                finally:
                    release.set()

    arun(scenario)


def test_suspend_stops_pulling_until_resume(cluster: LocalCluster) -> None:
    """suspend() (4.9.3's DefaultMQPushConsumer.suspend): no queue is pulled until resume(); a message
    sent meanwhile is consumed by another group but not by the suspended consumer, then by it on resume()."""
    group, topic = "hunt16-c2-suspend-group", "Hunt16C2Suspend"
    cluster.create_topic(topic, 1)
    seen: list[bytes] = []
    witness: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return SUCCESS

    async def witness_handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        witness.extend(m.body for m in messages)
        return SUCCESS

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "hunt16-c2-producer") as producer, \
                PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST) as consumer, \
                PushConsumer(cluster.namesrv_addr, group + "-witness", {topic: "*"}, witness_handle, **FAST):
            await producer.send(topic, b"m1", queue_id=0)
            await eventually(lambda: b"m1" in seen and b"m1" in witness, 20, "m1 consumed by both groups")
            consumer.suspend()
            since = time.monotonic()  # the clock ProcessQueue stamps its pulls with
            # every pull in flight at suspend() has come back (empty: nothing was sent since)
            await eventually(lambda: all(pq.last_pull_s > since for pq in consumer.process_queues.values()),
                             20, "the pulls in flight returned")
            await producer.send(topic, b"m2", queue_id=0)
            await eventually(lambda: b"m2" in witness, 20, "m2 consumed by the other group")
            assert b"m2" not in seen
            consumer.resume()
            await eventually(lambda: b"m2" in seen, 20, "m2 consumed after resume()")

    arun(scenario)
