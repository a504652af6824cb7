"""Resetting a consumer group's offsets by time (mqadmin resetOffsetByTime; rocketstore's AdminClient and
``rocketstore group reset-offset``): with consumers connected the broker tells them (RESET_CONSUMER_CLIENT_OFFSET)
and they consume again from the new offsets - rocketstore's PushConsumer and the official C++ client;
with none connected the admin commits the offsets itself."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from serve_process import cli, wait_for

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting import RemotingCommand, RequestCode
from rocketstore.remoting.transport import run

QUEUES = 4
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000}


async def send(cluster: LocalCluster, topic: str, first: int, count: int) -> None:
    async with Producer(cluster.namesrv_addr, "reset-producer") as producer:
        for i in range(first, first + count):
            await producer.send(topic, f"m{i}".encode(), keys=f"k{i}")


def ends(cluster: LocalCluster, topic: str) -> dict[int, int]:
    return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)})


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))


def test_a_connected_push_consumer_consumes_again_from_the_reset_point(cluster: LocalCluster) -> None:
    topic, group = "ResetTopic", "reset-group"
    seen: Counter[str] = Counter()

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.update(m.body.decode() for m in batch)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> dict[tuple[str, str, int], int]:
        await send(cluster, topic, 0, 10)
        # the offset by time is the nearest message's (RocketMQ's getOffsetInQueueByTime), so the reset point
        # sits just before the second batch and well after the first
        await asyncio.sleep(2.0)
        reset_at = int(time.time() * 1000)
        await send(cluster, topic, 10, 10)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
            await asyncio.to_thread(wait_for, lambda: len(seen) == 20, 20, "every message once")
            end = ends(cluster, topic)
            await asyncio.to_thread(wait_for, lambda: committed(cluster, group, topic) == end, 20, "offsets at the end")
            async with AdminClient(cluster.namesrv_addr) as admin:
                table = await admin.reset_offset_by_time(group, topic, reset_at)
            await asyncio.to_thread(wait_for, lambda: sum(seen.values()) == 30, 20, "the last ten again")
            await asyncio.to_thread(wait_for, lambda: committed(cluster, group, topic) == end, 20, "offsets at the end")
        return table

    table = run(go())
    assert sorted(table) == [(topic, cluster.broker_name, q) for q in range(QUEUES)]
    assert sum(table.values()) == 10, "the offsets of the first message stored after the reset point"
    assert {body: n for body, n in seen.items() if n != 1} == {f"m{i}": 2 for i in range(10, 20)}


def test_without_consumers_the_admin_commits_the_offsets_itself(cluster: LocalCluster) -> None:
    topic, group = "ResetOfflineTopic", "reset-offline-group"
    run(send(cluster, topic, 0, 12))
    # "--to end" is each queue's end as its consume queue says, which dispatch fills a moment after the sends
    wait_for(lambda: sum(ends(cluster, topic).values()) == 12, 10, "the 12 messages in the consume queues")
    for q in range(QUEUES):
        cluster.call(lambda q=q: cluster.broker.offsets.commit(group, topic, q, 1))

    out = cli("group", "reset-offset", group, "-t", topic, "--to", "end", "-n", cluster.namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    end = ends(cluster, topic)
    assert {r["queueId"]: r["offset"] for r in json.loads(out.stdout)} == end
    assert committed(cluster, group, topic) == end, "skipped to the end of every queue"

    # back to the beginning, but only backwards: then forwards again is refused with --no-force
    out = cli("group", "reset-offset", group, "-t", topic, "--to", "0", "-n", cluster.namesrv_addr)
    assert out.returncode == 0, out.stderr
    assert committed(cluster, group, topic) == {q: 0 for q in range(QUEUES)}
    out = cli("group", "reset-offset", group, "-t", topic, "--to", "end", "--no-force", "-n", cluster.namesrv_addr)
    assert out.returncode == 0, out.stderr
    assert committed(cluster, group, topic) == {q: 0 for q in range(QUEUES)}, "--no-force never moves forwards"


def test_a_reset_for_a_topic_the_broker_lacks_or_a_group_without_offsets_is_refused(cluster: LocalCluster) -> None:
    run(send(cluster, "ResetKnownTopic", 0, 4))

    async def go() -> list[str]:
        errors = []
        async with AdminClient(cluster.namesrv_addr) as admin:
            conn = await admin.pool.get(cluster.broker_addr)
            for topic in ("NoSuchTopic", "ResetKnownTopic"):
                answer = await conn.request(RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
                    "topic": topic, "group": "never-consumed", "timestamp": "0", "isForce": "true"}), 5)
                errors.append(f"{answer.code} {answer.remark}")
        return errors

    assert run(go()) == ["1 [reset-offset] reset offset failed, no topic in this broker. topic=NoSuchTopic",
                         "1 THe consumer group <never-consumed> not exist"]

    async def through_admin() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.reset_offset_by_time("never-consumed", "ResetKnownTopic", 0)

    with pytest.raises(BrokerError, match="not exist"):
        run(through_admin())
    assert committed(cluster, "never-consumed", "ResetKnownTopic") == {}, "nothing committed for it"


@requires_cpp_client
def test_a_connected_cpp_consumer_consumes_again_after_a_reset(cluster: LocalCluster, tmp_path: Path) -> None:
    """The official C++ client reads the reset table in its own form (ResetOffsetBodyForC), drops its queues
    and pulls again from the new offsets."""
    topic, group = "ResetCppTopic", "reset-cpp-group"
    run(send(cluster, topic, 0, 8))
    consumer = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
    try:
        consumer.collect_until(lambda seen: len(messages(seen)) >= 8, 30, "the eight messages")
        end = ends(cluster, topic)
        wait_for(lambda: committed(cluster, group, topic) == end, 30, "the C++ consumer's offsets at the end")

        async def reset() -> dict[tuple[str, str, int], int]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.reset_offset_by_time(group, topic, 0)

        assert set(run(reset()).values()) == {0}
        consumer.collect_until(lambda seen: len(messages(seen)) >= 16, 60, "the eight messages again")
        consumer.stop()
    finally:
        consumer.kill()
    assert Counter(m["body"] for m in messages(consumer.seen)) == {f"m{i}": 2 for i in range(8)}
