"""Each request of a consumer (and of a transactional producer) is bounded as 4.9.3's client bounds it, not
by the consumer's ``timeout_s``, against a real broker and name server (a request code of the broker made
slow, or a name server stand-in forwarding to the real one):

- route look-ups, heartbeats, unregistrations, GET_CONSUMER_LIST_BY_GROUP and CHECK_CLIENT_CONFIG by
  ``mq_client_api_timeout_s`` (ClientConfig.mqClientApiTimeout, 3 s; MQClientInstance);
- QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET of the broker offset store by 5 s (RemoteBrokerOffsetStore);
- LOCK_BATCH_MQ by 1 s (RebalanceImpl);
- a push consumer's CONSUMER_SEND_MSG_BACK by 5 s (DefaultMQPushConsumerImpl.sendMessageBack);
- a long-polling pull by consumerTimeoutMillisWhenSuspend (30 s; the lite pull consumer's setting).

The consumers run with ``timeout_s=0.3`` and the slow request is answered after 0.8 s or more: before these
bounds, it always timed out.  Outcomes only: no durations asserted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within
from test_hunt18_producer_errors import _with_namesrv
from test_lite_pull_consumer import poll_until
from test_python_push_consumer import FAST_DELAYS, committed, create_topic, send_all, stored

from rocketstore.client import (
    ConsumedMessage,
    ConsumeStatus,
    ConsumerSettingsError,
    LitePullConsumer,
    MessageQueue,
    PullConsumer,
    PushConsumer,
    TransactionProducer,
)
from rocketstore.client.consumer import MessageSelector
from rocketstore.client.errors import NoRouteError
from rocketstore.client.offset_store import RemoteOffsetStore
from rocketstore.client.push_types import ConsumeFromWhere
from rocketstore.message.system_topics import SCHEDULE_TOPIC
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection

TEST_TIMEOUT_S = 60.0
#: the consumers' own timeout: every slow request below takes longer
SHORT_S = 0.3
SLOW_S = 0.8
#: short periods; pulls held 0.5 s, so the old bound of a pull was 0.5 + SHORT_S
QUICK: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                         "route_refresh_interval_s": 0.5, "long_poll_ms": 500, "pull_delay_on_error_s": 0.2,
                         "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, "timeout_s": SHORT_S}


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS, enable_property_filter=True) as c:
        yield c


def slow_down(cluster: LocalCluster, code: int, delay_s: float) -> list[int]:
    """The broker answers *code* *delay_s* later than it would (its own handler, after a sleep); the list
    returned counts the answers it gave."""
    answered: list[int] = []

    def install() -> None:
        handler = cluster.broker.router.handlers[code]

        async def slow(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
            await asyncio.sleep(delay_s)
            response = await handler(connection, request)
            answered.append(code)
            return response

        cluster.broker.router.handlers[code] = slow

    cluster.call(install)
    return answered


async def consume_one(cluster: LocalCluster, topic: str, group: str, namesrv: str | None = None,
                      **settings: Any) -> list[ConsumedMessage]:
    """Start a push consumer of *topic* (QUICK settings, then *settings*), send one message, return what it
    got once it got it."""
    got: list[ConsumedMessage] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer(namesrv or cluster.namesrv_addr, group, {topic: "*"}, handle,
                            **{**QUICK, **settings}):
        await send_all(cluster, topic, 1)
        await eventually(lambda: len(got) >= 1, 30, f"the message of {topic}")
    return got


@pytest.mark.parametrize("code", [RequestCode.HEART_BEAT, RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                  RequestCode.QUERY_CONSUMER_OFFSET], ids=["heartbeat", "consumer_ids", "offset"])
def test_a_push_consumer_waits_for_its_brokers_group_answers_by_their_own_bounds(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, code: int) -> None:
    topic = f"Hunt18Slow{code}"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        answered = slow_down(cluster, code, SLOW_S)
        with caplog.at_level(logging.WARNING, logger="rocketstore.client"):
            got = await consume_one(cluster, topic, f"hunt18-slow-{code}")
        assert [m.body for m in got] == [b"m0"] and answered
        # none timed out (a heartbeat the client gave up on still registers it: the broker took it later)
        timed_out = f"request code {int(code)} within"
        assert not [r for r in caplog.records if timed_out in r.getMessage()], caplog.text

    arun(go)


def test_a_pull_the_broker_answers_late_is_waited_for_by_push_and_lite_pull_consumers(
        cluster: LocalCluster) -> None:
    topic = "Hunt18SlowPull"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        slow_down(cluster, RequestCode.PULL_MESSAGE, 1.2)  # past the old bound: long_poll_ms + timeout_s
        got = await consume_one(cluster, topic, "hunt18-slow-pull-push")
        assert [m.body for m in got] == [b"m0"]
        lite = LitePullConsumer(cluster.namesrv_addr, "hunt18-slow-pull-lite", **QUICK)
        lite.subscribe(topic, "*")
        async with lite:
            polled: list[ConsumedMessage] = []
            await poll_until(lite, polled, 1, "the lite pull consumer's message")
            assert [m.body for m in polled] == [b"m0"]

    arun(go)


def test_route_look_ups_of_a_consumer_are_bounded_by_mq_client_api_timeout(cluster: LocalCluster) -> None:
    topic = "Hunt18ConsumerSlowRoute"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)

        async def use(namesrv: str) -> None:
            # every look-up of the topic's route answered 1 s late: within mq_client_api_timeout_s (3 s)
            got = await consume_one(cluster, topic, "hunt18-slow-route", namesrv)
            assert [m.body for m in got] == [b"m0"]

        await _with_namesrv(cluster.namesrv_addr, topic, [1.0], use)

    arun(go)


def test_check_client_config_is_bounded_by_mq_client_api_timeout(cluster: LocalCluster) -> None:
    topic = "Hunt18SlowCheckConfig"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        answered = slow_down(cluster, RequestCode.CHECK_CLIENT_CONFIG, SLOW_S)
        got: list[ConsumedMessage] = []

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            got.extend(messages)
            return ConsumeStatus.CONSUME_SUCCESS

        async with PushConsumer(cluster.namesrv_addr, "hunt18-slow-check", {topic: MessageSelector.by_sql("TRUE")},
                                handle, **QUICK):  # start raised RequestTimeoutError before
            await send_all(cluster, topic, 1)
            await eventually(lambda: len(got) >= 1, 30, "the message selected by SQL92")
        assert answered

    arun(go)


def test_an_unregistration_the_broker_answers_late_is_not_a_failure(cluster: LocalCluster,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    topic = "Hunt18SlowUnregister"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        answered = slow_down(cluster, RequestCode.UNREGISTER_CLIENT, SLOW_S)
        with caplog.at_level(logging.WARNING, logger="rocketstore.client"):
            await consume_one(cluster, topic, "hunt18-slow-unregister")
        assert len(answered) == 4  # the sender's and the consumer's: each its group, then CLIENT_INNER_PRODUCER
        assert not [r for r in caplog.records if "unregister" in r.getMessage()], caplog.text

    arun(go)


def test_the_broker_offset_store_waits_5_s_for_offset_queries_and_commits(cluster: LocalCluster) -> None:
    topic, group = "Hunt18SlowOffsets", "hunt18-slow-offsets"
    mq = MessageQueue(topic, cluster.broker_name, 0)

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        await send_all(cluster, topic, 3)
        slow_down(cluster, RequestCode.UPDATE_CONSUMER_OFFSET, SLOW_S)
        slow_down(cluster, RequestCode.QUERY_CONSUMER_OFFSET, SLOW_S)
        async with PullConsumer(cluster.namesrv_addr, group, timeout_s=SHORT_S) as consumer:
            store = RemoteOffsetStore(consumer)
            store.update(mq, 2, increase_only=True)
            await store.persist([mq])  # raised RequestTimeoutError before
            assert committed(cluster, group, topic) == {0: 2}
            store.remove(mq)
            assert await store.read_store(mq) == 2

    arun(go)


def test_queue_locks_are_bounded_by_1_s_whatever_timeout_s(cluster: LocalCluster) -> None:
    topic = "Hunt18SlowLock"
    mq = MessageQueue(topic, cluster.broker_name, 0)

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        async with PushConsumer(cluster.namesrv_addr, "hunt18-slow-lock", {topic: "*"}, handle, orderly=True,
                                **{**QUICK, "timeout_s": 5.0}) as consumer:
            assert (await consumer._lock([mq]))[0] == {mq}
            answered = slow_down(cluster, RequestCode.LOCK_BATCH_MQ, 1.5)
            # RebalanceImpl's 1 s: no lock from an answer later than that, even with timeout_s 5 s
            assert (await consumer._lock([mq]))[0] == set()
            await eventually(lambda: answered, 10, "the late answer")

    arun(go)


def test_a_push_consumers_send_back_waits_5_s_so_the_message_is_not_also_resent(cluster: LocalCluster) -> None:
    """A send-back timed out after ``timeout_s`` was followed by the consumer's own resend while the broker
    still took the send-back: two retries of one message."""
    topic, group = "Hunt18SlowSendBack", "hunt18-slow-send-back"
    handled: list[int] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend(m.reconsume_times for m in messages)
        return ConsumeStatus.RECONSUME_LATER if messages[0].reconsume_times == 0 else ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        answered = slow_down(cluster, RequestCode.CONSUMER_SEND_MSG_BACK, SLOW_S)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **QUICK):
            await send_all(cluster, topic, 1)
            await eventually(lambda: answered and 1 in handled, 30, "the retry handled")
        cluster.wait_dispatched()
        # delay level 3: the schedule topic's queue 2 holds each retry written
        assert len(stored(cluster, SCHEDULE_TOPIC, 2)) == 1

    arun(go)


def test_a_transaction_producer_bounds_route_look_ups_by_mq_client_api_timeout(cluster: LocalCluster) -> None:
    topic = "Hunt18TxSlowRoute"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        errors: list[BaseException] = []

        async def use(namesrv: str) -> None:
            producer = TransactionProducer(namesrv, "hunt18-tx-slow-route", lambda message: None,
                                           timeout_s=10.0, mq_client_api_timeout_s=0.5)
            try:
                await producer.send_in_transaction(topic, b"never", lambda message, arg: None)
            except NoRouteError as exc:
                errors.append(exc)
            finally:
                await producer.close()

        await _with_namesrv(cluster.namesrv_addr, topic, [2.0], use)
        assert len(errors) == 1, errors

    arun(go)
    cluster.wait_dispatched()
    assert stored(cluster, topic) == []


def test_the_new_bounds_are_settings_checked_as_their_neighbours(tmp_path: Path) -> None:
    addr = "127.0.0.1:9876"

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    for bad in ({"mq_client_api_timeout_s": 0}, {"mq_client_api_timeout_s": -1.0}, {"timeout_s": 0}):
        with pytest.raises(ConsumerSettingsError, match=next(iter(bad))):
            PushConsumer(addr, "hunt18-bad", {"T": "*"}, handle, **bad)
        with pytest.raises(ConsumerSettingsError, match=next(iter(bad))):
            LitePullConsumer(addr, "hunt18-bad", **bad)
    # 4.9.3's checkConfig: consumerTimeoutMillisWhenSuspend not below brokerSuspendMaxTimeMillis
    with pytest.raises(ConsumerSettingsError, match="consumer_timeout_when_suspend_s"):
        LitePullConsumer(addr, "hunt18-bad", long_poll_ms=40_000)
    with pytest.raises(ConsumerSettingsError, match="consumer_timeout_when_suspend_s"):
        LitePullConsumer(addr, "hunt18-bad", consumer_timeout_when_suspend_s=10.0)
    LitePullConsumer(addr, "hunt18-ok", long_poll_ms=40_000, consumer_timeout_when_suspend_s=40.0)
    with pytest.raises(ValueError, match="mq_client_api_timeout_s"):
        PullConsumer(addr, "hunt18-bad", mq_client_api_timeout_s=0)
    # a plain PullConsumer (the tools', the Spark source's) looks routes up within its timeout_s unless told
    assert PullConsumer(addr, "hunt18-plain", timeout_s=7.0).routes.timeout_s == 7.0
    assert PullConsumer(addr, "hunt18-plain", timeout_s=7.0, mq_client_api_timeout_s=2.0).routes.timeout_s == 2.0
    with pytest.raises(ValueError, match="mq_client_api_timeout_s"):
        TransactionProducer(addr, "hunt18-bad", lambda message: None, mq_client_api_timeout_s=0)
    # the defaults are 4.9.3's, whatever timeout_s says
    consumer = PushConsumer(addr, "hunt18-defaults", {"T": "*"}, handle, timeout_s=10.0)
    assert consumer.consumer.routes.timeout_s == consumer.settings.mq_client_api_timeout_s == 3.0
    assert consumer.settings.consumer_timeout_when_suspend_s == 30.0
    lite = LitePullConsumer(addr, "hunt18-defaults", timeout_s=10.0)
    assert lite.consumer.routes.timeout_s == 3.0 and lite.settings.consumer_timeout_when_suspend_s == 30.0
    # the running info lists DefaultLitePullConsumer's field, as 4.9.3's object2Properties does
    assert lite.running_info().properties["consumerTimeoutMillisWhenSuspend"] == "30000"
    assert TransactionProducer(addr, "hunt18-defaults", lambda message: None).routes.timeout_s == 3.0
