"""A push consumer whose handler puts a value of the wrong type in its context (an ack_index that is no int,
a delay level that is no int, an orderly pause that is no number), or whose send-back fails with an
exception nobody foresaw, goes on consuming: the bad value is warned of once and taken as not set (4.9.3's
fields are ints, so a Java user cannot get there), the unforeseen failure is logged and the message handled
here again.  Before, the exception ended the consume task after the handler: the batch stayed held for
good (the offset stuck before it, nothing retried) or the orderly queue stopped consuming."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually
from test_python_push_consumer import FAST, FAST_DELAYS, LATER, SUCCESS, arun, send_all

from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer, current_context
from rocketstore.client import consume as consume_module
from rocketstore.client.push_types import ConcurrentlyContext, OrderlyContext

CONSUME_LOGGER = "rocketstore.client.consume"


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == CONSUME_LOGGER and r.levelno >= logging.WARNING]


def test_an_ack_index_that_is_no_int_is_warned_of_once_and_acknowledges_the_batch(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "HuntBadAckIndex", "hunt-bad-ack-index-group"
    cluster.create_topic(topic, queues=1)
    bad_values: list[object] = [None, "3", 2.5]
    calls: list[list[tuple[bytes, int]]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        context = current_context()
        assert isinstance(context, ConcurrentlyContext)
        context.ack_index = bad_values[(len(calls) - 1) % len(bad_values)]  # type: ignore[assignment]
        return SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 6)
        # all in the queue before the first pull, so that the batches are whole (a dispatcher a moment
        # behind, on a loaded machine, hands the first pull m0 alone)
        await asyncio.to_thread(cluster.wait_dispatched)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=2,
                                **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 6, 30,
                             "the offset past every message")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    # every batch acknowledged whole (not set: 4.9.3's Integer.MAX_VALUE), none retried
    assert sorted(item for c in calls for item in c) == [(f"m{i}".encode(), 0) for i in range(6)]
    warned = _warnings(caplog)
    assert len(warned) == 1 and "ack_index" in warned[0] and "not set" in warned[0], warned


def test_a_delay_level_that_is_no_int_sends_the_batch_back_as_not_set(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "HuntBadDelayLevel", "hunt-bad-delay-level-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        if len(calls) > 1:
            return SUCCESS
        context = current_context()
        assert isinstance(context, ConcurrentlyContext)
        context.delay_level_when_next_consume = "soon"  # type: ignore[assignment]
        return LATER

    async def go() -> None:
        await send_all(cluster, topic, 2)
        await asyncio.to_thread(cluster.wait_dispatched)  # all in the first pull: one batch (see above)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=2,
                                **FAST) as consumer:
            # (the first batch is whatever the first pull held; calls[0] only once the handler ran)
            await eventually(lambda: calls and sum(len(c) for c in calls) >= 2 + len(calls[0]), 30,
                             "the batch retried")
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 2, 10,
                             "the offset past both messages")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    retried = sorted(item for c in calls[1:] for item in c if item[1] > 0)
    assert retried == [(body, 1) for body, _ in calls[0]]
    warned = _warnings(caplog)
    assert len(warned) == 1 and "delay_level_when_next_consume" in warned[0], warned


def test_an_orderly_pause_that_is_no_number_keeps_the_queue_consuming(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "HuntBadSuspend", "hunt-bad-suspend-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        if len(calls) > 1:
            return SUCCESS
        context = current_context()
        assert isinstance(context, OrderlyContext)
        context.suspend_current_queue_s = "0.1"  # type: ignore[assignment]
        return LATER

    async def go() -> None:
        await send_all(cluster, topic, 2)
        await asyncio.to_thread(cluster.wait_dispatched)  # all in the first pull: one batch (see above)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                consume_batch_size=2, **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 2, 30,
                             "the batch handled again and committed")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    # the first batch handled again first, its count raised (it may have held m0 alone: see above)
    assert calls[1][:len(calls[0])] == [(body, 1) for body, _ in calls[0]]
    warned = _warnings(caplog)
    assert len(warned) == 1 and "suspend_current_queue_s" in warned[0], warned


def test_a_send_back_failing_unforeseen_is_logged_once_and_the_message_handled_again(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    topic, group = "HuntSendBackBroken", "hunt-send-back-broken-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []
    real_send_back = consume_module.send_back
    broken = {"left": 2}  # both messages' first send-back

    async def send_back(*args: object, **kwargs: object) -> None:
        if broken["left"] > 0:
            broken["left"] -= 1
            raise ValueError("unforeseen")
        await real_send_back(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(consume_module, "send_back", send_back)

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        # each message fails its first delivery, so both go through the broken send-back
        return LATER if all(m.reconsume_times == 0 for m in messages) else SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 2)
        await asyncio.to_thread(cluster.wait_dispatched)  # all in the first pull: one batch (see above)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=2,
                                **FAST) as consumer:
            await eventually(lambda: sum(len(c) for c in calls) >= 4, 30, "both messages handled again")
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 2, 10,
                             "the offset past both messages")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    # handled again here (local retry, count raised), as when the broker cannot be reached
    assert sorted(item for c in calls for item in c) == [(b"m0", 0), (b"m0", 1), (b"m1", 0), (b"m1", 1)]
    errors = [r for r in caplog.records if r.name == CONSUME_LOGGER and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ValueError" in errors[0].getMessage(), [r.getMessage() for r in errors]


def test_an_orderly_dlq_resend_failing_unforeseen_keeps_the_queue_consuming(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    topic, group = "HuntDlqResendBroken", "hunt-dlq-resend-broken-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []
    real_resend = consume_module.resend_to_retry_topic
    broken = {"left": 1}  # the first resend to the DLQ

    async def resend_to_retry_topic(*args: object, **kwargs: object) -> None:
        if broken["left"] > 0:
            broken["left"] -= 1
            raise ValueError("unforeseen")
        await real_resend(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(consume_module, "resend_to_retry_topic", resend_to_retry_topic)

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        return LATER if len(calls) == 1 else SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 1)
        # max_reconsume_times 0: the first failure goes to the DLQ, whose resend breaks once
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                max_reconsume_times=0, **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 1, 30,
                             "the message handled again and committed")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    assert calls == [[(b"m0", 0)], [(b"m0", 1)]]
    errors = [r for r in caplog.records if r.name == CONSUME_LOGGER and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ValueError" in errors[0].getMessage(), [r.getMessage() for r in errors]
