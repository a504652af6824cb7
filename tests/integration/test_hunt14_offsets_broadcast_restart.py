"""A BROADCASTING consumer left at the default instance name keeps one client id, ``<ip>@DEFAULT``, across
restarts, as 4.9.3's consumers do (changeInstanceNameToPID runs for CLUSTERING only): its offsets file,
``<dir>/<client id>/<group>/offsets.json``, is found again and a restarted member gets what was sent
while it was down instead of starting over at the queues' end."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_lite_pull_consumer import FAST as LITE_FAST
from test_python_push_consumer import FAST, arun, create_topic, eventually, send_all

from rocketstore.client import (
    ConsumedMessage,
    ConsumeStatus,
    LitePullConsumer,
    MessageModel,
    PushConsumer,
)


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_the_default_client_id_is_ip_at_default_for_broadcasting_only() -> None:
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    push = PushConsumer("127.0.0.1:1", "g", {"T": "*"}, handle, message_model=MessageModel.BROADCASTING)
    lite = LitePullConsumer("127.0.0.1:1", "g", message_model=MessageModel.BROADCASTING)
    assert push.client_id.endswith("@DEFAULT") and lite.client_id.endswith("@DEFAULT")
    named = LitePullConsumer("127.0.0.1:1", "g", message_model=MessageModel.BROADCASTING, instance_name="mine")
    assert named.client_id.endswith("@mine")
    clustering = [PushConsumer("127.0.0.1:1", "g", {"T": "*"}, handle), LitePullConsumer("127.0.0.1:1", "g"),
                  LitePullConsumer("127.0.0.1:1", "g")]
    assert not any(c.client_id.endswith("@DEFAULT") for c in clustering)
    assert len({c.client_id for c in clustering}) == 3, "clustering: pid#nanos, one per consumer"


def test_a_restarted_broadcasting_push_consumer_gets_what_was_sent_while_it_was_down(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "BroadcastRestart", "broadcast-restart-group"
    got: list[str] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.msg_id for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    def member() -> PushConsumer:  # Java's defaults: CONSUME_FROM_LAST_OFFSET, instance name DEFAULT
        return PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle,
                            message_model=MessageModel.BROADCASTING, offset_dir=str(tmp_path / "offsets"), **FAST)

    async def go() -> None:
        await create_topic(cluster, topic)
        async with member():
            # two per queue: every queue has an offset when the member stops (a queue that never answered
            # a pull has none, and would restart at its end as in 4.9.3)
            first = await send_all(cluster, topic, 8)
            await eventually(lambda: len(got) >= 8, 20, "the first messages")
        assert Counter(got) == Counter(first)
        got.clear()
        while_down = await send_all(cluster, topic, 4, prefix="down")
        async with member():
            await eventually(lambda: len(got) >= 4, 20, "the messages sent while the member was down")
            await asyncio.sleep(0.3)  # room for anything wrongly delivered again
        assert Counter(got) == Counter(while_down)

    arun(go)


def test_a_restarted_broadcasting_lite_pull_consumer_goes_on_from_its_offsets_file(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "BroadcastLiteRestart", "broadcast-lite-restart-group"

    def member() -> LitePullConsumer:  # from the first offset: a member without its file reads everything again
        consumer = LitePullConsumer(cluster.namesrv_addr, group, message_model=MessageModel.BROADCASTING,
                                    offset_dir=str(tmp_path / "offsets"), **LITE_FAST)
        consumer.subscribe(topic)
        return consumer

    async def drain(consumer: LitePullConsumer, want: int) -> list[str]:
        out: list[str] = []

        async def enough() -> bool:
            out.extend(m.msg_id for m in await consumer.poll(0.2))
            return len(out) >= want

        await eventually(enough, 20, f"{want} messages")
        return out

    async def go() -> None:
        await create_topic(cluster, topic)
        async with member() as consumer:
            first = await send_all(cluster, topic, 8)  # two per queue: each has an offset to commit
            assert Counter(await drain(consumer, 8)) == Counter(first)
            await consumer.commit_sync()
        while_down = await send_all(cluster, topic, 4, prefix="down")
        async with member() as consumer:
            got = await drain(consumer, 4)
            assert await consumer.poll(0.5) == []
        assert Counter(got) == Counter(while_down)

    arun(go)
