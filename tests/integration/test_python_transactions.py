"""Transactional messages end to end: rocketstore.client.TransactionProducer against an in-process name
server + broker, the store read on the cluster's loop.

Commit and rollback right after the send (committed messages reach pull and push consumers); UNKNOW
settled by the broker's check (commit, rollback, or discarded to TRANS_CHECK_MAX_TIME_TOPIC after
transactionCheckMax checks); an exception in the local transaction; a producer that left before the check
(the half message waits for the next producer of the group); a half message stored without its slave
(rolled back unexecuted); ACL credentials; periodic heartbeats.  The consume queues are filled by an
asynchronous dispatcher, so every look at the store polls with a deadline; the tests assert no durations.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from local_cluster import LocalCluster, acl_home, run_within

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    MessageQueue,
    NoRouteError,
    PullConsumer,
    PullStatus,
    PushConsumer,
    SessionCredentials,
    TransactionMessage,
    TransactionProducer,
    TransactionSendResult,
)
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import StoredMessage, SysFlag

T = TypeVar("T")

#: the patience of one whole test and of one wait within it (deadlines, not expectations)
TEST_TIMEOUT_S = 90.0
WAIT_S = 30.0
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW
#: a broker that checks often and soon: half messages older than 300 ms, every 200 ms
FAST_CHECKS: dict[str, Any] = {"transaction_check_interval_ms": 200, "transaction_timeout_ms": 300}
#: a broker whose check service does not come round within a test (the defaults: every 60 s)
NO_CHECKS: dict[str, Any] = {"transaction_check_interval_ms": 600_000, "transaction_timeout_ms": 600_000}
PUSH_FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                             "route_refresh_interval_s": 0.5, "long_poll_ms": 1000,
                             "pull_delay_on_error_s": 0.2}


def arun(fn: Callable[[], Awaitable[T]]) -> T:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


async def on_cluster(cluster: LocalCluster, fn: Callable[[], T]) -> T:
    """*fn()* run on the cluster's loop, awaited without blocking this loop (whose producer must keep
    answering the broker's checks meanwhile)."""
    async def call() -> T:
        return fn()

    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call(), cluster.loop))


async def eventually(probe: Callable[[], Awaitable[T]], what: str, timeout_s: float = WAIT_S) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s} s waiting for {what} (last: {value!r})")
        await asyncio.sleep(0.05)


async def until(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Wait for a condition of this loop's state (what a listener has seen)."""
    async def probe() -> bool:
        return condition()

    await eventually(probe, what, timeout_s)


def queue_records(cluster: LocalCluster, topic: str, queue_id: int) -> list[StoredMessage]:
    """Every record the consume queue of (*topic*, *queue_id*) indexes now (on the cluster's loop)."""
    store = cluster.broker.store
    records: list[StoredMessage] = []
    offset = 0
    while True:
        got = store.get(topic, queue_id, offset, 32)
        if not got.records:
            return records
        records.extend(got.messages)
        offset = got.next_begin_offset


def topic_records(cluster: LocalCluster, topic: str) -> list[StoredMessage]:
    return [m for queue_id in cluster.broker.store.topics().get(topic, [])
            for m in queue_records(cluster, topic, queue_id)]


async def records_of(cluster: LocalCluster, topic: str, uniq: str) -> list[StoredMessage]:
    """The records of *topic* (all its queues) whose UNIQ_KEY is *uniq*."""
    return await on_cluster(cluster, lambda: [m for m in topic_records(cluster, topic) if m.uniq_key == uniq])


async def dispatched(cluster: LocalCluster) -> bool:
    return await on_cluster(cluster, lambda: cluster.broker.store.dispatch_behind_bytes == 0)


async def op_record(cluster: LocalCluster, result: TransactionSendResult) -> StoredMessage:
    """The op record that closes *result*'s half message: tag d, body its half queue offset in decimal."""
    async def probe() -> list[StoredMessage]:
        return await on_cluster(cluster, lambda: [
            m for m in topic_records(cluster, OP_TOPIC) if m.body == str(result.queue_offset).encode()])

    found = await eventually(probe, f"the op record of half queue offset {result.queue_offset}")
    assert len(found) == 1, f"one op record per decided half message, got {len(found)}"
    return found[0]


async def ops_of_half(cluster: LocalCluster, uniq: str) -> list[StoredMessage]:
    """The op records naming any half record of *uniq* (the original or a copy the check service wrote)."""
    def find() -> list[StoredMessage]:
        offsets = {str(m.queue_offset).encode() for m in topic_records(cluster, HALF_TOPIC) if m.uniq_key == uniq}
        return [m for m in topic_records(cluster, OP_TOPIC) if m.body in offsets]

    return await on_cluster(cluster, find)


async def assert_never_visible(cluster: LocalCluster, topic: str, uniq: str) -> None:
    """Everything the broker wrote has been dispatched and the message is in no queue of *topic*."""
    await eventually(lambda: dispatched(cluster), "the dispatcher to catch up with the commitlog")
    assert await records_of(cluster, topic, uniq) == [], f"{uniq} became visible in {topic}"


def checker(answers: list[LocalTransactionState]) -> tuple[list[TransactionMessage],
                                                             Callable[[TransactionMessage], LocalTransactionState]]:
    """A check listener answering *answers[0]*, then *answers[1]*, ... (the last one from then on), and the
    list of the messages it was asked about."""
    asked: list[TransactionMessage] = []

    def check(message: TransactionMessage) -> LocalTransactionState:
        asked.append(message)
        return answers[min(len(asked), len(answers)) - 1]

    return asked, check


def refuse_checks(message: TransactionMessage) -> LocalTransactionState:
    raise AssertionError(f"no check was expected, got one for {message.transaction_id}")


def test_a_committed_transaction_lands_in_its_topic_and_is_consumed(tmp_path: Path) -> None:
    topic, group = "TxCommitTopic", "tx-commit"
    executed: list[tuple[TransactionMessage, object]] = []

    def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        executed.append((message, arg))
        return COMMIT

    with LocalCluster(tmp_path / "store", **NO_CHECKS) as cluster:
        async def go() -> tuple[TransactionSendResult, StoredMessage, StoredMessage, StoredMessage]:
            async with TransactionProducer(cluster.namesrv_addr, group, refuse_checks) as producer:
                result = await producer.send_in_transaction(
                    topic, b"order 7 paid", execute, "order-7", tags="TagA", keys=["k1", "k2"],
                    properties={"color": "red", "DELAY": "3"})
            [final] = await eventually(lambda: records_of(cluster, topic, result.msg_id),
                                       f"the committed message {result.msg_id} in {topic}")
            [half] = await eventually(lambda: records_of(cluster, HALF_TOPIC, result.msg_id),
                                      "the half message in the half topic")
            return result, final, half, await op_record(cluster, result)

        result, final, half, op = arun(go)

    assert isinstance(result, TransactionSendResult)
    assert (result.status, result.local_transaction_state) == ("SEND_OK", COMMIT)
    [(message, arg)] = executed
    assert arg == "order-7"
    assert (message.topic, message.body, message.transaction_id, message.tags, message.keys) == (
        topic, b"order 7 paid", result.msg_id, "TagA", "k1 k2")
    assert message.properties["TRAN_MSG"] == "true" and message.properties["PGROUP"] == group
    assert "DELAY" not in message.properties and message.stored is None

    # the half message: what the producer sent, parked in the half topic without transaction bits
    _, half_offset = decode_offset_message_id(result.offset_msg_id)
    assert half.commit_log_offset == half_offset and half.queue_offset == result.queue_offset
    assert SysFlag.transaction_type(half.sys_flag) == SysFlag.TRANSACTION_NOT_TYPE
    assert half.properties["REAL_TOPIC"] == topic
    assert half.properties["REAL_QID"] == str(result.message_queue.queue_id)

    # the committed message: the same message in its real topic and queue, pointing back at the half one
    assert (final.topic, final.queue_id, final.body) == (topic, result.message_queue.queue_id, b"order 7 paid")
    props = final.properties
    assert (props.get("TAGS"), props.get("KEYS"), props.get("color")) == ("TagA", "k1 k2", "red")
    assert props["UNIQ_KEY"] == result.msg_id and "DELAY" not in props
    assert props["TRAN_MSG"] == "true" and props["PGROUP"] == group
    assert SysFlag.transaction_type(final.sys_flag) == SysFlag.TRANSACTION_COMMIT_TYPE
    assert final.prepared_transaction_offset == half.commit_log_offset

    assert op.topic == OP_TOPIC and op.tags == "d" and op.queue_id == half.queue_id


def test_committed_messages_reach_pull_and_push_consumers(tmp_path: Path) -> None:
    topic, group = "TxConsumeTopic", "tx-consume"
    with LocalCluster(tmp_path / "store", **NO_CHECKS) as cluster:
        async def go() -> None:
            async with TransactionProducer(cluster.namesrv_addr, group, refuse_checks) as producer:
                results = [await producer.send_in_transaction(topic, f"m{i}".encode(), lambda m, a: COMMIT,
                                                              tags="TagA") for i in range(4)]
                rolled_back = await producer.send_in_transaction(topic, b"never", lambda m, a: ROLLBACK)
            wanted = {r.msg_id: f"m{i}".encode() for i, r in enumerate(results)}
            await op_record(cluster, rolled_back)
            for uniq in wanted:
                await eventually(partial(records_of, cluster, topic, uniq), f"{uniq} in {topic}")

            pulled: dict[str, bytes] = {}
            async with PullConsumer(cluster.namesrv_addr, "tx-pull-group") as consumer:
                async def route() -> list[MessageQueue]:
                    try:
                        return await consumer.queues(topic)
                    except NoRouteError:
                        return []

                queues = await eventually(route, f"a route for {topic}")
                for mq in queues:
                    got = await consumer.pull(mq, 0)
                    if got.status == PullStatus.FOUND:
                        pulled.update({m.uniq_key or "": m.body for m in got.messages})
            assert pulled == wanted, "the pull consumer sees exactly the committed messages"

            pushed: dict[str, bytes] = {}

            def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                pushed.update({m.msg_id: m.body for m in messages})
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "tx-push-group", {topic: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **PUSH_FAST):
                async def all_pushed() -> bool:
                    return set(pushed) >= set(wanted)

                await eventually(all_pushed, "the push consumer to receive the committed messages")
            assert pushed == wanted, "the push consumer sees exactly the committed messages"

        arun(go)


def test_a_rolled_back_transaction_leaves_only_an_op_record(tmp_path: Path) -> None:
    topic, group = "TxRollbackTopic", "tx-rollback"
    with LocalCluster(tmp_path / "store", **NO_CHECKS) as cluster:
        async def go() -> tuple[TransactionSendResult, StoredMessage]:
            async with TransactionProducer(cluster.namesrv_addr, group, refuse_checks) as producer:
                result = await producer.send_in_transaction(topic, b"cancelled", lambda m, a: ROLLBACK)
            op = await op_record(cluster, result)
            await eventually(lambda: records_of(cluster, HALF_TOPIC, result.msg_id), "the half message")
            await assert_never_visible(cluster, topic, result.msg_id)
            return result, op

        result, op = arun(go)
    assert (result.status, result.local_transaction_state) == ("SEND_OK", ROLLBACK)
    assert op.tags == "d" and op.body == str(result.queue_offset).encode()


def test_an_unknown_transaction_is_committed_by_the_check(tmp_path: Path) -> None:
    topic, group = "TxCheckCommitTopic", "tx-check-commit"
    asked, check = checker([COMMIT])
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> tuple[TransactionSendResult, StoredMessage]:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"settled later", lambda m, a: UNKNOW,
                                                            tags="TagC", keys="order-9")
                [final] = await eventually(lambda: records_of(cluster, topic, result.msg_id),
                                           "the message committed by the check")
            return result, final

        result, final = arun(go)
    assert result.local_transaction_state is UNKNOW
    assert len(asked) >= 1, "the broker asked the producer"
    message = asked[0]
    assert (message.topic, message.body, message.transaction_id, message.tags, message.keys) == (
        topic, b"settled later", result.msg_id, "TagC", "order-9")
    assert message.stored is not None and message.stored.topic == topic
    assert message.stored.queue_id == result.message_queue.queue_id, "the check carries the real queue id"
    assert final.body == b"settled later"
    assert SysFlag.transaction_type(final.sys_flag) == SysFlag.TRANSACTION_COMMIT_TYPE


def test_an_unknown_transaction_rolled_back_by_the_check_never_shows(tmp_path: Path) -> None:
    topic, group = "TxCheckRollbackTopic", "tx-check-rollback"
    asked, check = checker([ROLLBACK])
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> TransactionSendResult:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"no", lambda m, a: UNKNOW)
                await until(lambda: len(asked) >= 1, "the broker's check")
                # the op record names the half message the check was about: a copy of the original the
                # check service wrote at the end of the half queue
                [op] = await eventually(lambda: ops_of_half(cluster, result.msg_id),
                                        "the op record of the rolled back half message")
                assert op.tags == "d"
            await assert_never_visible(cluster, topic, result.msg_id)
            return result

        result = arun(go)
    assert result.local_transaction_state is UNKNOW
    assert asked[0].transaction_id == result.msg_id


def test_a_transaction_that_stays_unknown_is_discarded_after_transaction_check_max_checks(tmp_path: Path) -> None:
    topic, group, check_max = "TxCheckMaxTopic", "tx-check-max", 3
    asked, check = checker([UNKNOW])
    with LocalCluster(tmp_path / "store", transaction_check_max=check_max, **FAST_CHECKS) as cluster:
        async def go() -> tuple[TransactionSendResult, StoredMessage]:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"undecided", lambda m, a: UNKNOW)
                [discarded] = await eventually(lambda: records_of(cluster, CHECK_MAX_TIME_TOPIC, result.msg_id),
                                               f"the half message in {CHECK_MAX_TIME_TOPIC}")
                await until(lambda: len(asked) >= check_max, f"{check_max} checks to reach the producer")
            await assert_never_visible(cluster, topic, result.msg_id)
            return result, discarded

        result, discarded = arun(go)
    assert len(asked) == check_max, f"checked {len(asked)} times, transactionCheckMax is {check_max}"
    assert {m.transaction_id for m in asked} == {result.msg_id}
    assert discarded.body == b"undecided"
    assert discarded.properties.get("TRANSACTION_CHECK_TIMES") == str(check_max)


def test_an_exception_in_the_local_transaction_counts_as_unknown(tmp_path: Path) -> None:
    topic, group = "TxRaisesTopic", "tx-raises"
    asked, check = checker([COMMIT])

    async def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        raise RuntimeError("the database went away")

    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> TransactionSendResult:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"retried by check", execute)
                await eventually(lambda: records_of(cluster, topic, result.msg_id),
                                 "the message the check committed")
            return result

        result = arun(go)
    assert (result.status, result.local_transaction_state) == ("SEND_OK", UNKNOW)
    assert asked and asked[0].transaction_id == result.msg_id


def test_a_producer_gone_before_the_check_is_not_asked_and_the_next_one_of_its_group_is(tmp_path: Path) -> None:
    topic, group = "TxComebackTopic", "tx-comeback"
    first_asked, first_check = checker([COMMIT])
    second_asked, second_check = checker([COMMIT])
    with LocalCluster(tmp_path / "store", transaction_check_max=10_000, **FAST_CHECKS) as cluster:
        def channels() -> list[str]:
            return [c.client_id for c in cluster.broker.clients.producer_channels(group)]

        async def go() -> TransactionSendResult:
            first = TransactionProducer(cluster.namesrv_addr, group, first_check)
            async with first:
                result = await first.send_in_transaction(topic, b"waits", lambda m, a: UNKNOW)
                assert await on_cluster(cluster, channels) == [first.client_id], "the heartbeat named the group"
            assert await on_cluster(cluster, channels) == [], "close unregistered the producer"

            # the check service comes round without a producer to ask: the half message is written again
            # with its check count raised, and nothing else happens to it
            async def checked_copy() -> list[StoredMessage]:
                return [m for m in await records_of(cluster, HALF_TOPIC, result.msg_id)
                        if m.properties.get("TRANSACTION_CHECK_TIMES")]

            await eventually(checked_copy, "the check service to come round while no producer is there")
            await assert_never_visible(cluster, topic, result.msg_id)

            async with TransactionProducer(cluster.namesrv_addr, group, second_check) as second:
                assert await on_cluster(cluster, channels) == [second.client_id]
                await eventually(lambda: records_of(cluster, topic, result.msg_id),
                                 "the message the returning producer's check committed")
            return result

        result = arun(go)
    assert first_asked == [], "a closed producer is never asked"
    assert second_asked and {m.transaction_id for m in second_asked} == {result.msg_id}


ACL_YML = """\
accounts:
  - accessKey: tx-user
    secretKey: tx-user-secret
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TxAclTopic=PUB|SUB
"""


def test_with_acl_credentials_sign_the_half_send_the_heartbeat_and_both_end_transactions(tmp_path: Path) -> None:
    topic, group = "TxAclTopic", "tx-acl"
    asked, check = checker([COMMIT])
    home = acl_home(tmp_path / "home", ACL_YML)
    credentials = SessionCredentials("tx-user", "tx-user-secret")
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home), **FAST_CHECKS) as cluster:
        async def go() -> tuple[TransactionSendResult, TransactionSendResult]:
            async with TransactionProducer(cluster.namesrv_addr, group, check, credentials=credentials) as producer:
                now = await producer.send_in_transaction(topic, b"now", lambda m, a: COMMIT)
                later = await producer.send_in_transaction(topic, b"later", lambda m, a: UNKNOW)
                for result, what in ((now, "committed at once"), (later, "committed by the check")):
                    await eventually(partial(records_of, cluster, topic, result.msg_id), f"the message {what}")
            return now, later

        now, later = arun(go)
    assert (now.local_transaction_state, later.local_transaction_state) == (COMMIT, UNKNOW)
    assert {m.transaction_id for m in asked} == {later.msg_id}


def test_periodic_heartbeats_register_the_group_again_after_the_broker_forgot_it(tmp_path: Path) -> None:
    group = "tx-heartbeat"
    with LocalCluster(tmp_path / "store", **NO_CHECKS) as cluster:
        clients = cluster.broker.clients

        def forget() -> list[str]:
            """Drop the group's channels, as a broker that lost them would; the client ids dropped."""
            dropped = clients.producer_channels(group)
            for channel in dropped:
                clients.unregister_producer(group, channel.connection)
            return [c.client_id for c in dropped]

        async def go() -> None:
            async with TransactionProducer(cluster.namesrv_addr, group, refuse_checks,
                                           heartbeat_interval_s=0.2) as producer:
                assert await on_cluster(cluster, forget) == [producer.client_id], "start() sent a heartbeat"
                await eventually(lambda: on_cluster(cluster, lambda: [
                    c.client_id for c in clients.producer_channels(group)]), "the next periodic heartbeat")

        arun(go)


def test_a_half_message_stored_without_its_slave_is_rolled_back_without_running_execute(tmp_path: Path) -> None:
    """A SYNC_MASTER with no slave stores the half message but answers SLAVE_NOT_AVAILABLE: as the Java
    client, the producer rolls the transaction back and never runs the local transaction."""
    topic, group = "TxNoSlaveTopic", "tx-no-slave"
    executed: list[TransactionMessage] = []

    def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        executed.append(message)
        return COMMIT

    with LocalCluster(tmp_path / "store", store_overrides={"broker_role": "SYNC_MASTER"}, **NO_CHECKS) as cluster:
        async def go() -> TransactionSendResult:
            async with TransactionProducer(cluster.namesrv_addr, group, refuse_checks) as producer:
                result = await producer.send_in_transaction(topic, b"not durable enough", execute)
            await op_record(cluster, result)
            await assert_never_visible(cluster, topic, result.msg_id)
            return result

        result = arun(go)
    assert (result.status, result.local_transaction_state) == ("SLAVE_NOT_AVAILABLE", ROLLBACK)
    assert executed == []
