"""``namespace`` on the lite pull consumer, the orderly sends and the CLI's send / consume, against a real
name server + broker (4.9.3's DefaultLitePullConsumer withNamespace / resetTopic, DefaultMQProducer's
send(msg, selector, arg) with the queues parsed out of the namespace)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from cli_calls import ok, ok_json
from local_cluster import LocalCluster, run_within

from rocketstore.client import LitePullConsumer, MessageQueue, Producer
from rocketstore.client.admin import AdminClient

NS = "NsH23b"


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, 60.0)  # type: ignore[arg-type]


def test_orderly_send_and_lite_pull_in_a_namespace(cluster: LocalCluster) -> None:
    topic, group = "Hunt23NsLite", "hunt23-ns-lite"
    cluster.create_topic(f"{NS}%{topic}", 2)

    async def scenario() -> None:
        seen: list[list[MessageQueue]] = []

        def pick(queues: list[MessageQueue], key: object) -> MessageQueue:
            seen.append(list(queues))
            return queues[1]

        async with Producer(cluster.namesrv_addr, "hunt23-ns-lite-p", namespace=NS) as producer:
            result = await producer.send_orderly(topic, b"ordered", 7, selector=pick)
            assert {q.topic for q in seen[0]} == {topic}  # the selector sees the user's names
            assert result.message_queue == MessageQueue(topic, seen[0][1].broker_name, 1)
            await producer.send_oneway(topic, b"oneway", queue_id=1)
        async with LitePullConsumer(cluster.namesrv_addr, group, namespace=NS, client_ip="10.9.8.7",
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
            assert consumer.client_id.startswith("10.9.8.7@")
            queues = await consumer.fetch_message_queues(topic)
            assert {q.topic for q in queues} == {topic}
            consumer.assign([q for q in queues if q.queue_id == 1])
            assert {q.topic for q in consumer.assignment()} == {topic}
            got = []
            for _ in range(20):
                got += await consumer.poll(1.0)
                if len(got) >= 2:
                    break
            assert sorted(m.body for m in got) == [b"oneway", b"ordered"]
            assert {m.topic for m in got} == {topic}
            await consumer.seek_to_begin(queues[1])
            assert await consumer.committed(queues[1]) >= -1

    arun(scenario)


def test_cli_send_and_consume_with_namespace(capsys: pytest.CaptureFixture[str],
                                            cluster: LocalCluster) -> None:
    topic = "Hunt23NsCli"
    results = ok_json(capsys, cluster, "send", topic, "hello-cli", "--namespace", NS)
    assert results[0]["status"] == "SEND_OK" and results[0]["topic"] == topic

    async def topics() -> list[str]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.topic_list()

    listed = cluster.run(topics())
    assert f"{NS}%{topic}" in listed and topic not in listed
    out = ok(capsys, cluster, "consume", topic, "-g", "hunt23-ns-cli-g", "--namespace", NS, "--max", "1",
             "--timeout", "5")
    assert "hello-cli" in out
