"""The Python orderly push consumer's ``consume_concurrency`` (4.9.3's consumeThreadMin / consumeThreadMax)
against a real name server + broker.  4.9.3's ConsumeMessageOrderlyService runs each queue's ConsumeRequest
on the consumer's consume threads, so at most that many queues are in the listener at once; with one thread
the queues are handled one at a time.  An async handler is bound the same way (before: one call per queue
at once, however few slots were set)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer

TEST_TIMEOUT_S = 90.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
QUEUES, PER_QUEUE = 4, 3


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


@pytest.mark.parametrize("slots", [1, 2])
def test_an_async_orderly_handler_is_called_for_at_most_consume_concurrency_queues_at_once(
        cluster: LocalCluster, slots: int) -> None:
    """Four queues of three messages each, an async handler that stays a while in every call: never more
    than ``consume_concurrency`` calls at once, and each queue's messages still come in order."""
    group, topic = f"hunt23-pp-slots-group-{slots}", f"Hunt23PpSlots{slots}"
    cluster.create_topic(topic, QUEUES)
    seen: dict[int, list[bytes]] = {}
    in_handler = 0
    most = 0

    async def scenario() -> None:
        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            nonlocal in_handler, most
            in_handler += 1
            most = max(most, in_handler)
            try:
                await asyncio.sleep(0.2)
                for m in messages:
                    seen.setdefault(m.queue_id, []).append(m.body)
                return ConsumeStatus.CONSUME_SUCCESS
            finally:
                in_handler -= 1

        async with Producer(cluster.namesrv_addr, "hunt23-pp-slots-producer") as producer:
            for i in range(PER_QUEUE):
                for q in range(QUEUES):
                    await producer.send(topic, f"q{q}-{i}".encode(), queue_id=q)
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                    consume_concurrency=slots, **FAST):
                await eventually(lambda: sum(map(len, seen.values())) == QUEUES * PER_QUEUE, 60,
                                 "every message handled")

    arun(scenario)
    assert 1 <= most <= slots
    assert seen == {q: [f"q{q}-{i}".encode() for i in range(PER_QUEUE)] for q in range(QUEUES)}
