"""SQL92 filtering by message properties (4.9.3's ``enablePropertyFilter``): a broker with it on hands a
subscriber only the messages its expression selects, skipping the rest inside the store's read (so
nextBeginOffset moves past them), refuses expressions that do not compile, and without it keeps refusing
SQL92 altogether.  Clients: rocketstore's PullConsumer and PushConsumer with ``MessageSelector.by_sql``.

The official C++ clients the other integration tests drive (1.x through PyPI ``rocketmq``, 2.x through its
C API) subscribe by tag only (their subscribe takes a topic and a tag expression), so they are not used here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, wait_stored
from serve_process import cli, wait_for

from rocketstore.client import (
    BrokerError,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageQueue,
    MessageSelector,
    Producer,
    PullConsumer,
    PullStatus,
    PushConsumer,
    decode_messages,
    group_requests,
)
from rocketstore.message.sql_filter import compile_sql
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, build_subscription
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool, run
from rocketstore.store.results import GetMessageStatus

QUEUES = 4
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000}
SQL = "a > 5 AND region = 'eu'"


def props(i: int) -> dict[str, str]:
    """Message i's properties: ``a`` = i (missing for every 7th), region eu for every 3rd, else us."""
    p = {"region": "eu" if i % 3 == 0 else "us"}
    if i % 7 != 0:
        p["a"] = str(i)
    return p


def selected(count: int) -> list[int]:
    return [i for i in range(count) if compile_sql(SQL).matches(props(i))]


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as c:
        yield c


@pytest.fixture()
def plain_cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        yield c


async def send(cluster: LocalCluster, topic: str, numbers: range, *, queue_id: int | None = None,
               region: str | None = None) -> None:
    async with Producer(cluster.namesrv_addr, "sql-producer") as producer:
        for i in numbers:
            p = props(i) if region is None else {"a": str(i), "region": region}
            await producer.send(topic, f"m{i}".encode(), properties=p, queue_id=queue_id)


def test_the_expected_selection_is_not_trivial() -> None:
    assert selected(40) == [6, 9, 12, 15, 18, 24, 27, 30, 33, 36, 39]


def test_a_store_read_with_a_predicate_counts_only_matches_and_moves_past_the_rest(cluster: LocalCluster) -> None:
    topic = "SqlStoreTopic"
    run(send(cluster, topic, range(40), queue_id=0))
    wait_stored(cluster, topic, 40, "forty messages", queues=QUEUES)
    match = compile_sql(SQL).matches

    first = cluster.call(lambda: cluster.broker.store.get(topic, 0, 0, 4, match=match))
    assert first.status is GetMessageStatus.FOUND
    assert [int(m.body[1:]) for m in first.messages] == [6, 9, 12, 15]
    assert first.next_begin_offset == 16  # the scan stopped at the first entry past a full batch
    rest = cluster.call(lambda: cluster.broker.store.get(topic, 0, 16, 32, match=match))
    assert [int(m.body[1:]) for m in rest.messages] == [18, 24, 27, 30, 33, 36, 39]
    assert rest.next_begin_offset == 40
    tail = cluster.call(lambda: cluster.broker.store.get(topic, 0, 37, 32, match=match))
    assert ([int(m.body[1:]) for m in tail.messages], tail.next_begin_offset) == ([39], 40)
    nothing = cluster.call(lambda: cluster.broker.store.get(topic, 0, 0, 32, match=lambda p: False))
    assert (nothing.status, nothing.next_begin_offset, list(nothing.messages)) == (
        GetMessageStatus.NO_MATCHED_MESSAGE, 40, [])


def test_a_pull_consumer_gets_exactly_the_matching_messages(cluster: LocalCluster) -> None:
    topic = "SqlPullTopic"
    run(send(cluster, topic, range(40), queue_id=0))
    wait_stored(cluster, topic, 40, "forty messages", queues=QUEUES)
    selector = MessageSelector.by_sql(SQL)

    async def go() -> tuple[list[tuple[str, int, list[int]]], Any]:
        async with PullConsumer(cluster.namesrv_addr, "sql-pull-group") as consumer:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            steps = []
            offset = 0
            while True:
                result = await consumer.pull(mq, offset, 4, expression=selector)
                steps.append((result.status, result.next_begin_offset, [int(m.body[1:]) for m in result.messages]))
                if result.status != PullStatus.FOUND:
                    break
                offset = result.next_begin_offset
            await send(cluster, topic, range(40, 50), queue_id=0, region="us")  # none of these match
            await asyncio.to_thread(cluster.wait_dispatched)
            unmatched = await consumer.pull(mq, 40, 4, expression=selector)
            return steps, unmatched

    steps, unmatched = run(go())
    # maxMsgNums counts matches: a batch of 4 ends the scan at the entry after the 4th match; the last
    # batch scans to the queue's end
    assert steps == [
        (PullStatus.FOUND, 16, [6, 9, 12, 15]),
        (PullStatus.FOUND, 31, [18, 24, 27, 30]),
        (PullStatus.FOUND, 40, [33, 36, 39]),
        (PullStatus.NO_NEW_MSG, 40, []),
    ]
    assert [n for _, _, numbers in steps for n in numbers] == selected(40)
    # a range with no match answers NO_MATCHED_MESSAGE (PULL_RETRY_IMMEDIATELY) with the offset past it
    assert (unmatched.status, unmatched.next_begin_offset, unmatched.messages) == (PullStatus.NO_MATCHED_MSG, 50, [])


def test_a_push_consumer_consumes_exactly_the_matching_messages_and_commits_to_the_queue_ends(
        cluster: LocalCluster) -> None:
    topic, group = "SqlPushTopic", "sql-push-group"
    seen: list[int] = []

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(int(m.body[1:]) for m in batch)
        return ConsumeStatus.CONSUME_SUCCESS

    def ends() -> dict[int, int]:
        return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)})

    def committed() -> dict[int, int]:
        return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))

    wanted = selected(80)

    async def go() -> None:
        await send(cluster, topic, range(40))
        async with PushConsumer(cluster.namesrv_addr, group, {topic: MessageSelector.by_sql(SQL)}, handle,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST):
            await send(cluster, topic, range(40, 80))
            await asyncio.to_thread(wait_for, lambda: sorted(seen) == wanted, 30, "every matching message")
            # (the unmatched messages after the last matching one may still be on their way into the queues)
            await asyncio.to_thread(wait_for, lambda: sum(ends().values()) == 80, 30, "all 80 dispatched")
            end = ends()
            await asyncio.to_thread(wait_for, lambda: committed() == end, 30, "offsets at the queue ends")

    run(go())
    assert sorted(seen) == wanted  # each exactly once, nothing else


def test_a_held_pull_wakes_for_a_matching_message_only(cluster: LocalCluster) -> None:
    topic = "SqlHoldTopic"
    run(send(cluster, topic, range(3), queue_id=0, region="us"))
    wait_stored(cluster, topic, 3, "three messages", queues=QUEUES)
    hold = cluster.broker.pull_hold

    def quiet_hold() -> None:  # no periodic re-check (it wakes every held pull) while the test watches
        hold.close()
        hold.check_interval_s = 3600.0
        hold.start()

    cluster.call(quiet_hold)

    async def go() -> tuple[bool, Any]:
        async with PullConsumer(cluster.namesrv_addr, "sql-hold-group") as consumer:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            held = asyncio.create_task(consumer.pull(mq, 3, 8, expression=MessageSelector.by_sql("region = 'eu'"),
                                                     suspend_ms=30_000))
            await asyncio.to_thread(cluster.wait_until, lambda: hold.waiting(topic) == {0: [3]}, 20, "the held pull")
            await send(cluster, topic, range(3, 5), queue_id=0, region="us")
            await asyncio.to_thread(cluster.wait_dispatched)
            # the dispatch listener hops to the broker's loop: a call there runs after its wake-up check
            still_held = await asyncio.to_thread(cluster.call, lambda: hold.waiting(topic) == {0: [3]})
            still_held = still_held and not held.done()
            await send(cluster, topic, range(5, 6), queue_id=0, region="eu")
            return still_held, await held

    still_held, result = run(go())
    assert still_held, "a message the filter refuses must not wake the pull"
    assert (result.status, [m.body for m in result.messages], result.next_begin_offset) == (
        PullStatus.FOUND, [b"m5"], 6)


def raw_pull(pool: ConnectionPool, addr: str, group: str, topic: str, *, subscription: str | None = None,
             expression_type: str = "SQL92") -> Callable[[], Any]:
    sys_flag = 0x4 if subscription is not None else 0
    header = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=0, queue_offset=0, max_msg_nums=32,
                                      sys_flag=sys_flag, commit_offset=0, suspend_timeout_ms=0,
                                      subscription=subscription or "", sub_version=0,
                                      expression_type=expression_type)
    return lambda: pool.request(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()), 10)


def heartbeat_data(group: str, topic: str, expression: str) -> HeartbeatData:
    sub = build_subscription(topic, expression, 1, "SQL92")
    return HeartbeatData("127.0.0.1@sql-test", (), (ConsumerData(group, subscriptions=(sub,)),))


def test_bad_expressions_get_the_brokers_errors(cluster: LocalCluster) -> None:
    topic = "SqlBadTopic"
    run(send(cluster, topic, range(10), queue_id=0))
    wait_stored(cluster, topic, 10, "ten messages", queues=QUEUES)

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with PullConsumer(cluster.namesrv_addr, "sql-bad-group") as consumer:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            with pytest.raises(BrokerError) as info:
                await consumer.pull(mq, 0, expression=MessageSelector.by_sql("a >"))
            out["pull"] = info.value
            with pytest.raises(BrokerError) as info:
                await consumer.pull(mq, 0, expression=MessageSelector("SQL92", ""))
            out["empty"] = info.value
        with pytest.raises(BrokerError) as info:
            async with PushConsumer(cluster.namesrv_addr, "sql-bad-push", {topic: MessageSelector.by_sql("a = NULL")},
                                    lambda batch: ConsumeStatus.CONSUME_SUCCESS, **FAST):
                pass
        out["push"] = info.value
        # a Java consumer pulls without the subscription flag: the broker uses the heartbeat's expression
        pool = ConnectionPool()
        try:
            addr = cluster.broker_addr
            await group_requests.heartbeat(pool, addr, heartbeat_data("sql-hb-bad", topic, "a >"), 10)
            out["hb_bad"] = await raw_pull(pool, addr, "sql-hb-bad", topic)()
            await group_requests.heartbeat(pool, addr, heartbeat_data("sql-hb-good", topic, "a > 5"), 10)
            out["hb_good"] = await raw_pull(pool, addr, "sql-hb-good", topic)()
            out["unknown_type"] = await raw_pull(pool, addr, "sql-hb-good", topic, subscription="a > 5",
                                                 expression_type="XPATH")()
        finally:
            await pool.close()
        return out

    out = run(go())
    assert out["pull"].code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert out["pull"].remark == "parse the consumer's subscription failed"
    assert out["empty"].code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert out["push"].code == ResponseCode.SUBSCRIPTION_PARSE_FAILED  # CHECK_CLIENT_CONFIG, before it starts
    assert "NULL cannot be compared" in out["push"].remark
    assert out["hb_bad"].code == ResponseCode.FILTER_DATA_NOT_EXIST
    assert out["hb_bad"].remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"
    assert out["hb_good"].code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(out["hb_good"].body)] == [b"m6", b"m8", b"m9"]  # a > 5, 7 has no a
    assert out["unknown_type"].code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


def test_without_enable_property_filter_sql92_is_refused(plain_cluster: LocalCluster) -> None:
    cluster = plain_cluster
    topic = "SqlOffTopic"
    run(send(cluster, topic, range(3), queue_id=0))
    wait_stored(cluster, topic, 3, "three messages", queues=QUEUES)

    async def go() -> tuple[BrokerError, BrokerError, list[bytes]]:
        async with PullConsumer(cluster.namesrv_addr, "sql-off-group") as consumer:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            with pytest.raises(BrokerError) as pulled:
                await consumer.pull(mq, 0, expression=MessageSelector.by_sql("a > 1"))
            tagged = await consumer.pull(mq, 0, expression=MessageSelector.by_tag("*"))
        with pytest.raises(BrokerError) as pushed:
            async with PushConsumer(cluster.namesrv_addr, "sql-off-push", {topic: MessageSelector.by_sql("a > 1")},
                                    lambda batch: ConsumeStatus.CONSUME_SUCCESS, **FAST):
                pass
        return pulled.value, pushed.value, [m.body for m in tagged.messages]

    pulled, pushed, tagged = run(go())
    for error in (pulled, pushed):
        assert error.code == ResponseCode.SYSTEM_ERROR
        assert error.remark == "The broker does not support consumer to filter message by SQL92"
    assert tagged == [b"m0", b"m1", b"m2"]


def test_cli_consume_with_sql_prints_only_the_matching_messages(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        for region in ("eu", "us"):
            sent = cli("send", "CliSql", f"{region}-{{i}}", "--count", "3", "--property", f"region={region}", *ns)
            assert sent.returncode == 0, sent.stderr
        wait_stored(cluster, "CliSql", 6, "six messages")
        out = cli("consume", "CliSql", "-g", "cli-sql", "--sql", "region = 'eu'", "--timeout", "3", "--json", *ns)
        assert out.returncode == 0, out.stderr
        assert sorted(m["body"] for m in json.loads(out.stdout)["messages"]) == ["eu-0", "eu-1", "eu-2"]
        both = cli("consume", "CliSql", "-g", "cli-sql-2", "--sql", "a > 1", "--tags", "T", *ns)
        assert both.returncode == 2 and "not allowed with argument" in both.stderr
