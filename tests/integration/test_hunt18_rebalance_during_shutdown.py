"""A rebalance whose allocation look-up is in flight when the push consumer's shutdown begins gives up:
the pulls that end because of the shutdown are not "stalled" pulls to drop, take again and restart (the
session-18 soak saw seven such warnings in 400 start/shutdown rounds; the race is forced here by starting
the shutdown from inside the look-up)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer


def test_a_rebalance_overtaken_by_shutdown_restarts_no_pull(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "Hunt18RebalanceStop", "hunt18-rebalance-stop"
    caplog.set_level(logging.WARNING, logger="rocketstore.client.push_consumer")

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async def scenario(cluster: LocalCluster) -> None:
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, rebalance_interval_s=0.5,
                                long_poll_ms=1000)
        await consumer.start()
        await eventually(lambda: sum(mq.topic == topic for mq in consumer._pull_tasks) == 2, 30,
                         "the topic's two queues pulled")
        look_up = consumer._allocation
        stopped: list[asyncio.Task[None]] = []

        async def allocation_overtaken(t: str) -> Any:
            mine = await look_up(t)
            stopped.append(asyncio.ensure_future(consumer.shutdown()))
            # the pull loops see ``stopping`` and end by themselves while this rebalance still runs
            await eventually(lambda: all(task.done() for task in consumer._pull_tasks.values()), 30,
                             "the pulls ended by the shutdown")
            return mine

        consumer._allocation = allocation_overtaken  # type: ignore[method-assign]
        await consumer.rebalance()
        await stopped[0]
        stalls = [r.getMessage() for r in caplog.records if "stalled" in r.getMessage()]
        assert stalls == []
        assert all(task.done() for task in consumer._pull_tasks.values())

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 2)
        run_within(lambda: scenario(cluster), 90)  # type: ignore[arg-type]
