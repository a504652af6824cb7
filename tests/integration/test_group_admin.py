"""The group and offset admin requests of broker/group_admin.py against a real name server + broker, through
rocketstore's AdminClient and ``rocketstore group ...``: INVOKE_BROKER_TO_GET_CONSUMER_STATUS (the broker asks
each connected consumer: rocketstore PushConsumers answer, the C++ client and a client that refuses or stays
silent are left out), QUERY_CONSUME_TIME_SPAN, QUERY_CORRECTION_OFFSET and CLONE_GROUP_OFFSET."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cpp2_driver import Cpp2Lib
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from serve_process import cli, wait_for

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting import RemotingCommand, RequestCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import Connection, ConnectionPool, run

QUEUES = 4
LONG_MAX = (1 << 63) - 1
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000}


async def send(cluster: LocalCluster, topic: str, count: int, first: int = 0) -> None:
    async with Producer(cluster.namesrv_addr, "group-admin-producer") as producer:
        for i in range(first, first + count):
            await producer.send(topic, f"m{i}".encode())


def ends(cluster: LocalCluster, topic: str) -> dict[int, int]:
    return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)})


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))


def commit(cluster: LocalCluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    def go() -> None:
        for queue_id, offset in offsets.items():
            cluster.broker.offsets.commit(group, topic, queue_id, offset)

    cluster.call(go)


async def raw_call(cluster: LocalCluster, code: int, ext: dict[str, str], timeout_s: float = 10.0
                   ) -> RemotingCommand:
    async with AdminClient(cluster.namesrv_addr) as admin:
        conn = await admin.pool.get(cluster.broker_addr)
        return await conn.request(RemotingCommand.request(code, ext), timeout_s)


def handler(seen: Counter[str]) -> Any:
    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.update(m.body.decode() for m in batch)
        return ConsumeStatus.CONSUME_SUCCESS

    return handle


# --- INVOKE_BROKER_TO_GET_CONSUMER_STATUS ---------------------------------------------------------------------


def test_the_broker_collects_each_push_consumers_offsets(cluster: LocalCluster) -> None:
    topic, group = "StatusTopic", "status-group"
    seen: Counter[str] = Counter()

    async def go() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str], dict[Any, int]]:
        await send(cluster, topic, 20)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(seen), **FAST) as a, \
                PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(seen), **FAST) as b:
            await asyncio.to_thread(wait_for, lambda: len(seen) == 20, 30, "every message")
            await asyncio.to_thread(wait_for, lambda: len(a.assignment(topic)) == len(b.assignment(topic)) == 2,
                                    30, "two queues each")
            end = {(topic, cluster.broker_name, q): offset for q, offset in ends(cluster, topic).items()}
            await asyncio.to_thread(wait_for, lambda: {**a.offset_table(topic), **b.offset_table(topic)} == end,
                                    30, "the consumers' offsets at the queue ends")
            mine = {**a.offset_table(topic), **b.offset_table(topic)}
            async with AdminClient(cluster.namesrv_addr) as admin:
                both = await admin.consumer_status(group, topic)
                only_a = await admin.consumer_status(group, topic, a.client_id)
                other_topic = await admin.consumer_status(group, "StatusUnsubscribed")
            return both, only_a, other_topic, [a.client_id, b.client_id], mine

    run(send(cluster, "StatusUnsubscribed", 2))
    both, only_a, other, client_ids, mine = run(go())
    assert sorted(both) == sorted(client_ids)
    assert set(only_a) == {client_ids[0]}
    held = {key: offset for table in both.values() for key, offset in table.items()}
    assert sorted(held) == [(topic, cluster.broker_name, q) for q in range(QUEUES)], "each queue held by one client"
    assert held == mine
    assert sum(held.values()) == 20, "every message consumed"
    assert only_a[client_ids[0]] == both[client_ids[0]]
    # a topic the consumers hold no offsets of: each client answers, with nothing
    assert other == {client_id: {} for client_id in client_ids}


def test_the_cli_prints_each_clients_offsets(cluster: LocalCluster) -> None:
    topic, group = "StatusCliTopic", "status-cli-group"
    seen: Counter[str] = Counter()

    async def go() -> tuple[Any, str]:
        await send(cluster, topic, 8)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(seen), **FAST) as consumer:
            await asyncio.to_thread(wait_for, lambda: len(seen) == 8, 30, "every message")
            out = await asyncio.to_thread(cli, "group", "client-offsets", group, "-t", topic, "-n",
                                          cluster.namesrv_addr, "--json")
            return out, consumer.client_id

    out, client_id = run(go())
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)[client_id]
    assert sorted((r["queueId"], r["offset"]) for r in rows) == sorted(ends(cluster, topic).items())


def test_no_consumer_online_is_a_system_error(cluster: LocalCluster) -> None:
    run(send(cluster, "StatusNobodyTopic", 2))
    answer = run(raw_call(cluster, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                          {"topic": "StatusNobodyTopic", "group": "nobody-group"}))
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                            "No Any Consumer online in the consumer group: [nobody-group]")

    async def through_admin() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.consumer_status("nobody-group", "StatusNobodyTopic")

    with pytest.raises(BrokerError, match="No Any Consumer online"):
        run(through_admin())
    out = cli("group", "client-offsets", "nobody-group", "-t", "StatusNobodyTopic", "-n", cluster.namesrv_addr)
    assert out.returncode == 1 and "No Any Consumer online" in out.stderr


async def fake_consumer(cluster: LocalCluster, group: str, topic: str, client_id: str, answer: Any, *,
                        version: int | None = None) -> ConnectionPool:
    """A client made of the real remoting parts that heartbeats as a consumer of *group* and serves
    broker requests with *answer* (None: never answers)."""
    async def serve(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return answer(request)

    pool = ConnectionPool(handler=serve)
    data = HeartbeatData(client_id, consumers=(ConsumerData(group, subscriptions=(SubscriptionData(topic, "*"),)),))
    extra = {} if version is None else {"version": version}
    request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode(), **extra)
    response = await pool.request(cluster.broker_addr, request, 5.0)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return pool


def test_clients_that_refuse_or_stay_silent_are_left_out(cluster: LocalCluster) -> None:
    topic, group = "StatusMixedTopic", "status-mixed-group"
    seen: Counter[str] = Counter()

    async def go() -> tuple[dict[str, Any], float, str, dict[Any, int]]:
        await send(cluster, topic, 6)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(seen), **FAST) as consumer:
            await asyncio.to_thread(wait_for, lambda: len(seen) == 6, 30, "every message")
            # two more members of the group (they take some queues in the next rebalance: no matter)
            refusing = await fake_consumer(cluster, group, topic, "10.0.0.1@refusing", lambda r: r.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark="not here"))
            silent = await fake_consumer(cluster, group, topic, "10.0.0.2@silent", lambda r: None)
            try:
                await asyncio.to_thread(wait_for, lambda: len(consumer.assignment(topic)) < QUEUES, 30,
                                        "the rebalance with the new members")
                async with AdminClient(cluster.namesrv_addr) as admin:
                    began = time.monotonic()
                    table = await admin.consumer_status(group, topic)
                    return table, time.monotonic() - began, consumer.client_id, consumer.offset_table(topic)
            finally:
                await refusing.close()
                await silent.close()

    table, took_s, client_id, held = run(go())
    assert list(table) == [client_id], "only the consumer that answered"
    end = ends(cluster, topic)
    # the queues it held when asked (the rebalance may move one more while the broker waits), at their ends
    assert table[client_id] and held
    assert all(offset == end[q] for (_, _, q), offset in table[client_id].items())
    assert took_s >= 4.5, "the broker waited for the silent client (5 s) before answering"


def test_a_client_older_than_3_0_7_fails_the_request(cluster: LocalCluster) -> None:
    async def go() -> RemotingCommand:
        old = await fake_consumer(cluster, "status-old-group", "T", "10.0.0.3@old", lambda r: None, version=27)
        try:
            return await raw_call(cluster, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                  {"topic": "T", "group": "status-old-group"})
        finally:
            await old.close()

    answer = run(go())
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                            "the client does not support this feature. version=V3_0_6")


@requires_cpp_client
def test_a_cpp_consumer_does_not_answer_and_is_left_out(cluster: LocalCluster, tmp_path: Path) -> None:
    """rocketmq-client-cpp leaves GET_CONSUMER_STATUS_FROM_CLIENT unanswered (its handler is commented
    out): the broker gives up on it after 5 s and answers with the other consumers."""
    topic, group = "StatusCppTopic", "status-cpp-group"
    run(send(cluster, topic, 8))
    consumer = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
    try:
        consumer.collect_until(lambda seen: len(messages(seen)) >= 8, 30, "the eight messages")
        seen: Counter[str] = Counter()

        async def go() -> tuple[dict[str, Any], str, list[str]]:
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(seen), **FAST) as mine, \
                    AdminClient(cluster.namesrv_addr) as admin:
                await asyncio.to_thread(wait_for, lambda: len(mine.assignment(topic)) == 2, 30, "a rebalance")
                _, clients = await admin.consumer_connections(group)
                return await admin.consumer_status(group, topic), mine.client_id, [c.language for c in clients]

        table, client_id, languages = run(go())
        consumer.stop()
    finally:
        consumer.kill()
    assert "CPP" in languages and len(languages) == 2, languages
    assert list(table) == [client_id]


def test_a_cpp2_consumer_does_not_answer_either(cluster: LocalCluster, cpp2_lib: Cpp2Lib, tmp_path: Path) -> None:
    """The C++ 2.1 client (core 2.1.0_cvs) leaves GET_CONSUMER_STATUS_FROM_CLIENT unanswered too: alone in
    its group, the broker answers after the 5 s wait with an empty table."""
    topic, group = "StatusCpp2Topic", "status-cpp2-group"
    run(send(cluster, topic, 4))
    home = tmp_path / "cpp2"
    home.mkdir()
    consumer = cpp2_lib.runner(["consume", cluster.namesrv_addr, topic, group], home)
    try:
        consumer.collect_until(lambda seen: sum(1 for s in seen if "body" in s) >= 4, 60, "the four messages")

        async def go() -> tuple[dict[str, Any], list[str], float]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                _, clients = await admin.consumer_connections(group)
                began = time.monotonic()
                table = await admin.consumer_status(group, topic)
                return table, [c.language for c in clients], time.monotonic() - began

        table, languages, took_s = run(go())
        consumer.stop()
    finally:
        consumer.kill()
    assert languages == ["CPP"]
    assert table == {}
    assert took_s >= 4.5, "the broker waited for the client's answer"


# --- QUERY_CONSUME_TIME_SPAN ------------------------------------------------------------------------------------


def test_time_span_gives_store_times_and_the_wait_of_the_next_message(cluster: LocalCluster) -> None:
    topic, group = "SpanTopic", "span-group"
    run(send(cluster, topic, 12))
    wait_for(lambda: sum(ends(cluster, topic).values()) == 12, 10, "the messages in the consume queues")
    commit(cluster, group, topic, {0: 1, 1: 0, 2: ends(cluster, topic)[2]})  # queue 3: no offset at all
    store = cluster.broker.store

    def times(q: int, offset: int) -> int:
        return cluster.call(lambda: store.store_time(topic, q, offset))

    async def go() -> list[Any]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.consume_time_span(group, topic)

    before = int(time.time() * 1000)
    spans = run(go())
    after = int(time.time() * 1000)
    assert [s.queue for s in spans] == [(topic, cluster.broker_name, q) for q in range(QUEUES)]
    end = ends(cluster, topic)
    for s in spans:
        q = s.queue[2]
        assert s.min_timestamp_ms == times(q, 0) > 0
        assert s.max_timestamp_ms == times(q, end[q] - 1) >= s.min_timestamp_ms
    assert spans[0].consume_timestamp_ms == times(0, 0), "the message before offset 1"
    assert before - times(0, 1) <= spans[0].delay_time_ms <= after - times(0, 1)
    assert spans[1].consume_timestamp_ms == spans[1].min_timestamp_ms, "offset 0: the oldest message's time"
    assert before - times(1, 0) <= spans[1].delay_time_ms <= after - times(1, 0)
    assert spans[2].consume_timestamp_ms == times(2, end[2] - 1) and spans[2].delay_time_ms == 0, "at the end"
    # no offset: 4.9.3 takes the store time of "offset -1" (-1), so the delay is now + 1 ms
    assert spans[3].consume_timestamp_ms == spans[3].min_timestamp_ms
    assert before + 1 <= spans[3].delay_time_ms <= after + 1

    out = cli("group", "time-span", group, "-t", topic, "-n", cluster.namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    assert [r["delayTime"] == 0 for r in json.loads(out.stdout)] == [False, False, True, False]


def test_time_span_of_an_unknown_topic_is_topic_not_exist(cluster: LocalCluster) -> None:
    answer = run(raw_call(cluster, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "NoSpanTopic", "group": "g"}))
    assert (answer.code, answer.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[NoSpanTopic] not exist")
    answer = run(raw_call(cluster, RequestCode.QUERY_CONSUME_TIME_SPAN, {"group": "g"}))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "topic" in (answer.remark or ""), "a missing header field"


# --- QUERY_CORRECTION_OFFSET ------------------------------------------------------------------------------------


def test_correction_offsets_are_the_other_groups_minimum_unless_ahead_of_the_compare_group(
        cluster: LocalCluster) -> None:
    topic = "CorrectionTopic"
    run(send(cluster, topic, 8))
    commit(cluster, "cmp", topic, {0: 5, 1: 1, 2: 3})
    commit(cluster, "g1", topic, {0: 2, 1: 4, 2: 7, 3: 9})
    commit(cluster, "g2", topic, {0: 6, 1: 3, 3: -1})  # -1: below the queue's min offset, not counted
    commit(cluster, "g3", topic, {0: 1, 1: 0, 2: 0})

    async def query(compare: str, filtered: list[str] | None) -> dict[int, int]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.correction_offsets(cluster.broker_addr, topic, compare, filtered)

    # min over cmp, g1, g2 per queue: 0 -> 2, 1 -> 1, 2 -> 3, 3 -> 9; MAX where that exceeds cmp's offset
    assert run(query("cmp", ["g3"])) == {0: 2, 1: 1, 2: 3, 3: 9}
    # leaving cmp out too: 0 -> 2, 1 -> 3 (> cmp's 1: MAX, but cmp is filtered, so not compared), 2 -> 7
    assert run(query("cmp", ["g3", "cmp"])) == {0: 2, 1: 3, 2: 7, 3: 9}
    # compared with g3 (not filtered: the minimum includes it, so it is never ahead)
    assert run(query("g3", None)) == {0: 1, 1: 0, 2: 0, 3: 9}
    # compared with a group behind the queue's min offset on queue 0 (so not in the minimum there): MAX
    commit(cluster, "slow", topic, {0: -1, 1: 0})
    assert run(query("slow", ["g3"])) == {0: LONG_MAX, 1: 0, 2: 3, 3: 9}
    assert run(query("slow", ["g3", "slow"])) == {0: 2, 1: 1, 2: 3, 3: 9}, "filtered: not compared"
    assert committed(cluster, "g3", topic) == {0: 1, 1: 0, 2: 0}, "filtering deletes nothing"

    out = cli("group", "correction-offset", "slow", "-t", topic, "--filter", "g3", "-n", cluster.namesrv_addr,
              "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {cluster.broker_name: {"0": LONG_MAX, "1": 0, "2": 3, "3": 9}}


# --- CLONE_GROUP_OFFSET -----------------------------------------------------------------------------------------


def test_clone_copies_every_topic_the_broker_has(cluster: LocalCluster) -> None:
    run(send(cluster, "CloneA", 4))
    run(send(cluster, "CloneB", 4))
    commit(cluster, "src", "CloneA", {0: 1, 1: 2})
    commit(cluster, "src", "CloneB", {3: 4})
    commit(cluster, "src", "CloneGhost", {0: 9})  # offsets of a topic the broker no longer has
    commit(cluster, "dest", "CloneA", {0: 100, 2: 100})  # replaced, not merged

    out = cli("group", "clone-offset", "src", "dest", "-n", cluster.namesrv_addr)
    assert out.returncode == 0, out.stderr
    assert committed(cluster, "dest", "CloneA") == {0: 1, 1: 2}
    assert committed(cluster, "dest", "CloneB") == {3: 4}
    assert committed(cluster, "dest", "CloneGhost") == {}, "a topic without config is skipped"
    assert committed(cluster, "src", "CloneA") == {0: 1, 1: 2}

    async def one_topic() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.clone_group_offset("src", "dest2", "CloneB")

    run(one_topic())
    assert committed(cluster, "dest2", "CloneB") == {3: 4}
    assert committed(cluster, "dest2", "CloneA") == {}


def test_clone_of_an_online_group_skips_topics_it_does_not_subscribe_unless_offline(cluster: LocalCluster) -> None:
    run(send(cluster, "CloneSubscribed", 4))
    run(send(cluster, "CloneOther", 4))
    group = "clone-online"
    seen: Counter[str] = Counter()
    commit(cluster, group, "CloneOther", {0: 3})

    async def go() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {"CloneSubscribed": "*"}, handler(seen), **FAST):
            await asyncio.to_thread(wait_for, lambda: len(seen) == 4, 30, "the subscribed topic consumed")
            await asyncio.to_thread(wait_for, lambda: committed(cluster, group, "CloneSubscribed")
                                    == ends(cluster, "CloneSubscribed"), 30, "its offsets committed")
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.clone_group_offset(group, "online-copy")
                assert committed(cluster, "online-copy", "CloneSubscribed") == ends(cluster, "CloneSubscribed")
                assert committed(cluster, "online-copy", "CloneOther") == {}, "not subscribed: skipped"
                await admin.clone_group_offset(group, "online-copy", "CloneOther", offline=True)
                assert committed(cluster, "online-copy", "CloneOther") == {0: 3}

    run(go())


def test_clone_with_a_bad_group_name_is_refused(cluster: LocalCluster) -> None:
    answer = run(raw_call(cluster, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "src", "destGroup": "a@b"}))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (answer.remark or "")
    answer = run(raw_call(cluster, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "src"}))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "destGroup" in (answer.remark or "")
