"""Message trace end to end with rocketstore's own clients: a traced Producer, PushConsumer and
TransactionProducer against an in-process name server + broker, the trace read back with
``rocketstore trace MSG_ID`` (a subprocess, as a user runs it) and with AdminClient.query_message_trace.

Trace records are sent in the background, so every look at the trace topic polls with a deadline; a
client's shutdown flushes its trace, so once the clients are closed the records are on their way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, run_within, stored_messages
from serve_process import cli

from rocketstore.broker.config import load_broker_conf
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    OutgoingMessage,
    Producer,
    PushConsumer,
    TransactionMessage,
    TransactionProducer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError, NoRouteError
from rocketstore.client.trace import RMQ_SYS_TRACE_TOPIC, TraceType
from rocketstore.client.trace_query import MessageTrace

TEST_TIMEOUT_S = 90.0
WAIT_S = 30.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
#: every delay level 1 s, so a retry comes back quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
FAST_CHECKS: dict[str, Any] = {"transaction_check_interval_ms": 200, "transaction_timeout_ms": 300}


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


async def wait_for_trace(namesrv: str, msg_id: str, want: Callable[[MessageTrace], bool], what: str,
                         trace_topic: str = RMQ_SYS_TRACE_TOPIC) -> MessageTrace:
    """Query the trace of *msg_id* until *want* holds (the trace topic may not exist yet at first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    last: MessageTrace | None = None
    async with AdminClient(namesrv) as admin:
        while True:
            try:
                last = await admin.query_message_trace(msg_id, trace_topic=trace_topic)
                if want(last):
                    return last
            except NoRouteError:
                pass
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last trace: {last}")
            await asyncio.sleep(0.1)


def types_of(trace: MessageTrace) -> list[str]:
    return sorted(str(v.context.trace_type) for v in trace.views)


def trace_cli(namesrv: str, msg_id: str, *extra: str) -> Any:
    out = cli("trace", msg_id, "--namesrv", namesrv, "--json", *extra)
    assert out.returncode == 0, f"rocketstore trace failed ({out.returncode}): {out.stderr[-2000:]}"
    return json.loads(out.stdout)


def by_type(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        grouped.setdefault(r["type"], []).append(r)
    return grouped


def test_a_traced_send_and_its_consumption_show_as_pub_sub_before_and_sub_after(tmp_path: Path) -> None:
    topic, pgroup, cgroup, count = "TraceTopic", "trace-producer", "trace-consumer", 3
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[list[Any], list[str]]:
            async with Producer(cluster.namesrv_addr, pgroup, enable_trace=True) as producer:
                sent = [await producer.send(topic, f"order {i}".encode(), tags="TagA", keys=f"order-{i} shop-7")
                        for i in range(count)]
            got: list[str] = []
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.msg_id for m in messages)
                if len(set(got)) >= count:
                    done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, cgroup, {topic: "*"}, handle, enable_trace=True,
                                    **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return sent, got

        sent, got = arun(go)
        assert sorted(set(got)) == sorted(s.msg_id for s in sent)
        for s in sent:
            arun(lambda s=s: wait_for_trace(cluster.namesrv_addr, s.msg_id,
                                            lambda t: types_of(t) == ["Pub", "SubAfter", "SubBefore"],
                                            f"the three records of {s.msg_id}"))

        first = sent[0]
        printed = trace_cli(cluster.namesrv_addr, first.msg_id)
        assert printed["msgId"] == first.msg_id and printed["traceTopic"] == RMQ_SYS_TRACE_TOPIC
        records = by_type(printed["traces"])
        [pub], [before], [after] = records["Pub"], records["SubBefore"], records["SubAfter"]
        assert (pub["topic"], pub["groupName"], pub["msgId"], pub["offsetMsgId"], pub["tags"], pub["keys"]) == (
            topic, pgroup, first.msg_id, first.offset_msg_id, "TagA", "order-0 shop-7")
        assert (pub["storeHost"], pub["status"], pub["success"], pub["msgType"], pub["bodyLength"]) == (
            cluster.broker_addr, "success", True, "Normal_Msg", len(b"order 0"))
        assert pub["regionId"] == "DefaultRegion" and pub["costTime"] >= 0 and pub["clientHost"]
        assert (before["groupName"], before["msgId"], before["keys"], before["retryTimes"]) == (
            cgroup, first.msg_id, "order-0 shop-7", 0)
        assert (after["groupName"], after["msgId"], after["keys"], after["status"], after["contextCode"]) == (
            cgroup, first.msg_id, "order-0 shop-7", "success", 0)
        assert after["requestId"] == before["requestId"] and after["requestId"]
        assert before["timestamp"] <= after["timestamp"] and pub["timestamp"] <= before["timestamp"]

        # the table mqadmin queryMsgTraceById prints: the Pub under the producer group, the Sub under the consumer's
        table = cli("trace", first.msg_id, "--namesrv", cluster.namesrv_addr)
        assert table.returncode == 0, table.stderr
        lines = [line.split() for line in table.stdout.splitlines() if line.strip()]
        assert lines[0] == ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"]
        assert lines[1][0:2] == ["Pub", pgroup] and lines[1][-1] == "success"
        assert lines[2] == ["#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"]
        assert lines[3][0:2] == ["Sub", cgroup] and lines[3][-1] == "success"

        # the trace messages are keyed by the traced msgIds and keys: a query by the user's key finds them
        trace_messages = stored_messages(cluster, RMQ_SYS_TRACE_TOPIC, queues=4)
        assert trace_messages and all(first.msg_id in (m.keys or "").split() or first.msg_id not in m.body.decode()
                                      for m in trace_messages)
        by_key = arun(lambda: _query_by_key(cluster.namesrv_addr, RMQ_SYS_TRACE_TOPIC, "shop-7"))
        assert by_key


async def _query_by_key(namesrv: str, topic: str, key: str) -> list[Any]:
    async with AdminClient(namesrv) as admin:
        return await admin.query_by_key(topic, key)


def test_a_failed_and_a_raising_handler_call_are_traced_with_their_outcome(tmp_path: Path) -> None:
    topic, group = "TraceRetryTopic", "trace-retry-consumer"
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        async def go() -> tuple[str, str]:
            async with Producer(cluster.namesrv_addr, "trace-retry-producer") as producer:
                later = (await producer.send(topic, b"later", keys="k-later")).msg_id
                boom = (await producer.send(topic, b"boom", keys="k-boom")).msg_id
            calls: dict[str, int] = {}
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                m = messages[0]
                calls[m.msg_id] = calls.get(m.msg_id, 0) + 1
                if calls[m.msg_id] == 1:
                    if m.body == b"boom":
                        raise RuntimeError("handler failure for the trace")
                    return ConsumeStatus.RECONSUME_LATER
                if len(calls) == 2 and all(n >= 2 for n in calls.values()):
                    done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, enable_trace=True, **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return later, boom

        later, boom = arun(go)
        for msg_id, failed_code in ((later, 4), (boom, 2)):  # ConsumeReturnType FAILED, EXCEPTION
            trace = arun(lambda m=msg_id: wait_for_trace(
                cluster.namesrv_addr, m, lambda t: types_of(t).count("SubAfter") == 2, f"two handler calls of {m}"))
            afters = [v.context for v in trace.views if v.context.trace_type is TraceType.SubAfter]
            befores = [v for v in trace.views if v.context.trace_type is TraceType.SubBefore]
            assert [(a.success, a.context_code) for a in afters] == [(False, failed_code), (True, 0)]
            assert sorted(v.bean.retry_times for v in befores) == [0, 1]  # the redelivery counts its retry
            assert "Pub" not in types_of(trace)  # that producer did not trace


def test_a_traced_transaction_shows_its_half_message_and_its_end(tmp_path: Path) -> None:
    topic, group = "TraceTxTopic", "trace-tx-producer"
    COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                                LocalTransactionState.UNKNOW)
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> list[str]:
            def check(message: TransactionMessage) -> LocalTransactionState:
                return COMMIT

            def execute(message: TransactionMessage, state: Any) -> LocalTransactionState:
                return state  # type: ignore[no-any-return]

            async with TransactionProducer(cluster.namesrv_addr, group, check, enable_trace=True) as producer:
                ids = []
                for state in (COMMIT, ROLLBACK, UNKNOW):
                    result = await producer.send_in_transaction(topic, state.value.encode(), execute, state,
                                                                tags="TagTx", keys=f"tx-{state.value}")
                    ids.append(result.msg_id)
                # the UNKNOW one is checked back and answered COMMIT; its trace is sent while the producer runs
                await wait_for_trace(cluster.namesrv_addr, ids[2],
                                     lambda t: types_of(t).count("EndTransaction") >= 2, "the checked end")
            return ids

        committed, rolled_back, checked_id = arun(go)
        for msg_id, local_state in ((committed, "COMMIT_MESSAGE"), (rolled_back, "ROLLBACK_MESSAGE")):
            trace = arun(lambda m=msg_id: wait_for_trace(
                cluster.namesrv_addr, m, lambda t: types_of(t) == ["EndTransaction", "Pub"], f"the trace of {m}"))
            [pub] = [v for v in trace.views if v.context.trace_type is TraceType.Pub]
            [end] = [v for v in trace.views if v.context.trace_type is TraceType.EndTransaction]
            assert (pub.bean.msg_type.name if pub.bean.msg_type else None, pub.context.group) == ("Trans_Msg_Half", group)
            assert (end.bean.transaction_state, end.bean.from_transaction_check, end.bean.transaction_id) == (
                local_state, False, msg_id)
            assert (end.bean.topic, end.bean.tags, end.bean.keys, end.bean.store_host, end.context.group) == (
                topic, "TagTx", f"tx-{local_state}", cluster.broker_addr, group)
            assert end.bean.msg_type is not None and end.bean.msg_type.name == "Trans_msg_Commit"

        # UNKNOW after the send, then COMMIT answering the broker's check
        trace = arun(lambda: wait_for_trace(cluster.namesrv_addr, checked_id,
                                            lambda t: types_of(t).count("EndTransaction") >= 2, "the checked end"))
        ends = [v.bean for v in trace.views if v.context.trace_type is TraceType.EndTransaction]
        assert (ends[0].transaction_state, ends[0].from_transaction_check) == ("UNKNOW", False)
        assert ("COMMIT_MESSAGE", True) in [(e.transaction_state, e.from_transaction_check) for e in ends[1:]]

        printed = trace_cli(cluster.namesrv_addr, committed)
        [end_json] = by_type(printed["traces"])["EndTransaction"]
        assert (end_json["transactionState"], end_json["fromTransactionCheck"], end_json["msgType"]) == (
            "COMMIT_MESSAGE", False, "Trans_msg_Commit")
        table = cli("trace", committed, "--namesrv", cluster.namesrv_addr)
        assert table.returncode == 0 and "EndTransaction" in table.stdout and "COMMIT_MESSAGE" in table.stdout


def test_without_trace_nothing_reaches_the_trace_topic_and_a_custom_trace_topic_is_used(tmp_path: Path) -> None:
    topic, custom = "PlainTopic", "CustomTraceTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> str:
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with Producer(cluster.namesrv_addr, "plain-producer") as producer:
                await producer.send(topic, b"untraced")
            async with PushConsumer(cluster.namesrv_addr, "plain-consumer", {topic: "*"}, handle, **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            async with Producer(cluster.namesrv_addr, "custom-producer", enable_trace=True,
                                trace_topic=custom) as producer:
                return (await producer.send(topic, b"traced elsewhere")).msg_id

        traced = arun(go)
        trace = arun(lambda: wait_for_trace(cluster.namesrv_addr, traced, lambda t: types_of(t) == ["Pub"],
                                            "the Pub in the custom topic", trace_topic=custom))
        assert trace.views[0].bean.msg_id == traced
        cluster.wait_dispatched()
        assert cluster.call(lambda: RMQ_SYS_TRACE_TOPIC not in cluster.broker.topics.table)
        assert stored_messages(cluster, RMQ_SYS_TRACE_TOPIC, queues=8) == []
        assert trace_cli(cluster.namesrv_addr, traced, "--trace-topic", custom)["traces"][0]["type"] == "Pub"
        out = cli("trace", traced, "--namesrv", cluster.namesrv_addr)  # the default topic does not exist
        assert out.returncode == 1 and "RMQ_SYS_TRACE_TOPIC" in out.stderr and "Traceback" not in out.stderr


        async def every_trace_topic() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.query_message_trace(traced, trace_topic=None)

        with pytest.raises(ClientError, match="no trace topic exists"):  # a custom topic is not one of them
            arun(every_trace_topic)


def test_a_broker_with_trace_topic_enable_serves_traces_without_auto_create(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("traceTopicEnable=true\nmsgTraceTopicName=TraceOnly\nautoCreateTopicEnable=false\n")
    broker_cfg, _, _ = load_broker_conf(str(conf), store_dir=str(tmp_path / "unused"))
    assert (broker_cfg.trace_topic_enable, broker_cfg.msg_trace_topic_name) == (True, "TraceOnly")
    with LocalCluster(tmp_path / "store", trace_topic_enable=True, msg_trace_topic_name="TraceOnly",
                      auto_create_topic_enable=False) as cluster:
        async def go() -> str:
            async with AdminClient(cluster.namesrv_addr) as admin:
                route = await admin.route("TraceOnly")
                assert [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [(1, 1)]
                await admin.create_topic("Orders", broker_addr=cluster.broker_addr)
                deadline = asyncio.get_running_loop().time() + WAIT_S
                while True:  # the broker registers the new topic with the name server in the background
                    try:
                        await admin.route("Orders")
                        break
                    except NoRouteError:
                        if asyncio.get_running_loop().time() > deadline:
                            raise
                        await asyncio.sleep(0.05)
            async with Producer(cluster.namesrv_addr, "p", enable_trace=True, trace_topic="TraceOnly") as producer:
                return (await producer.send("Orders", b"x")).msg_id

        msg_id = arun(go)
        arun(lambda: wait_for_trace(cluster.namesrv_addr, msg_id, lambda t: types_of(t) == ["Pub"],
                                    "the Pub in the broker's trace topic", trace_topic="TraceOnly"))


def test_orderly_and_batch_sends_are_traced_and_a_broker_with_trace_on_false_gets_no_pub(tmp_path: Path) -> None:
    topic = "TraceKindsTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[str, str]:
            async with Producer(cluster.namesrv_addr, "kinds-producer", enable_trace=True) as producer:
                orderly = await producer.send_orderly(topic, b"in order", "shard-1", tags="TagO", keys="o-1")
                batch = await producer.send_batch(topic, [OutgoingMessage(b"b0"), OutgoingMessage(b"b1")])
            return orderly.msg_id, batch.msg_id

        orderly_id, batch_ids = arun(go)
        [pub] = arun(lambda: wait_for_trace(cluster.namesrv_addr, orderly_id, lambda t: types_of(t) == ["Pub"],
                                            "the orderly send's Pub")).views
        assert (pub.bean.tags, pub.bean.keys, pub.bean.store_host) == ("TagO", "o-1", cluster.broker_addr)
        second = batch_ids.split(",")[1]
        [pub] = arun(lambda: wait_for_trace(cluster.namesrv_addr, second, lambda t: types_of(t) == ["Pub"],
                                            "the batch's Pub")).views
        assert (pub.bean.msg_id, pub.bean.tags, pub.bean.keys) == (batch_ids, None, None)

    # traceOn=false in broker.conf: every send answer says TRACE_ON=false and producers record no Pub (4.9.3's
    # SendMessageTraceHookImpl); consumers still trace, which shows the producer's trace had time to arrive
    with LocalCluster(tmp_path / "store-off", trace_on=False) as cluster:
        async def quiet() -> str:
            async with Producer(cluster.namesrv_addr, "quiet-producer", enable_trace=True) as producer:
                msg_id = (await producer.send(topic, b"quiet")).msg_id
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "quiet-consumer", {topic: "*"}, handle, enable_trace=True,
                                    **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return msg_id

        msg_id = arun(quiet)
        trace = arun(lambda: wait_for_trace(cluster.namesrv_addr, msg_id,
                                            lambda t: "SubAfter" in types_of(t), "the consumer's trace"))
        assert types_of(trace) == ["SubAfter", "SubBefore"]
