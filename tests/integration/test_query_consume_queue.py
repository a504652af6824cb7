"""QUERY_CONSUME_QUEUE (mqadmin queryCq) through AdminClient and ``rocketstore topic cq``: the raw entries of
one queue as the store holds them, with a group's subscription, and its refusals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from local_cluster import LocalCluster
from serve_process import cli
from test_python_push_consumer import FAST

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.message.hashing import tags_code
from rocketstore.remoting.transport import run

TOPIC = "CqTopic"


def test_query_consume_queue_lists_the_entries_the_store_holds(cluster: LocalCluster) -> None:
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "cq-producer") as producer:
            for i in range(6):
                await producer.send(TOPIC, f"m{i}".encode(), tags=f"T{i % 2}", queue_id=1)

    run(send())
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 1) == 6, 20, "six entries in queue 1")
    stored = cluster.call(lambda: cluster.broker.store.get(TOPIC, 1, 0, 32).messages)

    async def ask() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            some = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 1, 2, 3)
            past = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 1, 6, 3)
            grouped = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 1, 0, 1, "nobody-group")
            with pytest.raises(BrokerError, match="7@CqTopic is not exist!"):
                await admin.query_consume_queue(cluster.broker_addr, TOPIC, 7, 0, 1)
            return some, past, grouped

    some, past, grouped = run(ask())
    assert (some["minQueueIndex"], some["maxQueueIndex"]) == (0, 6)
    assert some["queueData"] == [{"eval": False, "physicOffset": m.commit_log_offset, "physicSize": m.store_size,
                                  "tagsCode": tags_code(m.tags or "")} for m in stored[2:5]]
    assert past == {"queueData": [], "remark": "Index 6 of 1@CqTopic is not exist!"}
    assert grouped["filterData"] == "nobody-group@CqTopic is not online!" and len(grouped["queueData"]) == 1

    out = cli("topic", "cq", TOPIC, "-q", "1", "-i", "4", "-c", "5", "-n", cluster.namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    assert [e["physicOffset"] for e in json.loads(out.stdout)["queueData"]] == [m.commit_log_offset for m in stored[4:]]
    out = cli("topic", "cq", TOPIC, "-q", "1", "-n", cluster.namesrv_addr)
    assert out.returncode == 0 and out.stdout.count("commitlog offset") == 6, out.stdout + out.stderr


def test_no_entry_evaluates_true_with_or_without_an_online_group(cluster: LocalCluster) -> None:
    """``eval`` is false on every entry, for a group subscribed to TagB, one subscribed to every tag and no
    group: 4.9.3 evaluates only entries that point into a consume queue extension, which this store has
    not (test_hunt14_sql_query_cq.py)."""
    async def go() -> tuple[list[bool], list[bool], list[bool], list[str | None]]:
        async with Producer(cluster.namesrv_addr, "cq-producer") as producer:
            for i in range(6):
                await producer.send(TOPIC, f"m{i}".encode(), tags="TagB" if i % 3 == 0 else "TagA", queue_id=0)
        await asyncio.get_running_loop().run_in_executor(
            None, cluster.wait_until, lambda: cluster.broker.store.max_offset(TOPIC, 0) == 6, 20, "six entries")

        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        async with PushConsumer(cluster.namesrv_addr, "cq-tag-b", {TOPIC: "TagB"}, handle, **FAST), \
                PushConsumer(cluster.namesrv_addr, "cq-all", {TOPIC: "*"}, handle, **FAST), \
                AdminClient(cluster.namesrv_addr) as admin:
            async def online(group: str) -> dict[str, Any]:
                while True:
                    answer = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 0, 0, 6, group)
                    if "subscriptionData" in answer:
                        return answer
                    await asyncio.sleep(0.1)

            tag_b, everything = await online("cq-tag-b"), await online("cq-all")
            offline = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 0, 0, 6)
        return ([e["eval"] for e in tag_b["queueData"]], [e["eval"] for e in everything["queueData"]],
                [e["eval"] for e in offline["queueData"]], [tag_b["subscriptionData"]["subString"]])

    tag_b, everything, offline, sub = run(asyncio.wait_for(go(), 60))
    assert tag_b == [False] * 6
    assert everything == [False] * 6
    assert offline == [False] * 6
    assert sub == ["TagB"]
