"""A lite pull consumer subscribed again to a topic it holds, with another expression, pulls by the new
expression from then on, as 4.9.3's pull task does (it reads the topic's subscription at every pull).  The
queues' pull loops kept the expression of their start: messages of the new tag were filtered out and
their offsets committed past them, lost to the group."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_lite_pull_consumer import FAST, poll_until
from test_python_push_consumer import arun, create_topic, eventually, topic_queues

from rocketstore.client import ConsumedMessage, LitePullConsumer, Producer


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_subscribing_again_with_other_tags_pulls_by_the_new_tags(cluster: LocalCluster) -> None:
    topic, group = "LiteResubscribe", "lite-resubscribe-group"

    async def go() -> None:
        await create_topic(cluster, topic)
        async with LitePullConsumer(cluster.namesrv_addr, group, **FAST) as consumer, \
                Producer(cluster.namesrv_addr, "lite-resubscribe-producer") as producer:
            consumer.subscribe(topic, "TagA")
            await eventually(lambda: consumer.assignment() == topic_queues(topic), 15, "every queue")
            a_ids = {(await producer.send(topic, f"a{i}".encode(), tags="TagA")).msg_id for i in range(4)}
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 4, "the TagA messages")
            assert {m.msg_id for m in got} == a_ids

            consumer.subscribe(topic, "TagB")
            # the pulls held by the broker under the old expression (long_poll_ms) come back first
            await asyncio.sleep(FAST["long_poll_ms"] / 1000 + 0.5)
            b_ids = set()
            for i in range(4):
                await producer.send(topic, f"a-late{i}".encode(), tags="TagA")
                b_ids.add((await producer.send(topic, f"b{i}".encode(), tags="TagB")).msg_id)
            later: list[ConsumedMessage] = []
            await poll_until(consumer, later, 4, "the TagB messages", timeout_s=10)
            assert {m.msg_id for m in later} == b_ids
            assert {m.tags for m in later} == {"TagB"}

    arun(go)
