"""A lite pull consumer's pulls carry no commit offset, as 4.9.3's (DefaultLitePullConsumerImpl.pullSyncImpl
builds its sysFlag without the commit-offset bit): its offsets reach the broker through the offset store
only (commit_sync, the periodic persist, close).

They used to carry the offset store's value, as the push consumer's do.  The broker then held an offset the
offset store did not know it had sent, and the store's "unchanged since the last commit" check skipped a
later commit of the value it last sent: after a seek back to that value, commit_sync and close left the
broker at the later offset, and a restart skipped the messages the consumer had gone back to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually
from test_lite_pull_consumer import FAST, poll_until
from test_python_push_consumer import arun, committed, create_topic

from rocketstore.client import ConsumedMessage, LitePullConsumer, MessageQueue, Producer, PullConsumer

TOPIC = "LiteSeekBackCommit"
GROUP = "lite-seek-back-commit-group"


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_a_commit_after_a_seek_back_reaches_the_broker_and_a_restart_resumes_there(cluster: LocalCluster) -> None:
    mq = MessageQueue(TOPIC, "broker-a", 0)
    # only commit_sync and close write offsets out; polls auto-commit into the offset store every second
    settings: dict[str, Any] = {**FAST, "persist_interval_s": 3600.0, "auto_commit": True,
                                "auto_commit_interval_s": 1.0, "pull_batch_size": 10}

    async def go() -> None:
        await create_topic(cluster, TOPIC, queue_count=1)
        async with Producer(cluster.namesrv_addr, "lite-seek-back-producer") as producer:
            for i in range(20):
                await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)
        async with LitePullConsumer(cluster.namesrv_addr, GROUP, **settings) as consumer:
            pulls: list[int | None] = []  # the commit offset of every pull sent
            pull = consumer.consumer.pull

            async def spied_pull(*args: Any, **kw: Any) -> Any:
                pulls.append(kw.get("commit_offset"))
                return await pull(*args, **kw)

            consumer.consumer.pull = spied_pull  # type: ignore[method-assign]
            consumer.assign([mq])
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 1, "a first batch")
            first = got[-1].queue_offset + 1  # (at most pull_batch_size: below 20)
            await consumer.commit_sync()
            assert committed(cluster, GROUP, TOPIC) == {0: first}
            await poll_until(consumer, got, 20, "the rest")

            async def auto_committed() -> bool:  # a later poll puts offset 20 into the offset store
                assert await consumer.poll(0.1) == []
                return consumer.offsets.read_memory(mq) == 20

            await eventually(auto_committed, 20, "the auto commit of offset 20")
            sent = len(pulls)
            await eventually(lambda: len(pulls) >= sent + 2, 20, "a pull sent after the auto commit, answered")
            consumer.pause([mq])  # nothing pulls from here on
            await consumer.seek(mq, first)
            await consumer.commit_sync()
        assert committed(cluster, GROUP, TOPIC) == {0: first}, "the offset committed last is the broker's"
        assert all(offset is None for offset in pulls), f"pulls carried commit offsets: {pulls}"

        async with LitePullConsumer(cluster.namesrv_addr, GROUP, **FAST) as again:
            again.assign([mq])
            resumed: list[ConsumedMessage] = []
            await poll_until(again, resumed, 20 - first, "the messages after the committed offset")
        assert [m.queue_offset for m in resumed] == list(range(first, 20))

    arun(go)


def test_a_commit_after_a_seek_goes_out_even_if_its_value_was_the_last_one_sent(cluster: LocalCluster) -> None:
    """The offset store skips a commit of the value it sent last; another client of the group moving the
    broker's offset meanwhile made that skip wrong: a seek back then commit_sync left the other's offset.  A
    position set outright (seek, reset, commit_sync's copy) is always committed, as 4.9.3 commits every
    offset at every persist."""
    mq = MessageQueue(TOPIC, "broker-a", 0)
    settings: dict[str, Any] = {**FAST, "persist_interval_s": 3600.0, "auto_commit": False, "pull_batch_size": 5}

    async def go() -> None:
        await create_topic(cluster, TOPIC, queue_count=1)
        async with Producer(cluster.namesrv_addr, "lite-seek-back-producer") as producer:
            for i in range(20):
                await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)
        async with LitePullConsumer(cluster.namesrv_addr, GROUP, **settings) as consumer:
            consumer.assign([mq])
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 1, "a first batch")
            consumer.pause([mq])
            first = got[-1].queue_offset + 1
            await consumer.commit_sync()
            assert committed(cluster, GROUP, TOPIC) == {0: first}
            async with PullConsumer(cluster.namesrv_addr, GROUP) as other:
                await other.commit_offset(mq, 20)
            assert committed(cluster, GROUP, TOPIC) == {0: 20}
            await consumer.seek(mq, first)
            await consumer.commit_sync()
            assert committed(cluster, GROUP, TOPIC) == {0: first}

    arun(go)
