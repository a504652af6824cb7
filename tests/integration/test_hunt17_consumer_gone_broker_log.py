"""A push consumer whose topic loses a broker (it shut down and left the name server's routes) gives that
broker's queues up; the offsets of those queues cannot be committed any more.  4.9.3 logs that per queue
(RemoteBrokerOffsetStore.persist); ours logs one line per broker, naming how many queues and which.  Real
name server and two brokers; deadlines only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient

TOPIC = "Hunt17GoneBroker"
QUEUES = 4
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, 90.0)  # type: ignore[arg-type]


def test_queues_of_a_gone_broker_log_one_commit_failure_for_the_broker(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b")
        try:
            async def create() -> None:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    for addr in (cluster.broker_addr, broker_b.address):
                        await admin.create_topic(TOPIC, broker_addr=addr, read_queue_nums=QUEUES,
                                                 write_queue_nums=QUEUES)

            run(create())
            cluster.wait_until(lambda: len(cluster.namesrv.routes.route(TOPIC).queue_datas) == 2, 20,
                               "both brokers")
            seen: list[tuple[str, int]] = []

            def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                seen.extend((m.broker_name, m.queue_id) for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            async def go() -> None:
                async with Producer(cluster.namesrv_addr, "hunt17-gone-producer") as producer:
                    for _ in range(4 * QUEUES):  # round robin over both brokers' queues
                        await producer.send(TOPIC, b"x")
                async with PushConsumer(cluster.namesrv_addr, "hunt17-gone-group", {TOPIC: "*"}, handle,
                                        **FAST) as consumer:
                    await eventually(lambda: len(set(seen)) == 2 * QUEUES, 20, "every queue consumed")
                    with caplog.at_level(logging.DEBUG, logger="rocketstore.client"):
                        closing = asyncio.run_coroutine_threadsafe(broker_b.close(), cluster.loop)
                        await asyncio.wrap_future(closing)
                        await eventually(lambda: {mq.broker_name for mq in consumer.assignment(TOPIC)} ==
                                         {"broker-a"}, 30, "broker-b's queues given up")

            arun(go)
        finally:
            cluster.run(broker_b.close())
    # the commit failures of broker-b's four queues of TOPIC (one route read drops them all): one line, which
    # may also name the retry topic's queue there when the same rebalance gave it up
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
             and "commit" in r.getMessage() and "broker-b" in r.getMessage() and f"{TOPIC}" in r.getMessage()]
    assert len(lines) == 1, lines
    assert all(f"{TOPIC}:{q}" in lines[0] for q in range(QUEUES)), lines
    assert "of broker broker-b given up were not committed" in lines[0]
