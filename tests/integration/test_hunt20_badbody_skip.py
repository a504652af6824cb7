"""A pulled message whose body is flagged COMPRESSED but does not inflate (corrupt zlib data, or more than
MAX_INFLATED_BODY_BYTES) no longer stops its queue: a push consumer and a lite pull consumer skip it (an
ERROR naming topic, queue id, queue offset and msgId, the first and every 1000th of a run), deliver the
messages after it in the same pull, and move the group's offset past it; a PullConsumer's result carries
the good messages and the undecodable ones apart (``PullResult.undecodable``); the tools and the Spark
broker session, which must not go past a message silently, raise a MessageDecodeError naming it.

Real name server and broker; the bad bodies go in as raw SEND_MESSAGE_V2 frames flagged COMPRESSED, which
the broker stores as they came."""

from __future__ import annotations

import logging
import zlib

import pytest
from local_cluster import LocalCluster, eventually, run_within
from test_hunt19_clientlimits_inflate import BOMB, _raw_send

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    PullConsumer,
    PullStatus,
    PushConsumer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.route import MessageQueue
from rocketstore.errors import MessageDecodeError
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.spark.broker_io import BrokerSession

TEST_TIMEOUT_S = 90.0
FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
#: queue offsets 0..5: good, corrupt, bomb, corrupt, good, good; the bad ones are 1, 2 and 3
BODIES = [zlib.compress(b"good 0"), b"not zlib at all", BOMB, zlib.compress(b"cut short" * 100)[:-6],
          zlib.compress(b"good 4"), zlib.compress(b"good 5")]
GOOD = {0: b"good 0", 4: b"good 4", 5: b"good 5"}
BAD = [1, 2, 3]


def _put_bodies(cluster: LocalCluster, topic: str) -> list[str]:
    """Create *topic* (one queue) and store BODIES in it, flagged COMPRESSED; their offset msgIds."""
    cluster.create_topic(topic, queues=1)

    async def go() -> list[str]:
        pool = ConnectionPool()
        try:
            ids = []
            for body in BODIES:
                answer = await pool.request(cluster.broker_addr, _raw_send(topic, body, {"WAIT": "true"}), 10)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
                ids.append(answer.ext_fields["msgId"])
            return ids
        finally:
            await pool.close()

    ids = run_within(go, TEST_TIMEOUT_S)
    cluster.wait_dispatched()
    return ids


def _committed(cluster: LocalCluster, group: str, topic: str) -> int:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic))).get(0, -1)


def _pushed_past(cluster: LocalCluster, topic: str, group: str, wanted: int, end: int) -> dict[int, bytes]:
    """The messages (body by queue offset) a push consumer of *group* is handed from *topic* (one queue),
    once it has *wanted* of them and the group's committed offset is *end* (past every message)."""
    seen: dict[int, bytes] = {}

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.update((m.queue_offset, m.body) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
            await eventually(lambda: len(seen) >= wanted, 30, "the readable messages consumed")
            await eventually(lambda: _committed(cluster, group, topic) == end, 30,
                             "the committed offset past every message")

    run_within(go, TEST_TIMEOUT_S)
    return seen


def _polled_past(cluster: LocalCluster, topic: str, group: str, wanted: int, end: int) -> dict[int, bytes]:
    """:func:`_pushed_past` for a lite pull consumer: what it polls, once it has *wanted* messages and its
    commit took the group's offset to *end*."""
    async def go() -> dict[int, bytes]:
        polled: dict[int, bytes] = {}
        consumer = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
        consumer.subscribe(topic)
        async with consumer:
            async def more() -> bool:
                polled.update((m.queue_offset, m.body) for m in await consumer.poll(0.2))
                return len(polled) >= wanted

            await eventually(more, 30, "the readable messages polled")
            await consumer.commit_sync()
            await eventually(lambda: _committed(cluster, group, topic) == end, 30,
                             "the committed offset past every message")
        return polled

    return run_within(go, TEST_TIMEOUT_S)


def _skip_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.ERROR and "does not inflate" in r.getMessage()]


def _assert_logged(caplog: pytest.LogCaptureFixture, topic: str, ids: list[str]) -> None:
    """One ERROR for the run of three bad messages (the first), naming it; the other two at DEBUG."""
    errors = _skip_errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    text = errors[0].getMessage()
    assert topic in text and "queue 0" in text and "offset 1" in text and ids[1] in text, text
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and "does not inflate" in r.getMessage()]
    assert any(ids[3] in r.getMessage() for r in debug)


def test_a_push_consumer_skips_an_undecodable_message_and_moves_on(cluster: LocalCluster,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.client.pull_loop")
    topic, group = "Hunt20BadBodyPush", "hunt20-badbody-push"
    ids = _put_bodies(cluster, topic)
    assert _pushed_past(cluster, topic, group, len(GOOD), len(BODIES)) == GOOD
    _assert_logged(caplog, topic, ids)


def test_a_lite_pull_consumer_skips_an_undecodable_message_and_moves_on(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.client.pull_loop")
    topic, group = "Hunt20BadBodyLite", "hunt20-badbody-lite"
    ids = _put_bodies(cluster, topic)
    assert _polled_past(cluster, topic, group, len(GOOD), len(BODIES)) == GOOD
    _assert_logged(caplog, topic, ids)


def test_a_pull_consumer_result_carries_the_undecodable_messages_apart(cluster: LocalCluster) -> None:
    topic = "Hunt20BadBodyPull"
    ids = _put_bodies(cluster, topic)
    mq = MessageQueue(topic, cluster.broker_name, 0)

    async def go():  # type: ignore[no-untyped-def]
        async with PullConsumer(cluster.namesrv_addr, "hunt20-badbody-pull") as consumer:
            return await consumer.pull(mq, 0, 32), await consumer.pull(mq, 2, 1)

    whole, one_bad = run_within(go, TEST_TIMEOUT_S)
    assert whole.status == PullStatus.FOUND and whole.next_begin_offset == len(BODIES)
    assert {m.queue_offset: m.body for m in whole.messages} == GOOD
    assert [u.message.queue_offset for u in whole.undecodable] == BAD
    assert [u.message.msg_id for u in whole.undecodable] == [ids[i] for i in BAD]
    assert [u.message.body for u in whole.undecodable] == [BODIES[i] for i in BAD]  # as stored
    assert "inflates past" in whole.undecodable[1].reason
    assert one_bad.status == PullStatus.FOUND and one_bad.messages == [] and one_bad.next_begin_offset == 3
    assert [u.message.queue_offset for u in one_bad.undecodable] == [2]


def test_the_tools_and_the_spark_session_refuse_to_pass_an_undecodable_message(cluster: LocalCluster) -> None:
    topic = "Hunt20BadBodyTools"
    ids = _put_bodies(cluster, topic)

    async def tools() -> tuple[BaseException | None, BaseException | None, list[bytes]]:
        errors: list[BaseException | None] = []
        async with AdminClient(cluster.namesrv_addr) as admin:
            for call in (admin.message_by_offset(topic, cluster.broker_name, 0, 1),
                         admin.queue_messages(topic, cluster.broker_name, 0, begin_offset=0)):
                try:
                    await call
                    errors.append(None)
                except MessageDecodeError as exc:
                    errors.append(exc)
            tail = await admin.queue_messages(topic, cluster.broker_name, 0, begin_offset=4)
        return errors[0], errors[1], [m.body for m in tail.messages]

    by_offset, listing, tail = run_within(tools, TEST_TIMEOUT_S)
    for error in (by_offset, listing):  # queryMsgByOffset, queryMsgByQueue-like listing
        assert isinstance(error, MessageDecodeError), "a tool did not name the undecodable message"
        assert "offset 1" in str(error) and ids[1] in str(error) and topic in str(error)
    assert tail == [b"good 4", b"good 5"]

    with BrokerSession(cluster.namesrv_addr, "hunt20-badbody-spark") as session:
        mq = MessageQueue(topic, cluster.broker_name, 0)
        assert [m.body for m in session.pull(mq, 4, 2, "*").messages] == [b"good 4", b"good 5"]
        with pytest.raises(MessageDecodeError) as caught:
            session.pull(mq, 0, 32, "*")
    assert "offset 1" in str(caught.value) and ids[1] in str(caught.value) and topic in str(caught.value)


def test_a_skipped_message_last_in_its_pull_is_passed_once_the_ones_before_it_are_consumed(
        cluster: LocalCluster) -> None:
    """good, then bad as the queue's last message: consuming the good one commits past the bad one at once,
    not only when a later pull comes back empty (a long poll away: a consumer stopped meanwhile would
    pull the bad message again)."""
    topic, group = "Hunt20BadBodyTail", "hunt20-badbody-tail"
    cluster.create_topic(topic, queues=1)

    async def go() -> int:
        pool = ConnectionPool()
        try:
            for body in (BODIES[0], BODIES[1]):
                answer = await pool.request(cluster.broker_addr, _raw_send(topic, body, {"WAIT": "true"}), 10)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
        finally:
            await pool.close()
        # both in the consume queue before the consumer starts: its first pull must hand over both (a pull
        # while the bad one was still being dispatched found the good one alone: its offset 1, once in CI)
        cluster.wait_dispatched()
        seen: list[bytes] = []

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            seen.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS

        # the empty pull after the first one is held by the broker for the whole test
        settings = dict(FAST, long_poll_ms=120_000)
        mq = MessageQueue(topic, cluster.broker_name, 0)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **settings) as consumer:
            await eventually(lambda: seen == [b"good 0"] and consumer.offsets.read_memory(mq) >= 1, 30,
                             "the good message consumed and its offset taken")
            return consumer.offsets.read_memory(mq)

    assert run_within(go, TEST_TIMEOUT_S) == 2
