"""The clients' ``namespace`` (4.9.3's ClientConfig.namespace / NamespaceUtil) and ``client_ip``
(ClientConfig.clientIP) against a real name server + broker: a namespaced producer's message lands in
``NS%T``, a namespaced push consumer of group ``G`` gets it as topic ``T`` with its offsets under ``NS%G`` and
its failures in ``%RETRY%NS%G``, a plain consumer of ``NS%T`` sees it too, and the client id's ip is the one
given."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.namespace import with_namespace, without_namespace

TEST_TIMEOUT_S = 90.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}
NS = "NsH23"


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def test_wrap_as_namespace_util() -> None:
    assert with_namespace(NS, "T") == f"{NS}%T"
    assert with_namespace(NS, f"{NS}%T") == f"{NS}%T"
    assert with_namespace(NS, "%RETRY%G") == f"%RETRY%{NS}%G"
    assert with_namespace(NS, "%DLQ%G") == f"%DLQ%{NS}%G"
    assert with_namespace(NS, f"%RETRY%{NS}%G") == f"%RETRY%{NS}%G"
    assert with_namespace(NS, "RMQ_SYS_TRACE_TOPIC") == "RMQ_SYS_TRACE_TOPIC"
    assert with_namespace(NS, "CID_RMQ_SYS_X") == "CID_RMQ_SYS_X"
    assert with_namespace("", "T") == "T" and with_namespace(None, "T") == "T"
    assert without_namespace(NS, f"{NS}%T") == "T"
    assert without_namespace(NS, f"%RETRY%{NS}%G") == "%RETRY%G"
    assert without_namespace(NS, "Other%T") == "Other%T"
    assert without_namespace(None, f"{NS}%T") == f"{NS}%T"


def test_namespaced_producer_and_push_consumer(cluster: LocalCluster) -> None:
    topic, group = "Hunt23NsTopic", "hunt23-ns-group"
    wire_topic, wire_group = f"{NS}%{topic}", f"{NS}%{group}"

    async def scenario() -> None:
        got: list[ConsumedMessage] = []
        plain: list[ConsumedMessage] = []
        failed_once: set[str] = set()

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                got.append(m)
                if m.msg_id not in failed_once:  # the first delivery fails: back through %RETRY%NS%G
                    failed_once.add(m.msg_id)
                    return ConsumeStatus.RECONSUME_LATER
            return ConsumeStatus.CONSUME_SUCCESS

        async def handle_plain(messages: list[ConsumedMessage]) -> ConsumeStatus:
            plain.extend(messages)
            return ConsumeStatus.CONSUME_SUCCESS

        async with Producer(cluster.namesrv_addr, "hunt23-ns-producer", namespace=NS) as producer:
            result = await producer.send(topic, b"namespaced", tags="A")
            assert result.message_queue.topic == topic  # handed back without the namespace
            queues = await producer.fetch_publish_message_queues(topic)
            assert queues and {q.topic for q in queues} == {topic}
            again = await producer.send(topic, b"to a queue", message_queue=queues[0])
            assert again.message_queue == queues[0]
        async with AdminClient(cluster.namesrv_addr) as admin:
            topics = await admin.topic_list()
            assert wire_topic in topics and topic not in topics, topics

            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, namespace=NS,
                                    client_ip="10.11.12.13", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                    **FAST) as consumer, \
                    PushConsumer(cluster.namesrv_addr, "hunt23-ns-plain", {wire_topic: "*"}, handle_plain,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET", **FAST):
                assert consumer.group == wire_group
                assert consumer.client_id.startswith("10.11.12.13@")
                await eventually(lambda: bool(consumer.assignment(topic)), 30, "the namespaced queues held")
                assert {mq.topic for mq in consumer.assignment()} <= {topic, f"%RETRY%{group}"}
                await eventually(lambda: len(got) >= 4, 60, "both messages, then their redeliveries")
                await eventually(lambda: len(plain) >= 2, 30, "the plain consumer of NS%T gets both")
                assert {m.topic for m in got} == {topic}, [m.topic for m in got]
                assert {m.topic for m in plain} == {wire_topic}
                assert sorted(m.body for m in got) == [b"namespaced", b"namespaced",
                                                       b"to a queue", b"to a queue"]
                assert any(m.reconsume_times > 0 for m in got)
                _, connections = await admin.consumer_connections(wire_group)
                assert [c.client_id for c in connections] == [consumer.client_id]
                topics = await admin.topic_list()
                assert f"%RETRY%{wire_group}" in topics and f"%RETRY%{group}" not in topics, topics

                async def committed() -> bool:
                    progress = await admin.consume_progress(wire_group, wire_topic)
                    return sum(q.consumer_offset for q in progress.queues if q.topic == wire_topic) >= 2

                for _ in range(100):
                    if await committed():
                        break
                    await asyncio.sleep(0.2)
                assert await committed(), "the offsets are under NS%G"

    arun(scenario)
