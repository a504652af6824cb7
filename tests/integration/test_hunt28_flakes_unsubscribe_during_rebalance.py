"""A topic unsubscribed while a rebalance is inside its allocation look-up stays dropped.

The rebalance went on from its list of topics taken before the look-up and assigned the unsubscribed topic's
queues again: ``poll()`` handed out its messages once more (from offset 0 when nothing was committed).  Found
by the session 28 flake sweep (test_lite_pull_consumer's unsubscribe test failed with the dispatch delayed);
4.9.3's rebalance likewise drops the queues of a topic no longer subscribed (truncateMessageQueueNotMyTopic).
The look-up is held here at a gate, so the window is hit every time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_lite_pull_consumer import FAST, poll_until
from test_python_push_consumer import arun, create_topic, send_all

from rocketstore.client import LitePullConsumer
from rocketstore.client.route import MessageQueue


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_a_topic_unsubscribed_during_its_allocation_look_up_stays_dropped(
        cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    keep, drop, group = "UnsubKeep", "UnsubDrop", "unsub-during-rebalance"
    held, release = asyncio.Event(), asyncio.Event()
    hold = False
    allocation = LitePullConsumer._allocation

    async def gated(self: LitePullConsumer, topic: str) -> set[MessageQueue] | None:
        mine = await allocation(self, topic)
        if topic == drop and hold:
            held.set()
            await release.wait()
        return mine

    monkeypatch.setattr(LitePullConsumer, "_allocation", gated)

    async def main() -> None:
        nonlocal hold
        await create_topic(cluster, keep)
        await create_topic(cluster, drop)
        await send_all(cluster, drop, 8)
        cluster.wait_dispatched()
        async with LitePullConsumer(cluster.namesrv_addr, group, **{**FAST, "auto_commit_interval_s": 3600.0}) as c:
            c.subscribe(keep)
            c.subscribe(drop)
            got: list = []
            await poll_until(c, got, 8, "the messages of the topic to drop")
            hold = True
            await asyncio.wait_for(held.wait(), 30)  # a rebalance is inside the look-up of drop's queues
            c.unsubscribe(drop)
            assert c.assignment(drop) == set()
            before = c.rebalance_count
            hold = False
            release.set()
            async with asyncio.timeout(60):  # (a hang guard)
                while c.rebalance_count == before:  # the held rebalance runs to its end
                    await asyncio.sleep(0.01)
            assert c.assignment(drop) == set(), "the unsubscribed topic's queues came back"
            again = await c.poll(1.0)
            assert [m for m in again if m.topic == drop] == []

    arun(main)


def test_a_topic_unsubscribed_while_the_rebalance_gives_up_one_of_its_queues_stays_dropped(
        cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # the other window (review of 41eb940): the rebalance shrinks the topic's share and waits on writing the
    # offset of the queue it gives up; the unsubscribe lands then, and the rebalance added the rest back
    keep, drop, group = "UnsubKeep2", "UnsubDrop2", "unsub-during-update"
    held, release = asyncio.Event(), asyncio.Event()
    shrink = False
    allocation = LitePullConsumer._allocation

    async def shrunk(self: LitePullConsumer, topic: str) -> set[MessageQueue] | None:
        mine = await allocation(self, topic)
        if topic == drop and shrink and mine:
            mine = {mq for mq in mine if mq.queue_id != 0}  # as if a member joined and took queue 0
        return mine

    monkeypatch.setattr(LitePullConsumer, "_allocation", shrunk)

    async def main() -> None:
        nonlocal shrink
        await create_topic(cluster, keep)
        await create_topic(cluster, drop)
        await send_all(cluster, drop, 8)
        cluster.wait_dispatched()
        async with LitePullConsumer(cluster.namesrv_addr, group, **{**FAST, "auto_commit_interval_s": 3600.0}) as c:
            c.subscribe(keep)
            c.subscribe(drop)
            got: list = []
            await poll_until(c, got, 8, "the messages of the topic to drop")
            persist = c.offsets.persist

            async def gated(mqs: list[MessageQueue]) -> None:
                if any(mq.topic == drop for mq in mqs) and not held.is_set():
                    held.set()
                    await release.wait()
                await persist(mqs)

            monkeypatch.setattr(c.offsets, "persist", gated)
            shrink = True
            c._rebalance_wanted.set()
            await asyncio.wait_for(held.wait(), 30)  # the rebalance writes the offset of the queue it gave up
            c.unsubscribe(drop)
            assert c.assignment(drop) == set()
            before = c.rebalance_count
            release.set()
            async with asyncio.timeout(60):  # (a hang guard)
                while c.rebalance_count == before:  # the held rebalance runs to its end
                    await asyncio.sleep(0.01)
            assert c.assignment(drop) == set(), "the unsubscribed topic's queues came back"
            await send_all(cluster, drop, 8)
            cluster.wait_dispatched()
            again = await c.poll(1.0)
            assert [m for m in again if m.topic == drop] == []

    arun(main)
