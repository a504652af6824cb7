"""QUERY_CONSUME_QUEUE's ``eval`` (mqadmin queryCq) with online groups, TAG and SQL92.

4.9.3's AdminBrokerProcessor.queryConsumeQueue asks the group's ExpressionMessageFilter only about entries
whose tagsCode is a consume queue extension address (at most Integer.MIN_VALUE - 1); any other entry is
added as it is, its ``eval`` left false.  A store without consume queue extensions (enableConsumeQueueExt,
off by default, and never on here) holds no such entry, so every entry's ``eval`` is false, whatever the
group subscribes to."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster
from test_python_push_consumer import FAST

from rocketstore.client import ConsumedMessage, ConsumeStatus, MessageSelector, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run

TOPIC = "CqEvalTopic"


def test_no_entry_evaluates_true_without_consume_queue_extensions(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        async def go() -> dict[str, dict[str, Any]]:
            async with Producer(cluster.namesrv_addr, "cq-eval-producer") as producer:
                for i in range(4):
                    await producer.send(TOPIC, f"m{i}".encode(), tags="TagB" if i % 2 else "TagA",
                                        properties={"n": str(i)}, queue_id=0)
            await asyncio.get_running_loop().run_in_executor(
                None, cluster.wait_until, lambda: cluster.broker.store.max_offset(TOPIC, 0) == 4, 20, "4 entries")

            def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "cq-eval-tag", {TOPIC: "TagB"}, handle, **FAST), \
                    PushConsumer(cluster.namesrv_addr, "cq-eval-all", {TOPIC: "*"}, handle, **FAST), \
                    PushConsumer(cluster.namesrv_addr, "cq-eval-sql", {TOPIC: MessageSelector.by_sql("n > 1")},
                                 handle, **FAST), \
                    AdminClient(cluster.namesrv_addr) as admin:
                async def online(group: str) -> dict[str, Any]:
                    while True:
                        answer = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 0, 0, 4, group)
                        if "subscriptionData" in answer:
                            return answer
                        await asyncio.sleep(0.1)

                return {group: await online(group) for group in ("cq-eval-tag", "cq-eval-all", "cq-eval-sql")}

        answers = run(asyncio.wait_for(go(), 60))
    for group, answer in answers.items():
        assert [e["eval"] for e in answer["queueData"]] == [False] * 4, group
    assert answers["cq-eval-tag"]["subscriptionData"]["subString"] == "TagB"
    assert answers["cq-eval-sql"]["subscriptionData"]["expressionType"] == "SQL92"
