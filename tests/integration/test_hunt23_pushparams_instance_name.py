"""The Python push consumer's client id with ``instance_name="DEFAULT"`` given outright, against a real name
server + broker.  4.9.3's DefaultMQPushConsumerImpl.start calls changeInstanceNameToPID for a CLUSTERING
consumer, which turns the instance name "DEFAULT" (Java's own default, so a value copied from a Java
configuration) into ``pid#nanos``: two members of one group on one host get two client ids and share the
queues.  A BROADCASTING consumer keeps ``<ip>@DEFAULT`` (its offsets file is found under it after a
restart)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeStatus, MessageModel, PushConsumer

TEST_TIMEOUT_S = 60.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def test_two_clustering_members_named_default_share_the_queues(cluster: LocalCluster) -> None:
    """Two members of one group, both with instance_name "DEFAULT": distinct client ids, and the four
    queues split between them (before: one client id, both owned queues 0 and 1, nobody 2 and 3)."""
    group, topic = "hunt23-pp-default-group", "Hunt23PpDefault"
    cluster.create_topic(topic, 4)

    async def scenario() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, instance_name="DEFAULT",
                                **FAST) as a:
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle,
                                    instance_name="DEFAULT", **FAST) as b:
                assert a.client_id != b.client_id
                assert not a.client_id.endswith("@DEFAULT") and not b.client_id.endswith("@DEFAULT")

                def split() -> bool:
                    mine, theirs = a.assignment(topic), b.assignment(topic)
                    return len(mine) == 2 and len(theirs) == 2 and not mine & theirs

                await eventually(split, 30, "the four queues split two and two")
                assert {mq.queue_id for mq in a.assignment(topic) | b.assignment(topic)} == {0, 1, 2, 3}

    arun(scenario)


def test_a_broadcasting_member_named_default_keeps_it(cluster: LocalCluster, tmp_path: Path) -> None:
    """BROADCASTING: 4.9.3 leaves the instance name alone, so "DEFAULT" stays in the client id."""
    group, topic = "hunt23-pp-default-bc-group", "Hunt23PpDefaultBc"
    cluster.create_topic(topic, 1)

    async def scenario() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, instance_name="DEFAULT",
                                message_model=MessageModel.BROADCASTING, offset_dir=str(tmp_path / "offsets"),
                                **FAST) as consumer:
            assert consumer.client_id.endswith("@DEFAULT")
            await asyncio.sleep(0)

    arun(scenario)
