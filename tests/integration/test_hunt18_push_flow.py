"""The Python push consumer's flow control against a real name server + broker, as 4.9.3's
DefaultMQPushConsumerImpl.pullMessage does it: while a queue holds more than pullThresholdForQueue messages,
more than pullThresholdSizeForQueue bytes or (concurrently) held offsets spanning more than
consumeConcurrentlyMaxSpan, its pulls wait; a blocked handler bounds what the queue holds, and the first
pull held back (then every 1000th) is logged.  Decided by counts: the consumer's flow-control counters tell
how many pulls were held back, whatever the machine's speed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.process_queue import ProcessQueue

TEST_TIMEOUT_S = 90.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
SUCCESS = ConsumeStatus.CONSUME_SUCCESS
FLOW_LOGGER = "rocketstore.client.push_consumer"


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def queue_of(consumer: PushConsumer, topic: str) -> ProcessQueue:
    return next(pq for mq, pq in consumer.process_queues.items() if mq.topic == topic)


def flow_warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == FLOW_LOGGER and r.levelno == logging.WARNING and text in r.getMessage()]


def test_a_blocked_handler_bounds_the_held_count_and_the_first_hold_back_is_logged_once(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """pull_threshold_for_queue 10, pulls of 4, every handler blocked: the queue holds at most 10 + 4
    messages however many pulls are held back, and of those held back only the first is logged (the next
    line would be the 1001st)."""
    group, topic = "hunt18-push-count-group", "Hunt18PushCount"
    cluster.create_topic(topic, 1)
    caplog.set_level(logging.WARNING, logger=FLOW_LOGGER)

    async def scenario() -> None:
        release = asyncio.Event()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            await release.wait()
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt18-push-producer") as producer:
            for i in range(60):
                await producer.send(topic, f"m{i}".encode(), queue_id=0)
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, pull_batch_size=4,
                                    pull_threshold_for_queue=10, **FAST) as consumer:
                try:
                    await eventually(lambda: consumer.flow_control_times >= 40, 30, "40 pulls held back")
                    pq = queue_of(consumer, topic)
                    assert 10 < pq.count <= 10 + 4
                    times = consumer.flow_control_times
                    logged = flow_warnings(caplog, "cached message count exceeds the threshold 10")
                    assert len(logged) == 1 + (times - 1) // 1000, logged
                    assert topic in logged[0] and "flowControlTimes=1" in logged[0]
                    assert consumer.span_flow_control_times == 0
                finally:
                    release.set()
                # released: everything is consumed after all
                await eventually(lambda: consumer.offsets.read_memory(queue_of(consumer, topic).mq) == 60, 30,
                                 "all 60 consumed and committed")

    arun(scenario)


def test_a_blocked_handler_bounds_the_held_bytes(cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """pull_threshold_bytes_for_queue 1 MiB, 300 kB messages pulled one at a time, handlers blocked: the
    queue holds no more than 1 MiB plus one message, and the size is what the log line names."""
    group, topic = "hunt18-push-bytes-group", "Hunt18PushBytes"
    cluster.create_topic(topic, 1)
    caplog.set_level(logging.WARNING, logger=FLOW_LOGGER)
    body = 300_000

    async def scenario() -> None:
        release = asyncio.Event()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            await release.wait()
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt18-push-producer") as producer:
            for i in range(12):
                await producer.send(topic, bytes([65 + i]) * body, queue_id=0)
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, pull_batch_size=1,
                                    pull_threshold_bytes_for_queue=1 << 20, **FAST) as consumer:
                try:
                    await eventually(lambda: consumer.flow_control_times >= 20, 30, "20 pulls held back")
                    pq = queue_of(consumer, topic)
                    assert (1 << 20) < pq.body_bytes <= (1 << 20) + body
                    assert pq.count == pq.body_bytes // body
                    logged = flow_warnings(caplog, "cached message size exceeds the threshold 1048576B")
                    assert len(logged) == 1, logged
                finally:
                    release.set()

    arun(scenario)


def test_held_offsets_spanning_too_far_hold_pulls_back_concurrently(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """consume_max_span 5: offset 0's handler blocks, offsets 1..7 are consumed, 8 and up block too.  Once
    offset 8 is held beside 0 the span is over 5 and pulls wait: nothing past 9 (the pull that brought 8, of
    2) is pulled, while the count stays far below its threshold, and the span hold-back is logged once.  (As
    in 4.9.3 the span is that of the messages held: 1..7 consumed do not count.)"""
    group, topic = "hunt18-push-span-group", "Hunt18PushSpan"
    cluster.create_topic(topic, 1)
    caplog.set_level(logging.WARNING, logger=FLOW_LOGGER)

    async def scenario() -> None:
        release = asyncio.Event()
        consumed: list[int] = []

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            if any(m.queue_offset == 0 or m.queue_offset >= 8 for m in messages):
                await release.wait()
            consumed.extend(m.queue_offset for m in messages)
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt18-push-producer") as producer:
            for i in range(40):
                await producer.send(topic, f"s{i}".encode(), queue_id=0)
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, pull_batch_size=2,
                                    consume_max_span=5, **FAST) as consumer:
                try:
                    await eventually(lambda: consumer.span_flow_control_times >= 20, 30, "20 pulls held back")
                    pq = queue_of(consumer, topic)
                    assert pq.max_span > 5
                    assert next(reversed(pq.messages)) <= 9
                    assert pq.count <= 10
                    assert consumer.flow_control_times == 0
                    assert len(flow_warnings(caplog, "held offsets span more than 5")) == 1
                finally:
                    release.set()
                await eventually(lambda: len(consumed) == 40, 30, "all 40 consumed once released")

    arun(scenario)


def test_an_orderly_queue_counts_the_batch_in_hand_toward_its_threshold(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """Orderly: the batch a blocked handler holds still counts (4.9.3's msgCount keeps the consuming
    messages until commit), so the queue holds at most threshold + one pull, and the span does not apply."""
    group, topic = "hunt18-push-orderly-group", "Hunt18PushOrderly"
    cluster.create_topic(topic, 1)
    caplog.set_level(logging.WARNING, logger=FLOW_LOGGER)

    async def scenario() -> None:
        release = asyncio.Event()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            await release.wait()
            return SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt18-push-producer") as producer:
            for i in range(40):
                await producer.send(topic, f"o{i}".encode(), queue_id=0)
            # all in the queue before the first pull, so that the first batch is three (a dispatcher a moment
            # behind, on a loaded machine, hands the first pull o0 alone)
            await asyncio.to_thread(cluster.wait_dispatched)
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                    consume_batch_size=3, pull_batch_size=4, pull_threshold_for_queue=8,
                                    consume_max_span=1, **FAST) as consumer:
                try:
                    await eventually(lambda: consumer.flow_control_times >= 20, 30, "20 pulls held back")
                    pq = queue_of(consumer, topic)
                    assert len(pq.consuming) == 3
                    assert 8 < pq.count <= 8 + 4
                    assert consumer.span_flow_control_times == 0
                    assert len(flow_warnings(caplog, "cached message count exceeds the threshold 8")) == 1
                finally:
                    release.set()

    arun(scenario)
