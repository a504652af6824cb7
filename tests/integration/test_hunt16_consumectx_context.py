"""What a push consumer's handler can tell the consumer through ``current_context()`` (4.9.3's
ConsumeConcurrentlyContext / ConsumeOrderlyContext), against an in-process name server + broker: the ack
index of a batch, the delay level of its send-backs (-1: the DLQ), an orderly queue's suspension and
auto-commit; and every handler form that worked before still works, context or not."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually
from test_python_push_consumer import FAST_DELAYS, LATER, SUCCESS, arun, stored

from rocketstore.client import (
    ConcurrentlyContext,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageModel,
    OrderlyContext,
    Producer,
    PushConsumer,
    current_context,
)
from rocketstore.client.admin import AdminClient
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.consumer_bodies import CMResult

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 2000, "pull_delay_on_error_s": 0.2,
                        "local_retry_delay_s": 0.5, "lock_renew_interval_s": 0.5}


async def send(cluster: LocalCluster, topic: str, bodies: list[bytes]) -> None:
    async with Producer(cluster.namesrv_addr, "consumectx-producer") as producer:
        for body in bodies:
            await producer.send(topic, body)
    # every message in its queue before a consumer's first pull, so that they come as one batch (a dispatcher
    # a moment behind, on a loaded machine, hands the first pull the first message alone)
    await asyncio.to_thread(cluster.wait_dispatched)


def sent_back(cluster: LocalCluster, group: str) -> list[StoredMessage]:
    """What waits for a retry: in %RETRY%<group>, or still in the delay levels' queues."""
    return stored(cluster, f"%RETRY%{group}") + [m for level in range(18)
                                                 for m in stored(cluster, "SCHEDULE_TOPIC_XXXX", level)]


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def test_ack_index_sends_back_only_the_messages_after_it(cluster: LocalCluster) -> None:
    topic, group = "CtxAck", "ctx-ack-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int, str]]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:  # sync: runs on the consumer's pool
        calls.append([(m.body, m.reconsume_times, m.stored_topic) for m in messages])
        context = current_context()
        assert isinstance(context, ConcurrentlyContext)
        assert context.message_queue.topic == messages[0].stored_topic
        if len(calls) == 1:
            context.ack_index = 1  # the first two consumed; the other two go back for a retry
        return SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"m0", b"m1", b"m2", b"m3"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=4,
                                **FAST) as consumer:
            await eventually(lambda: sum(len(c) for c in calls) >= 6, 30, "the two retries")
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 4, 10,
                             "the topic's offset past the whole batch")
        assert calls[0] == [(b"m0", 0, topic), (b"m1", 0, topic), (b"m2", 0, topic), (b"m3", 0, topic)]
        retried = sorted(item for c in calls[1:] for item in c)
        assert retried == [(b"m2", 1, f"%RETRY%{group}"), (b"m3", 1, f"%RETRY%{group}")]

    arun(go)


def test_ack_index_past_the_batch_or_below_it() -> None:
    """An ack index past the end acknowledges all (the default); -1 or less acknowledges none."""
    assert ConcurrentlyContext(None).acked(4) == 4  # type: ignore[arg-type]
    for index, acked in ((99, 4), (3, 4), (0, 1), (-1, 0), (-7, 0)):
        assert ConcurrentlyContext(None, ack_index=index).acked(4) == acked  # type: ignore[arg-type]
    assert current_context() is None, "no context outside a handler call"


def test_broadcasting_drops_what_the_ack_index_leaves_out(cluster: LocalCluster, tmp_path: Path) -> None:
    """BROADCASTING: the messages after the ack index are dropped (nothing is sent back) and the offset moves
    past the whole batch, as 4.9.3's processConsumeResult."""
    topic, group = "CtxBroadcast", "ctx-broadcast-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[bytes]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([m.body for m in messages])
        context = current_context()
        assert isinstance(context, ConcurrentlyContext)
        context.ack_index = 0
        return SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"b0", b"b1", b"b2"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=3,
                                message_model=MessageModel.BROADCASTING, offset_dir=str(tmp_path / "offsets"),
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 3, 20,
                             "the offset past the batch")
        assert calls == [[b"b0", b"b1", b"b2"]]
        cluster.wait_dispatched()
        assert sent_back(cluster, group) == []

    arun(go)


def test_delay_level_minus_one_sends_straight_to_the_dlq(cluster: LocalCluster) -> None:
    topic, group = "CtxDlq", "ctx-dlq-group"
    cluster.create_topic(topic, queues=1)
    calls: list[tuple[bytes, int]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:  # async: runs on the loop
        calls.extend((m.body, m.reconsume_times) for m in messages)
        context = current_context()
        assert isinstance(context, ConcurrentlyContext)
        context.delay_level_when_next_consume = -1
        return LATER

    async def go() -> None:
        await send(cluster, topic, [b"doomed"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
            await eventually(lambda: stored(cluster, f"%DLQ%{group}"), 20, "the message in the DLQ")
        dlq = stored(cluster, f"%DLQ%{group}")
        assert [m.body for m in dlq] == [b"doomed"]
        assert calls == [(b"doomed", 0)], "never retried"
        cluster.wait_dispatched()
        assert sent_back(cluster, group) == []

    arun(go)


def test_orderly_suspend_time_from_the_context(cluster: LocalCluster) -> None:
    """The consumer's own pause is 0.01 s; the handler asks for 1.5 s, and the retry waits at least that."""
    topic, group = "CtxSuspend", "ctx-suspend-group"
    cluster.create_topic(topic, queues=1)
    calls: list[tuple[bytes, int, float]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append((messages[0].body, messages[0].reconsume_times, time.monotonic()))
        context = current_context()
        assert isinstance(context, OrderlyContext)
        if len(calls) == 1:
            context.suspend_current_queue_s = 1.5
            return LATER
        return SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"again"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                suspend_current_queue_s=0.01, **FAST):
            await eventually(lambda: len(calls) >= 2, 20, "the second call")
        assert [(b, t) for b, t, _ in calls] == [(b"again", 0), (b"again", 1)]
        assert calls[1][2] - calls[0][2] >= 1.5

    arun(go)


def test_orderly_auto_commit_off_keeps_the_offset_until_a_committing_success(cluster: LocalCluster) -> None:
    topic, group = "CtxCommit", "ctx-commit-group"
    cluster.create_topic(topic, queues=1)
    box: list[PushConsumer] = []
    seen: list[tuple[bytes, int]] = []  # (body, committed offset in memory when it was handed over)

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        context = current_context()
        assert isinstance(context, OrderlyContext)
        seen.append((messages[0].body, box[0].offsets.read_memory(context.message_queue)))
        context.auto_commit = messages[0].body == b"c2"
        return SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"c0", b"c1", b"c2"])
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST)
        box.append(consumer)
        async with consumer:
            await eventually(lambda: len(seen) >= 3, 20, "three calls")
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 3, 10,
                             "the commit of all three")
        start = seen[0][1]
        assert seen == [(b"c0", start), (b"c1", start), (b"c2", start)], "c0 and c1 were not committed"

    arun(go)


def test_consume_directly_reports_an_orderly_handlers_auto_commit(cluster: LocalCluster) -> None:
    """CONSUME_MESSAGE_DIRECTLY to an orderly consumer answers with the auto_commit its handler left in the
    context (4.9.3's ConsumeMessageOrderlyService.consumeMessageDirectly); a concurrent one says true."""
    topic = "CtxDirect"
    cluster.create_topic(topic, queues=1)
    contexts: list[object] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        context = current_context()
        contexts.append(context)
        if isinstance(context, OrderlyContext):
            context.auto_commit = False
        return SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "consumectx-producer") as producer:
            sent = await producer.send(topic, b"direct")
        for orderly in (True, False):
            group = f"ctx-direct-{orderly}"
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=orderly,
                                    **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
                await eventually(lambda c=consumer: len(c.assignment(topic)) == 1, 20, "the queue taken")
                result = await admin.consume_message_directly(group, consumer.client_id, sent.offset_msg_id)
                assert result.consume_result == CMResult.SUCCESS
                assert (result.order, result.auto_commit) == (orderly, not orderly)
        assert {type(c) for c in contexts} == {OrderlyContext, ConcurrentlyContext}

    arun(go)


class AsyncCallable:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, messages: list[ConsumedMessage]) -> ConsumeStatus:
        self.bodies.extend(m.body for m in messages)
        return SUCCESS


def test_existing_handler_forms_still_work(cluster: LocalCluster) -> None:
    """A plain function, a partial, a lambda and an object with an async __call__, none of them looking at
    the context, are called as before (one message each) and their successes committed."""
    topic = "CtxForms"
    cluster.create_topic(topic, queues=1)
    got: dict[str, list[bytes]] = {"plain": [], "partial": [], "lambda": []}

    def plain(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got["plain"].extend(m.body for m in messages)
        return SUCCESS

    def tagged(name: str, messages: list[ConsumedMessage]) -> ConsumeStatus:
        got[name].extend(m.body for m in messages)
        return SUCCESS

    obj = AsyncCallable()
    handlers: dict[str, Any] = {
        "plain": plain, "partial": functools.partial(tagged, "partial"),
        "lambda": lambda messages: got["lambda"].extend(m.body for m in messages) or SUCCESS, "object": obj}

    async def go() -> None:
        await send(cluster, topic, [b"f0", b"f1"])
        for name, handler in handlers.items():
            async with PushConsumer(cluster.namesrv_addr, f"ctx-forms-{name}", {topic: "*"}, handler,
                                    **FAST) as consumer:
                await eventually(lambda c=consumer: c.offset_table(topic).get((topic, "broker-a", 0)) == 2,
                                 20, f"{name} consumed both")
        assert got == {"plain": [b"f0", b"f1"], "partial": [b"f0", b"f1"], "lambda": [b"f0", b"f1"]}
        assert obj.bodies == [b"f0", b"f1"]

    arun(go)
