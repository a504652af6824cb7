"""Message trace options of 4.9.3's Java clients that ours lacked or wrote differently (hunt 25, apiparity):

* DefaultLitePullConsumer's enableMsgTrace / customizedTraceTopic: ``LitePullConsumer(enable_trace=True,
  trace_topic=...)`` writes, for every pulled batch, what 4.9.3's lite pull consumer writes (its consume hook
  runs right after the pull): a SubBefore and a SubAfter per message, with the same requestId, success,
  contextCode 0 (costTime the few ms between the two);
* in a namespace every trace record names the group (Pub, SubBefore, SubAfter, EndTransaction) and the
  topic (Pub, EndTransaction) without it, as 4.9.3's four trace hooks do (NamespaceUtil.withoutNamespace);
  ours wrote ``<namespace>%<group>`` and ``<namespace>%<topic>``;
* DefaultLitePullConsumer's pollTimeoutMillis: ``poll()`` without a timeout waits ``poll_timeout_s``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, run_within, stored_messages

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Producer,
    PushConsumer,
    TransactionMessage,
    TransactionProducer,
)
from rocketstore.client.lite_pull_consumer import LitePullConsumer, LitePullConsumerSettings
from rocketstore.client.trace import RMQ_SYS_TRACE_TOPIC, TraceContext, TraceType, decode_trace_data

TEST_TIMEOUT_S = 60.0
WAIT_S = 20.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}

#: the trace message 4.9.3's DefaultLitePullConsumer (setNamespace("nsA"), group lt-ns-group,
#: setEnableMsgTrace(true)) wrote for one pulled message of key "key-0", captured from 4.9.3 (timestamps,
#: requestId and msgId as they were): the group without the namespace, SubAfter right after SubBefore
JAVA_LITE_TRACE = (
    "SubBefore\x011795856532115\x01null\x01lt-ns-group"
    "\x01FD00000000000000000000000000000275E05FFD2B278CFC1A930001"
    "\x01FD00000000000000000000000000000275E05FFD2B278CFC14810000\x010\x01key-0\x02"
    "SubAfter\x01FD00000000000000000000000000000275E05FFD2B278CFC1A930001"
    "\x01FD00000000000000000000000000000275E05FFD2B278CFC14810000\x010\x01true\x01key-0\x010\x011795856532115"
    "\x01lt-ns-group\x02")
#: the Pub 4.9.3's DefaultMQProducer(namespace "nsC", group jns-prod, enableMsgTrace) wrote for a send to
#: topic JNs, captured from 4.9.3: group and topic without the namespace
JAVA_NS_PUB = ("Pub\x011795856560013\x01DefaultRegion\x01jns-prod\x01JNs"
               "\x01FD000000000000000000000000000002797E5FFD2B278CFC87780000\x01TagA\x01jkey"
               "\x01127.0.0.1:37011\x014\x0163\x010\x017F0000010000909300000000000010AB\x01true\x02")


def arun(fn: Any) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)


def trace_records(cluster: LocalCluster, topic: str = RMQ_SYS_TRACE_TOPIC) -> list[TraceContext]:
    stored = stored_messages(cluster, topic, queues=8)
    return [ctx for m in stored for ctx in decode_trace_data(m.body.decode())]


def wait_records(cluster: LocalCluster, want: Any, what: str,
                 topic: str = RMQ_SYS_TRACE_TOPIC) -> list[TraceContext]:
    deadline = time.monotonic() + WAIT_S
    while not want(records := trace_records(cluster, topic)):
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {records}"
        time.sleep(0.05)
    return records


def test_the_java_captures_decode_as_the_records_checked_below() -> None:
    before, after = decode_trace_data(JAVA_LITE_TRACE)
    assert (before.trace_type, before.group, after.trace_type, after.group) == (
        TraceType.SubBefore, "lt-ns-group", TraceType.SubAfter, "lt-ns-group")
    assert (after.success, after.context_code, after.request_id) == (True, 0, before.request_id)
    [pub] = decode_trace_data(JAVA_NS_PUB)
    assert (pub.group, pub.bean.topic) == ("jns-prod", "JNs")


def test_a_traced_lite_pull_consumer_writes_sub_before_and_after_per_pulled_message(tmp_path: Path) -> None:
    topic, group, custom = "LiteTraced", "lite-traced", "LiteTraceTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(f"nsL%{topic}", queues=1)

        async def go() -> list[str]:
            async with Producer(cluster.namesrv_addr, "lite-trace-producer", namespace="nsL") as producer:
                sent = [(await producer.send(topic, f"m{i}".encode(), keys=f"key-{i}")).msg_id
                        for i in range(3)]
            got: list[str] = []
            async with LitePullConsumer(cluster.namesrv_addr, group, enable_trace=True, trace_topic=custom,
                                        namespace="nsL", **FAST) as consumer:
                consumer.subscribe(topic)
                while len(got) < len(sent):
                    got.extend(m.msg_id for m in await consumer.poll(1.0))
            assert sorted(got) == sorted(sent)
            return sent

        sent = arun(go)
        records = wait_records(cluster, lambda r: len(r) >= 2 * len(sent), "the lite consumer's trace",
                               custom)
        befores = {r.bean.msg_id: r for r in records if r.trace_type is TraceType.SubBefore}
        afters = {r.bean.msg_id: r for r in records if r.trace_type is TraceType.SubAfter}
        assert sorted(befores) == sorted(afters) == sorted(sent)
        for i, msg_id in enumerate(sent):
            before, after = befores[msg_id], afters[msg_id]
            # as the 4.9.3 capture: the group without the namespace, region null, no retry, the key
            assert (before.group, before.region_id, before.bean.retry_times, before.bean.keys) == (
                group, None, 0, f"key-{i}")
            assert (after.group, after.success, after.context_code, after.bean.keys) == (
                group, True, 0, f"key-{i}")
            assert after.request_id == before.request_id and after.cost_time_ms >= 0
        # nothing went to the default trace topic
        assert trace_records(cluster) == []


def test_traces_in_a_namespace_name_group_and_topic_without_it(tmp_path: Path) -> None:
    topic, space = "NsTraced", "nsT"
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=200,
                      transaction_timeout_ms=300) as cluster:
        async def go() -> tuple[str, str]:
            async with Producer(cluster.namesrv_addr, "ns-trace-producer", enable_trace=True,
                                namespace=space) as producer:
                sent = (await producer.send(topic, b"plain", keys="ns-key")).msg_id

            def check(message: TransactionMessage) -> LocalTransactionState:
                return LocalTransactionState.COMMIT_MESSAGE

            def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
                return LocalTransactionState.COMMIT_MESSAGE

            async with TransactionProducer(cluster.namesrv_addr, "ns-trace-tx", check, enable_trace=True,
                                           namespace=space) as tx:
                half = (await tx.send_in_transaction(topic, b"tx", execute, None)).msg_id
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                if sent in [m.msg_id for m in messages]:
                    done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "ns-trace-push", {topic: "*"}, handle,
                                    enable_trace=True, namespace=space, **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return sent, half

        sent, half = arun(go)
        records = wait_records(
            cluster, lambda r: {(x.trace_type, x.bean.msg_id) for x in r} >= {
                (TraceType.Pub, sent), (TraceType.SubBefore, sent), (TraceType.SubAfter, sent),
                (TraceType.Pub, half), (TraceType.EndTransaction, half)}, "every record")
        by = {(r.trace_type, r.bean.msg_id): r for r in records}
        pub, end = by[(TraceType.Pub, sent)], by[(TraceType.EndTransaction, half)]
        assert (pub.group, pub.bean.topic) == ("ns-trace-producer", topic)  # 4.9.3: see JAVA_NS_PUB
        half_pub = by[(TraceType.Pub, half)]
        assert (half_pub.group, half_pub.bean.topic) == ("ns-trace-tx", topic)
        assert (end.group, end.bean.topic) == ("ns-trace-tx", topic)
        sub_groups = {by[(TraceType.SubBefore, sent)].group, by[(TraceType.SubAfter, sent)].group}
        assert sub_groups == {"ns-trace-push"}


def test_poll_without_a_timeout_waits_poll_timeout_s() -> None:
    async def go() -> list[float]:
        consumer = LitePullConsumer("127.0.0.1:1", "poll-timeout-group", poll_timeout_s=0.25)
        waited: list[float] = []

        async def take(timeout_s: float) -> None:
            waited.append(timeout_s)

        consumer.consumption.take = take  # type: ignore[method-assign]
        consumer.started = True  # (poll only checks that it runs; nothing is connected)
        assert await consumer.poll() == [] and await consumer.poll(2.0) == []
        return waited

    assert asyncio.run(go()) == [0.25, 2.0]
    assert LitePullConsumerSettings().poll_timeout_s == 5.0  # pollTimeoutMillis' default
