"""Our own client (rocketstore.client) and raw admin requests against an in-process name server + broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    MessageQueue,
    OutgoingMessage,
    Producer,
    PullConsumer,
    PullStatus,
    decode_messages,
)
from rocketstore.client.errors import NoRouteError, SubscriptionError, TopicNotExistError
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData, TopicRouteData
from rocketstore.remoting.fastjson import loads
from rocketstore.remoting.transport import ConnectionPool

#: the client and broker basics, on asyncio's loop and on uvloop's (rocketstore[fast])
pytestmark = pytest.mark.both_loops

TEST_TIMEOUT_S = 20.0


@pytest.fixture(params=["ASYNC_FLUSH", "SYNC_FLUSH"])
def cluster(tmp_path: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Every test on this fixture runs against both flush modes: under SYNC_FLUSH sends, send-backs and
    the pull path's OFFSET_MOVED_EVENT go through the broker's group-commit waits."""
    with LocalCluster(tmp_path / "store", store_overrides={"flush_disk_type": request.param}) as c:
        yield c


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


async def raw(addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    pool = ConnectionPool()
    try:
        return await pool.request(addr, RemotingCommand.request(code, ext or {}, body), 5)
    finally:
        await pool.close()


def test_send_then_pull_everything_back_with_tags_keys_and_offsets(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "py-producer") as producer:
            results = [await producer.send("PyTopic", f"m{i}".encode(), tags="TagA" if i % 2 else "TagB",
                                           keys=[f"k{i}", "common"], properties={"color": "red"})
                       for i in range(10)]
        assert {r.status for r in results} == {"SEND_OK"}
        for r in results:
            host, offset = decode_offset_message_id(r.offset_msg_id)
            assert str(host) == cluster.broker_addr and offset >= 0
        by_queue: dict[int, list[int]] = {}
        for r in results:
            by_queue.setdefault(r.message_queue.queue_id, []).append(r.queue_offset)
        assert all(offsets == list(range(len(offsets))) for offsets in by_queue.values())
        assert len(by_queue) == 4, "a new topic gets TBW102's queues capped to the client's 4"

        async with PullConsumer(cluster.namesrv_addr, "py-consumer") as consumer:
            queues = await routed(consumer, "PyTopic")
            assert [q.queue_id for q in queues] == [0, 1, 2, 3]

            async def all_dispatched() -> bool:
                return sum([await consumer.max_offset(mq) for mq in queues]) == 10

            await eventually(all_dispatched, 5, "the consume queues to hold all 10 messages")
            got = []
            for mq in queues:
                assert await consumer.committed_offset(mq) == 0, "a new group starts at 0 while data is hot"
                result = await consumer.pull(mq, 0)
                assert result.status == PullStatus.FOUND
                assert result.next_begin_offset == result.max_offset == len(result.messages)
                got.extend(result.messages)
                await consumer.commit_offset(mq, result.next_begin_offset)
                assert await consumer.committed_offset(mq) == result.next_begin_offset
                assert await consumer.max_offset(mq) == result.max_offset
                assert await consumer.min_offset(mq) == 0
            assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(10))
            for m in got:
                i = int(m.body[1:])
                assert m.tags == ("TagA" if i % 2 else "TagB") and m.keys == f"k{i} common"
                assert m.properties["color"] == "red" and m.properties["CLUSTER"] == "DefaultCluster"
                assert m.born_host.ip == bytes([127, 0, 0, 1])
            uniq = {m.properties["UNIQ_KEY"] for m in got}
            assert uniq == {r.msg_id for r in results}

            tagged = []
            for mq in queues:
                tagged.extend((await consumer.pull(mq, 0, expression="TagA")).messages)
            assert sorted(m.body for m in tagged) == sorted(f"m{i}".encode() for i in range(1, 10, 2))

            mq0 = queues[0]
            first_time = got[0].store_timestamp
            assert await consumer.search_offset(mq0, 0) == 0
            assert await consumer.search_offset(mq0, first_time + 60_000) >= 0

    arun(go)


def test_batch_send_stores_each_message_with_consecutive_offsets(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "py-batch") as producer:
            result = await producer.send_batch("PyBatch", [OutgoingMessage(f"b{i}".encode(), tags="T", keys=f"bk{i}")
                                                           for i in range(5)], queue_id=2)
        assert result.status == "SEND_OK" and result.message_queue.queue_id == 2
        assert len(result.offset_msg_id.split(",")) == 5 and len(result.msg_id.split(",")) == 5
        async with PullConsumer(cluster.namesrv_addr, "py-batch-consumer") as consumer:
            await routed(consumer, "PyBatch")
            pulled = await consumer.pull(MessageQueue("PyBatch", "broker-a", 2), 0, suspend_ms=5000)
        assert [m.body for m in pulled.messages] == [f"b{i}".encode() for i in range(5)]
        assert [m.queue_offset for m in pulled.messages] == [0, 1, 2, 3, 4]
        assert [m.keys for m in pulled.messages] == [f"bk{i}" for i in range(5)]

    arun(go)


def test_a_uniq_key_the_user_set_is_kept_and_is_the_msg_id(cluster: LocalCluster) -> None:
    """As MessageClientIDSetter.setUniqID: a message that already has a UNIQ_KEY keeps it (a re-sent message
    keeps its id), in single, orderly and batch sends; the others get new ones."""
    mine = ["0A0B0C0D00002A9F0000000000000001", "0A0B0C0D00002A9F0000000000000002", "0A0B0C0D00002A9F0000000000000003"]

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "py-uniq") as producer:
            one = await producer.send("PyUniq", b"u0", properties={"UNIQ_KEY": mine[0]}, queue_id=0)
            ordered = await producer.send_orderly("PyUniq", b"u1", 0, properties={"UNIQ_KEY": mine[1]})
            batch = await producer.send_batch("PyUniq", [OutgoingMessage(b"u2", properties={"UNIQ_KEY": mine[2]}),
                                                         OutgoingMessage(b"u3")], queue_id=0)
        assert (one.msg_id, ordered.msg_id) == (mine[0], mine[1])
        batch_ids = batch.msg_id.split(",")
        assert batch_ids[0] == mine[2] and len(batch_ids[1]) == 32 and batch_ids[1] not in mine
        cluster.wait_dispatched()  # an answered send may not be in its consume queue yet (dispatch is async)
        async with PullConsumer(cluster.namesrv_addr, "py-uniq-consumer") as consumer:
            await routed(consumer, "PyUniq")
            stored = []
            for mq in await consumer.queues("PyUniq"):
                stored += (await consumer.pull(mq, 0, 32)).messages
        assert {m.body: m.properties["UNIQ_KEY"] for m in stored} == {
            b"u0": mine[0], b"u1": mine[1], b"u2": mine[2], b"u3": batch_ids[1]}

    arun(go)


def test_a_uniform_batch_arrives_with_its_keys_tags_and_the_brokers_properties(cluster: LocalCluster) -> None:
    """The usual batch (one tags value, one body length, no keys): the client packs it column-wise and the
    broker stores each entry's properties as sent plus the batch's own (WAIT, CLUSTER), as RocketMQ does."""
    async def go() -> None:
        bodies = [f"u{i:03d}".encode() for i in range(64)]
        async with Producer(cluster.namesrv_addr, "py-uniform") as producer:
            result = await producer.send_batch("PyUniform", [OutgoingMessage(b, tags="TagU") for b in bodies],
                                               queue_id=1)
        uniq_keys = result.msg_id.split(",")
        assert result.status == "SEND_OK" and len(uniq_keys) == 64 and len(set(uniq_keys)) == 64
        async with PullConsumer(cluster.namesrv_addr, "py-uniform-consumer") as consumer:
            await routed(consumer, "PyUniform")
            got = []
            while len(got) < 64:
                pulled = await consumer.pull(MessageQueue("PyUniform", "broker-a", 1), len(got), suspend_ms=5000)
                got += pulled.messages
        assert [m.body for m in got] == bodies
        assert [m.queue_offset for m in got] == list(range(64))
        assert [m.properties["UNIQ_KEY"] for m in got] == uniq_keys
        assert {m.tags for m in got} == {"TagU"}
        assert {(m.properties.get("WAIT"), m.properties.get("CLUSTER")) for m in got} == \
            {("true", cluster.broker.config.broker_cluster_name)}

    arun(go)


def test_long_polled_pull_wakes_up_when_a_message_arrives(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "lp-producer") as producer, \
                PullConsumer(cluster.namesrv_addr, "lp-consumer") as consumer:
            await producer.send("LongPoll", b"first", queue_id=1)
            await routed(consumer, "LongPoll")
            mq = MessageQueue("LongPoll", "broker-a", 1)
            assert (await consumer.pull(mq, 0, suspend_ms=5000)).messages[0].body == b"first"
            started = time.monotonic()
            quiet = await consumer.pull(mq, 1, suspend_ms=300)
            assert quiet.status == PullStatus.NO_NEW_MSG and time.monotonic() - started >= 0.25

            waiting = asyncio.ensure_future(consumer.pull(mq, 1, suspend_ms=15_000))
            await eventually(lambda: _async(cluster.call(lambda: cluster.broker.pull_hold.waiting("LongPoll"))),
                             5, "the pull to be parked")
            started = time.monotonic()
            await producer.send("LongPoll", b"second", queue_id=1)
            woken = await waiting
            assert woken.status == PullStatus.FOUND and [m.body for m in woken.messages] == [b"second"]
            assert time.monotonic() - started < 5, "woken by the dispatch, not by the 15 s timeout"

            # a parked pull waiting for TagX ignores other tags until its timeout
            filtered = asyncio.ensure_future(consumer.pull(mq, 2, expression="TagX", suspend_ms=600))
            await eventually(lambda: _async(cluster.call(lambda: cluster.broker.pull_hold.waiting("LongPoll"))),
                             5, "the filtered pull to be parked")
            await producer.send("LongPoll", b"other", tags="TagY", queue_id=1)
            result = await filtered
            assert result.messages == []

    arun(go)


async def _async(value: Any) -> Any:
    return value


async def routed(consumer: PullConsumer, topic: str) -> list[MessageQueue]:
    """A topic auto-created by a send reaches the name server a moment later (the broker registers it in
    the background, as RocketMQ's oneway registration does)."""
    async def queues() -> list[MessageQueue]:
        try:
            return await consumer.queues(topic)
        except NoRouteError:
            return []

    return await eventually(queues, 5, f"a route for {topic}")


def test_pull_status_mapping_for_bad_offsets_and_unknown_things(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "st-producer") as producer, \
                PullConsumer(cluster.namesrv_addr, "st-consumer") as consumer:
            await producer.send("StatusTopic", b"x", queue_id=0)
            await routed(consumer, "StatusTopic")
            mq = MessageQueue("StatusTopic", "broker-a", 0)
            assert (await consumer.pull(mq, 0, suspend_ms=5000)).status == PullStatus.FOUND
            assert (await consumer.pull(mq, 1)).status == PullStatus.NO_NEW_MSG
            moved = await consumer.pull(mq, 50)
            assert moved.status == PullStatus.OFFSET_ILLEGAL and moved.next_begin_offset == 0
            empty = MessageQueue("StatusTopic", "broker-a", 3)
            assert (await consumer.pull(empty, 0)).status == PullStatus.NO_NEW_MSG
            assert (await consumer.pull(empty, 5)).status == PullStatus.OFFSET_ILLEGAL
            assert (await consumer.committed_offset(MessageQueue("StatusTopic", "broker-a", 0))) == 0
            with pytest.raises(NoRouteError):
                await consumer.queues("NoSuchTopic")
            with pytest.raises(NoRouteError):
                await consumer.pull(MessageQueue("NoSuchTopic", "broker-a", 0), 0)

            # a pull without the subscription bit needs the group's heartbeat subscription
            ext = {"consumerGroup": "nobody", "topic": "StatusTopic", "queueId": "0", "queueOffset": "0",
                   "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
                   "subVersion": "0"}
            reply = await raw(cluster.broker_addr, RequestCode.PULL_MESSAGE, ext)
            assert reply.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
            unknown_topic = await raw(cluster.broker_addr, RequestCode.PULL_MESSAGE,
                                      {**ext, "topic": "NoSuchTopic", "sysFlag": "4", "subscription": "*"})
            assert unknown_topic.code == ResponseCode.TOPIC_NOT_EXIST
            with pytest.raises(TopicNotExistError):
                from rocketstore.client.route import check
                check(unknown_topic)
            with pytest.raises(SubscriptionError):
                from rocketstore.client.route import check
                check(reply)

    arun(go)


def test_heartbeat_registers_consumers_and_creates_the_retry_topic(cluster: LocalCluster) -> None:
    async def go() -> None:
        pool = ConnectionPool()
        try:
            heartbeat = HeartbeatData("127.0.0.1@4242#DEFAULT", ("hb-producer",), (
                ConsumerData("hb-group", subscriptions=(SubscriptionData("HbTopic", "TagA || TagB", ("TagA", "TagB")),)),))
            reply = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.HEART_BEAT, body=heartbeat.encode()), 5)
            assert reply.code == ResponseCode.SUCCESS
            ids = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hb-group"}), 5)
            assert loads(ids.body) == {"consumerIdList": ["127.0.0.1@4242#DEFAULT"]}

            async def retry_route() -> bool:
                r = await pool.request(cluster.namesrv_addr, RemotingCommand.request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%hb-group"}), 5)
                return r.code == ResponseCode.SUCCESS

            await eventually(retry_route, 5, "the retry topic to be routed by the name server")
            conns = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "hb-group"}), 5)
            body = loads(conns.body)
            assert body["connectionSet"][0]["clientId"] == "127.0.0.1@4242#DEFAULT"
            assert body["subscriptionTable"]["HbTopic"]["tagsSet"] == ["TagA", "TagB"]
            assert body["messageModel"] == "CLUSTERING"
            producers = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "hb-producer"}), 5)
            assert producers.code == ResponseCode.SUCCESS

            bye = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.UNREGISTER_CLIENT, {"clientID": "127.0.0.1@4242#DEFAULT", "producerGroup": "",
                                                "consumerGroup": "hb-group"}), 5)
            assert bye.code == ResponseCode.SUCCESS
            gone = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hb-group"}), 5)
            assert gone.code == ResponseCode.SYSTEM_ERROR and gone.remark == "no consumer for this group, hb-group"
            offline = await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "hb-group"}), 5)
            assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE
        finally:
            await pool.close()

    arun(go)


def test_query_by_key_view_by_id_and_admin_views(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "q-producer") as producer:
            sent = await producer.send("QueryTopic", b"findme", keys="order-77", tags="T")
        broker = cluster.broker_addr
        now = int(time.time() * 1000)

        async def query() -> RemotingCommand | None:
            # the index is built by dispatch, a moment after the put (as in RocketMQ)
            r = await raw(broker, RequestCode.QUERY_MESSAGE, {"topic": "QueryTopic", "key": "order-77", "maxNum": "32",
                                                              "beginTimestamp": "0", "endTimestamp": str(now + 60_000)})
            return r if r.code == ResponseCode.SUCCESS else None

        found = await eventually(query, 5, "the message to be indexed")
        assert [m.body for m in decode_messages(found.body)] == [b"findme"]
        assert int(found.ext_fields["indexLastUpdatePhyoffset"]) >= 0
        by_uniq = await raw(broker, RequestCode.QUERY_MESSAGE, {"topic": "QueryTopic", "key": sent.msg_id, "maxNum": "1",
                                                                "beginTimestamp": "0", "endTimestamp": str(now + 60_000),
                                                                "_UNIQUE_KEY_QUERY": "true"})
        assert [m.body for m in decode_messages(by_uniq.body)] == [b"findme"]
        missing = await raw(broker, RequestCode.QUERY_MESSAGE, {"topic": "QueryTopic", "key": "nope", "maxNum": "32",
                                                                "beginTimestamp": "0", "endTimestamp": str(now)})
        assert missing.code == ResponseCode.QUERY_NOT_FOUND

        _, offset = decode_offset_message_id(sent.offset_msg_id)
        viewed = await raw(broker, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        [message] = decode_messages(viewed.body)
        assert message.body == b"findme" and message.commit_log_offset == offset and message.msg_id == sent.offset_msg_id
        bad = await raw(broker, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "999999999"})
        assert bad.code == ResponseCode.SYSTEM_ERROR

        stats = await raw(broker, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "QueryTopic"})
        table = loads(stats.body)["offsetTable"]
        assert sum(v["maxOffset"] for v in table.values()) == 1
        assert {dict(k)["topic"] for k in table} == {"QueryTopic"}
        assert (await raw(broker, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Nope"})).code == \
            ResponseCode.TOPIC_NOT_EXIST

        info = loads((await raw(broker, RequestCode.GET_BROKER_RUNTIME_INFO)).body)["table"]
        assert info["brokerVersionDesc"] == "V4_9_3" and int(info["commitLogMaxOffset"]) > 0

        unknown = await raw(broker, 9999)
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        async with PullConsumer(cluster.namesrv_addr, "stats-group") as consumer:
            await routed(consumer, "QueryTopic")
            await consumer.commit_offset(sent.message_queue, 1)
        consume = loads((await raw(broker, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "stats-group",
                                                                           "topic": "QueryTopic"})).body)
        entries = {dict(k)["queueId"]: v for k, v in consume["offsetTable"].items()}
        assert entries[sent.message_queue.queue_id] == {"brokerOffset": 1, "consumerOffset": 1,
                                                        "lastTimestamp": message.store_timestamp}

    arun(go)


def test_name_server_views_and_admin_topic_creation(cluster: LocalCluster) -> None:
    async def go() -> None:
        ns = cluster.namesrv_addr
        missing = await raw(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nowhere"})
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        assert (missing.remark or "").startswith("No topic route info in name server for the topic: Nowhere")
        tbw = TopicRouteData.decode((await raw(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})).body)
        assert tbw.queue_datas[0].perm == 7 and tbw.queue_datas[0].write_queue_nums == 8
        assert tbw.broker_datas[0].broker_addrs == {0: cluster.broker_addr}
        cluster_info = loads((await raw(ns, RequestCode.GET_BROKER_CLUSTER_INFO)).body)
        assert cluster_info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}

        created = await raw(cluster.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "AdminTopic", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "3",
            "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        assert created.code == ResponseCode.SUCCESS

        async def routed() -> TopicRouteData | None:
            r = await raw(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AdminTopic"})
            return TopicRouteData.decode(r.body) if r.code == ResponseCode.SUCCESS else None

        route = await eventually(routed, 5, "the new topic to reach the name server")
        assert (route.queue_datas[0].read_queue_nums, route.queue_datas[0].write_queue_nums) == (2, 3)
        topics = loads((await raw(ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body)["topicList"]
        assert "AdminTopic" in topics and "TBW102" in topics
        unit = await raw(cluster.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "UnitSubTopic", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
            "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "2", "order": "false"})
        assert unit.code == ResponseCode.SUCCESS

        async def unit_lists() -> tuple[list[str], list[str], list[str]] | None:
            lists = [loads((await raw(ns, code)).body)["topicList"] for code in (
                RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
                RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST)]
            return (lists[0], lists[1], lists[2]) if "UnitSubTopic" in lists[1] else None

        assert await eventually(unit_lists, 5, "the unit-sub topic to reach the name server") == (
            [], ["UnitSubTopic"], ["UnitSubTopic"])
        clash = await raw(cluster.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "TBW102", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "3",
            "perm": "6", "topicFilterType": "SINGLE_TAG"})
        assert clash.code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in (clash.remark or "")
        # 4.9.3's TopicValidator reserves these whether or not the broker holds them (no traceTopicEnable,
        # no transaction yet) and every rmq_sys_ name; deleting them is refused alike
        for reserved in ("RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_anything"):
            for code, ext in ((RequestCode.UPDATE_AND_CREATE_TOPIC, {
                    "topic": reserved, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                    "perm": "6", "topicFilterType": "SINGLE_TAG"}), (RequestCode.DELETE_TOPIC_IN_BROKER,
                                                                    {"topic": reserved})):
                refused = await raw(cluster.broker_addr, code, ext)
                assert (refused.code, refused.remark) == (
                    ResponseCode.SYSTEM_ERROR, f"The topic[{reserved}] is conflict with system topic."), (reserved, code)
        system = loads((await raw(cluster.broker_addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)).body)
        assert {"RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC", "TBW102", "DefaultCluster",
                "broker-a"} <= set(system["topicList"])
        bad_name = await raw(cluster.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "bad topic!", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "3",
            "perm": "6", "topicFilterType": "SINGLE_TAG"})
        assert bad_name.code == ResponseCode.SYSTEM_ERROR

        # sends: an illegal queue id and a forbidden topic
        send_ext = {"a": "g", "b": "AdminTopic", "c": "TBW102", "d": "4", "e": "7", "f": "0", "g": "0", "h": "0"}
        illegal = await raw(cluster.broker_addr, RequestCode.SEND_MESSAGE_V2, send_ext, b"x")
        assert illegal.code == ResponseCode.SYSTEM_ERROR
        schedule = await raw(cluster.broker_addr, RequestCode.SEND_MESSAGE_V2, {**send_ext, "b": "SCHEDULE_TOPIC_XXXX",
                                                                                "e": "0"}, b"x")
        assert schedule.code == ResponseCode.NO_PERMISSION
        missing_field = await raw(cluster.broker_addr, RequestCode.SEND_MESSAGE_V2, {"a": "g"}, b"x")
        assert missing_field.code == ResponseCode.SYSTEM_ERROR

    arun(go)


def test_messages_and_offsets_survive_a_broker_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LocalCluster(store) as cluster:
        async def first() -> MessageQueue:
            async with Producer(cluster.namesrv_addr, "r-producer") as producer:
                for i in range(6):
                    last = await producer.send("Durable", f"d{i}".encode(), queue_id=0)
            async with PullConsumer(cluster.namesrv_addr, "r-group") as consumer:
                await routed(consumer, "Durable")
                await consumer.commit_offset(last.message_queue, 4)
            return last.message_queue

        mq = arun(first)
    with LocalCluster(store) as cluster:
        async def second() -> None:
            async with PullConsumer(cluster.namesrv_addr, "r-group") as consumer:
                assert await consumer.committed_offset(mq) == 4
                result = await consumer.pull(mq, 4)
                assert [m.body for m in result.messages] == [b"d4", b"d5"]

        arun(second)


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_send_back_goes_to_the_retry_topic_after_a_delay_or_to_the_dlq(tmp_path: Path, flush: str) -> None:
    # under SYNC_FLUSH the send-back and the schedule service's delivery wait for the group commit
    fast = {"message_delay_level": " ".join(["1s"] * 18), "flush_disk_type": flush}
    with LocalCluster(tmp_path / "store", store_overrides=fast) as cluster:
        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "sb-producer") as producer, \
                    PullConsumer(cluster.namesrv_addr, "sb-group") as consumer:
                sent = await producer.send("SendBack", b"again", tags="T", keys="sb-1", queue_id=0)
                await routed(consumer, "SendBack")
                [original] = (await consumer.pull(sent.message_queue, 0, suspend_ms=5000)).messages
                _, offset = decode_offset_message_id(sent.offset_msg_id)
                back = {"offset": str(offset), "group": "sb-group", "delayLevel": "0", "originMsgId": sent.msg_id,
                        "originTopic": "SendBack"}
                assert (await raw(cluster.broker_addr, RequestCode.CONSUMER_SEND_MSG_BACK, back)).code == 0
                retry = MessageQueue("%RETRY%sb-group", "broker-a", 0)
                await routed(consumer, retry.topic)
                [redelivered] = (await consumer.pull(retry, 0, suspend_ms=8000)).messages
                assert redelivered.body == b"again" and redelivered.reconsume_times == 1
                props = redelivered.properties
                assert props["RETRY_TOPIC"] == "SendBack" and props["ORIGIN_MESSAGE_ID"] == original.msg_id
                # the delivered record keeps the DELAY it waited with, as RocketMQ 4.9.3's records do
                assert props["KEYS"] == "sb-1" and props["DELAY"] == "3"

                dead = {**back, "delayLevel": "-1"}
                assert (await raw(cluster.broker_addr, RequestCode.CONSUMER_SEND_MSG_BACK, dead)).code == 0
                dlq = MessageQueue("%DLQ%sb-group", "broker-a", 0)
                await routed(consumer, dlq.topic)
                [buried] = (await consumer.pull(dlq, 0, suspend_ms=5000)).messages
                assert buried.body == b"again" and buried.topic == "%DLQ%sb-group"

                # a group never seen is created (autoCreateSubscriptionGroup), as 4.9.3's findSubscriptionGroupConfig
                stranger = await raw(cluster.broker_addr, RequestCode.CONSUMER_SEND_MSG_BACK,
                                     {**back, "group": "never-seen"})
                assert stranger.code == ResponseCode.SUCCESS, stranger.remark
                assert cluster.call(lambda: cluster.broker.groups.get("never-seen")) is not None
                missing = await raw(cluster.broker_addr, RequestCode.CONSUMER_SEND_MSG_BACK,
                                    {**back, "offset": "123456789"})
                assert missing.code == ResponseCode.SYSTEM_ERROR

                delayed = await producer.send("SendBack", b"later", properties={"DELAY": "3"}, queue_id=1)
                mq1 = MessageQueue("SendBack", "broker-a", 1)
                assert delayed.message_queue.queue_id == 1
                started = time.monotonic()
                [late] = (await consumer.pull(mq1, 0, suspend_ms=8000)).messages
                assert late.body == b"later" and time.monotonic() - started > 0.5
                assert late.properties["REAL_TOPIC"] == "SendBack"

        arun(go)
