"""The lite pull consumer (rocketstore.client.LitePullConsumer, 4.9.3's DefaultLitePullConsumer) against an
in-process name server + broker: a group sharing the queues polls every message once and commits (auto and
commit_sync), a restart goes on from the committed offsets, a queue rebalanced away is dropped with its
buffer and its committed offset written out, assign mode with seek / pause / resume, poll timeouts, offset look-ups,
SQL92 selection, the blocking wrapper, and the errors bad calls get."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import (
    arun,
    committed,
    create_topic,
    eventually,
    max_offsets,
    send_all,
    topic_queues,
)

from rocketstore.client import (
    BlockingLitePullConsumer,
    BrokerError,
    ClientError,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumerNotRunningError,
    LitePullConsumer,
    MessageModel,
    MessageQueue,
    MessageSelector,
    Producer,
    SubscriptionConflictError,
    group_requests,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.offset_store import LocalFileOffsetStore
from rocketstore.remoting.bodies import ConsumerData, ConsumeType, HeartbeatData, build_subscription
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo
from rocketstore.remoting.transport import ConnectionPool

#: short periods so heartbeats, rebalances and offset writes happen within a test's patience
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "auto_commit_interval_s": 1.0,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def key(m: ConsumedMessage) -> tuple[int, int]:
    return m.queue_id, m.queue_offset


async def poll_until(consumer: LitePullConsumer, sink: list[ConsumedMessage], count: int, what: str,
                     timeout_s: float = 30.0) -> list[int]:
    """Poll into *sink* until it holds *count* messages; the sizes of the batches polled."""
    deadline = time.monotonic() + timeout_s
    sizes = []
    while len(sink) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: {len(sink)} of {count}")
        batch = await consumer.poll(0.2)
        if batch:
            assert len({m.queue_id for m in batch}) == 1, "a batch is one queue's"
            sizes.append(len(batch))
        sink.extend(batch)
    return sizes


def consumed_ends(messages: list[ConsumedMessage]) -> dict[int, int]:
    """Per queue id, the offset after the last of *messages*."""
    ends: dict[int, int] = {}
    for m in messages:
        ends[m.queue_id] = max(ends.get(m.queue_id, 0), m.queue_offset + 1)
    return ends


# --- subscribe: the group shares the queues ----------------------------------------------------------------


def test_a_group_polls_every_message_once_commits_and_a_restart_goes_on_from_the_committed_offsets(
        cluster: LocalCluster) -> None:
    topic, group = "LiteShared", "lite-shared-group"

    async def go() -> None:
        await create_topic(cluster, topic)
        a = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
        b = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
        a.subscribe(topic, "*")
        b.subscribe(topic)
        async with a, b:
            await eventually(lambda: a.assignment() and b.assignment() and not a.assignment() & b.assignment()
                             and a.assignment() | b.assignment() == topic_queues(topic), 15,
                             "the queues split between the two members")
            ids = set(await send_all(cluster, topic, 40))
            got_a: list[ConsumedMessage] = []
            got_b: list[ConsumedMessage] = []
            done = asyncio.Event()

            async def drain(consumer: LitePullConsumer, sink: list[ConsumedMessage]) -> None:
                while not done.is_set():
                    sink.extend(await consumer.poll(0.2))
                    if len(got_a) + len(got_b) >= 40:
                        done.set()

            await asyncio.wait_for(asyncio.gather(drain(a, got_a), drain(b, got_b)), 30)
            both = got_a + got_b
            assert Counter(m.msg_id for m in both) == Counter(ids), "every message exactly once"
            assert all(m.topic == topic and len(m.body) > 0 for m in both)
            assert {MessageQueue(topic, "broker-a", m.queue_id) for m in got_a} <= a.assignment()
            assert {MessageQueue(topic, "broker-a", m.queue_id) for m in got_b} <= b.assignment()
            for sink in (got_a, got_b):  # each queue's messages come in offset order, one batch at most 10
                for q in {m.queue_id for m in sink}:
                    offsets = [m.queue_offset for m in sink if m.queue_id == q]
                    assert offsets == sorted(offsets)
            ends = max_offsets(cluster, topic)
            # a commits now; b's offsets go by auto commit (a later poll) and the periodic write
            await a.commit_sync()
            for mq in a.assignment():
                assert committed(cluster, group, topic)[mq.queue_id] == ends[mq.queue_id]
                assert await a.committed(mq) == ends[mq.queue_id]

            async def b_committed() -> bool:
                await b.poll(0.1)
                broker = committed(cluster, group, topic)
                return all(broker.get(mq.queue_id) == ends[mq.queue_id] for mq in b.assignment())

            await eventually(b_committed, 15, "b's offsets auto-committed")
        ids_after = set(await send_all(cluster, topic, 20, prefix="after"))
        async with LitePullConsumer(cluster.namesrv_addr, group, **FAST) as c:
            c.subscribe(topic)
            again: list[ConsumedMessage] = []
            await poll_until(c, again, 20, "the messages sent after the restart")
            assert await c.poll(0.5) == []
            assert Counter(m.msg_id for m in again) == Counter(ids_after), "only what was not committed"

    arun(go)


def test_a_queue_rebalanced_away_is_dropped_with_its_buffer_and_its_committed_offset_written_out(
        cluster: LocalCluster) -> None:
    """A second member (a bare heartbeat, which consumes nothing) joins: the lite consumer gives up half the
    queues and never hands out what it had buffered of them.  What it writes out for them is what it had
    committed (commit_sync here), not where its later polls got to: as 4.9.3, the next owner sees the
    batch in hand again rather than skip it."""
    topic, group = "LiteLeave", "lite-leave-group"
    other = "zzz@other-member"  # sorts after any ip-based client id: it gets the second half

    async def go() -> None:
        await create_topic(cluster, topic)
        await send_all(cluster, topic, 80)
        cluster.wait_dispatched()
        ends = max_offsets(cluster, topic)
        # auto commit only at the first poll (nothing consumed yet): the leave alone commits what was polled
        settings = {**FAST, "auto_commit_interval_s": 600.0}
        async with LitePullConsumer(cluster.namesrv_addr, group, **settings) as consumer:
            consumer.subscribe(topic)
            await eventually(lambda: consumer.assignment() == topic_queues(topic), 15, "all four queues")
            polled: list[ConsumedMessage] = []
            while not any(m.queue_id in (2, 3) for m in polled):
                await poll_until(consumer, polled, len(polled) + 1, "a batch of queue 2 or 3")
            await consumer.commit_sync()
            at_commit = consumed_ends(polled)
            while sum(1 for m in polled if m.queue_id in (2, 3)) <= sum(at_commit.get(q, 0) for q in (2, 3)):
                await poll_until(consumer, polled, len(polled) + 1, "a later batch of queue 2 or 3")
            # let the pull tasks buffer more than was polled
            await eventually(lambda: len(consumer.consumption.batches) >= 4, 15, "batches waiting")
            pool = ConnectionPool()
            try:
                sub = build_subscription(topic, "*", 1)
                data = HeartbeatData(other, (), (ConsumerData(group, ConsumeType.ACTIVELY, "CLUSTERING",
                                                              "CONSUME_FROM_LAST_OFFSET", (sub,)),))
                await group_requests.heartbeat(pool, cluster.broker_addr, data, 5)
                mine = {MessageQueue(topic, "broker-a", q) for q in (0, 1)}
                await eventually(lambda: consumer.assignment() == mine, 15, "queues 2 and 3 given up")
                reached = consumed_ends(polled)
                broker = committed(cluster, group, topic)
                assert any(reached.get(q, 0) > at_commit.get(q, 0) for q in (2, 3)), "polled past the commit"
                for q in (2, 3):  # where commit_sync left them (nothing polled: where it started, 0)
                    assert broker[q] == at_commit.get(q, 0)
                later: list[ConsumedMessage] = []
                kept = sum(1 for m in polled if m.queue_id in (0, 1))
                await poll_until(consumer, later, ends[0] + ends[1] - kept, "the rest of queues 0 and 1")
                assert await consumer.poll(0.5) == []
                assert {m.queue_id for m in later} <= {0, 1}, "nothing buffered of a dropped queue"
                everything = [key(m) for m in polled + later]
                assert len(set(everything)) == len(everything), "no message twice"
                assert {k for k in everything if k[0] in (0, 1)} == {
                    (q, o) for q in (0, 1) for o in range(ends[q])}, "all of queues 0 and 1"
            finally:
                await group_requests.unregister(pool, cluster.broker_addr, other, group, 5)
                await pool.close()

    arun(go)


def test_the_broker_sees_an_active_consumer_without_a_retry_subscription(cluster: LocalCluster) -> None:
    """4.9.3's lite consumer heartbeats CONSUME_ACTIVELY, CONSUME_FROM_LAST_OFFSET and only the topics it
    subscribed (it sends nothing back, so no %RETRY% subscription), answers GET_CONSUMER_RUNNING_INFO and
    unregisters at close."""
    topic, group = "LiteSeen", "lite-seen-group"

    async def go() -> None:
        await create_topic(cluster, topic)
        consumer = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
        consumer.subscribe(topic, "TagA || TagB")
        async with consumer, AdminClient(cluster.namesrv_addr) as admin:
            info = cluster.call(lambda: cluster.broker.clients.group(group))
            assert info is not None and info.client_ids() == [consumer.client_id]
            assert (info.consume_type, info.message_model, info.consume_from_where) == (
                "CONSUME_ACTIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
            assert set(info.subscriptions) == {topic}
            running = await admin.consumer_running_info(group, consumer.client_id)
            assert running.properties["consumerGroup"] == group
            assert running.properties["pullBatchSize"] == "10"
            assert int(running.properties[ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP]) > 0
            assert [(sub.topic, sub.tags_set) for sub in running.subscriptions] == [(topic, ("TagA", "TagB"))]
        assert cluster.call(lambda: cluster.broker.clients.consumer_ids(group)) == []

    arun(go)


def test_broadcasting_members_each_poll_everything_and_keep_their_offsets_in_their_own_files(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "LiteBroadcast", "lite-broadcast-group"
    offset_dir = tmp_path / "offsets"

    def member(name: str) -> LitePullConsumer:
        consumer = LitePullConsumer(cluster.namesrv_addr, group, message_model=MessageModel.BROADCASTING,
                                    instance_name=name, offset_dir=str(offset_dir), **FAST)
        consumer.subscribe(topic)
        return consumer

    def file_offsets(consumer: LitePullConsumer) -> dict[int, int]:
        path = offset_dir / consumer.client_id / group / "offsets.json"
        return {mq.queue_id: offset for mq, offset in LocalFileOffsetStore(path)._read_file().items()}

    async def go() -> None:
        await create_topic(cluster, topic)
        ids = await send_all(cluster, topic, 12)
        a, b = member("lite-a"), member("lite-b")
        async with a, b:
            for consumer in (a, b):
                got: list[ConsumedMessage] = []
                await poll_until(consumer, got, 12, f"everything for {consumer.client_id}")
                assert Counter(m.msg_id for m in got) == Counter(ids)
            await a.commit_sync()
            ends = max_offsets(cluster, topic)
            assert file_offsets(a) == ends
            # b commits by a poll once the auto commit interval passed (close commits nothing, as 4.9.3's)
            await asyncio.sleep(FAST["auto_commit_interval_s"])
            assert await b.poll(0) == []
        assert file_offsets(b) == ends, "b's auto commit written out"
        assert committed(cluster, group, topic) == {}, "nothing committed to the broker"
        later = set(await send_all(cluster, topic, 4, prefix="later"))
        async with member("lite-a") as again:
            got = []
            await poll_until(again, got, 4, "the messages sent after the restart")
            assert await again.poll(0.5) == []
            assert {m.msg_id for m in got} == later

    arun(go)


def test_unsubscribe_drops_the_topic_and_the_heartbeat_leaves_it_out(cluster: LocalCluster) -> None:
    keep, drop, group = "LiteKeep", "LiteDrop", "lite-unsubscribe-group"

    async def go() -> None:
        await create_topic(cluster, keep)
        await create_topic(cluster, drop)
        await send_all(cluster, drop, 8)
        async with LitePullConsumer(cluster.namesrv_addr, group, **FAST) as consumer:
            consumer.subscribe(keep)
            consumer.subscribe(drop)
            got: list[ConsumedMessage] = []
            await poll_until(consumer, got, 8, "the dropped topic's messages")
            consumer.unsubscribe(drop)
            assert consumer.assignment(drop) == set()

            def subscribed() -> set[str]:
                info = cluster.broker.clients.group(group)
                return set(info.subscriptions) if info is not None else set()

            await eventually(lambda: cluster.call(subscribed) == {keep}, 15, "a heartbeat without the topic")
            await send_all(cluster, drop, 4, prefix="late")
            kept = set(await send_all(cluster, keep, 4))
            rest: list[ConsumedMessage] = []
            await poll_until(consumer, rest, 4, "the kept topic's messages")
            assert await consumer.poll(0.5) == []
            assert {m.msg_id for m in rest} == kept

    arun(go)


# --- assign: exactly the queues given ----------------------------------------------------------------------


def test_assign_mode_seek_seek_to_begin_seek_to_end_pause_and_resume(cluster: LocalCluster) -> None:
    topic, group = "LiteAssign", "lite-assign-group"
    mq = MessageQueue(topic, "broker-a", 0)

    async def go() -> None:
        await create_topic(cluster, topic)
        async with Producer(cluster.namesrv_addr, "lite-producer") as producer:
            for i in range(30):
                await producer.send(topic, f"m{i}".encode(), queue_id=0)
            async with LitePullConsumer(cluster.namesrv_addr, group, auto_commit=False, **FAST) as consumer:
                assert await consumer.fetch_message_queues(topic) == sorted(topic_queues(topic))
                consumer.assign([mq])
                got: list[ConsumedMessage] = []
                sizes = await poll_until(consumer, got, 30, "the queue's thirty messages")
                assert [m.queue_offset for m in got] == list(range(30))
                assert [m.body for m in got] == [f"m{i}".encode() for i in range(30)]
                assert max(sizes) <= 10, "a poll returns at most pull_batch_size messages"
                # without auto commit polls commit nothing: still where a new group starts (the broker says 0)
                assert await consumer.committed(mq) == 0
                assert committed(cluster, group, topic).get(0, 0) == 0
                await consumer.commit_sync()
                assert committed(cluster, group, topic) == {0: 30}
                assert await consumer.committed(mq) == 30

                await consumer.seek(mq, 10)
                again: list[ConsumedMessage] = []
                await poll_until(consumer, again, 20, "offsets 10 to 29 again")
                assert [m.queue_offset for m in again] == list(range(10, 30))
                await consumer.seek_to_begin(mq)
                first = await consumer.poll(10)
                assert first and first[0].queue_offset == 0 and first[0].body == b"m0"
                await consumer.commit_sync()  # seek moved the consumed offset back; committing says so
                assert committed(cluster, group, topic)[0] == first[-1].queue_offset + 1

                consumer.pause([mq])
                await consumer.seek_to_end(mq)  # restarts the pull: a paused queue does not pull
                for i in range(30, 35):
                    await producer.send(topic, f"m{i}".encode(), queue_id=0)
                assert await consumer.poll(1.0) == []
                consumer.resume([mq])
                rest: list[ConsumedMessage] = []
                await poll_until(consumer, rest, 5, "the messages sent while paused")
                assert [m.queue_offset for m in rest] == list(range(30, 35))
                assert consumer.assignment() == {mq}

    arun(go)


def test_poll_returns_nothing_when_no_message_comes(cluster: LocalCluster) -> None:
    topic = "LiteEmpty"

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        async with LitePullConsumer(cluster.namesrv_addr, "lite-empty-group", **FAST) as consumer:
            consumer.assign(topic_queues(topic, 2))
            assert await consumer.poll(0.3) == []
            assert await consumer.poll(0) == []

    arun(go)


def test_offset_for_timestamp_finds_the_message_stored_then(cluster: LocalCluster) -> None:
    topic = "LiteTime"
    mq = MessageQueue(topic, "broker-a", 0)

    def now_ms() -> int:
        return int(time.time() * 1000)

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        async with Producer(cluster.namesrv_addr, "lite-producer") as producer:
            for i in range(6):
                await producer.send(topic, f"m{i}".encode(), queue_id=0)
                # the next message gets a later store timestamp than this one
                stored_at = now_ms()
                await eventually(lambda t=stored_at: now_ms() > t + 1, 5, "the clock to move on")
        cluster.wait_dispatched()
        stored = cluster.call(lambda: cluster.broker.store.get(topic, 0, 0, 32).messages)
        times = [m.store_timestamp for m in stored]
        assert len(set(times)) == 6
        async with LitePullConsumer(cluster.namesrv_addr, "lite-time-group", **FAST) as consumer:
            for i, t in enumerate(times):
                assert await consumer.offset_for_timestamp(mq, t) == i

    arun(go)


# --- SQL92 ---------------------------------------------------------------------------------------------------


def test_a_sql92_subscription_polls_exactly_the_matching_messages(tmp_path: Path) -> None:
    topic, group = "LiteSql", "lite-sql-group"
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        async def go() -> None:
            await create_topic(cluster, topic)
            async with Producer(cluster.namesrv_addr, "lite-producer") as producer:
                for i in range(40):
                    await producer.send(topic, f"m{i}".encode(), properties={"a": str(i)})
            consumer = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
            consumer.subscribe(topic, MessageSelector.by_sql("a >= 30 OR a < 3"))
            async with consumer:
                got: list[ConsumedMessage] = []
                await poll_until(consumer, got, 13, "the matching messages")
                assert await consumer.poll(0.5) == []
                assert sorted(int(m.body[1:]) for m in got) == [0, 1, 2, *range(30, 40)]

        arun(go)


def test_a_sql92_subscription_without_property_filtering_fails_start(cluster: LocalCluster) -> None:
    async def go() -> None:
        await create_topic(cluster, "LiteSqlOff")
        consumer = LitePullConsumer(cluster.namesrv_addr, "lite-sql-off-group", **FAST)
        consumer.subscribe("LiteSqlOff", MessageSelector.by_sql("a > 1"))
        with pytest.raises(BrokerError):
            await consumer.start()
        with pytest.raises(ConsumerNotRunningError):
            await consumer.poll(0)

    arun(go)


# --- bad input --------------------------------------------------------------------------------------------


def test_bad_calls_get_clear_errors(cluster: LocalCluster) -> None:
    topic = "LiteBad"
    mq = MessageQueue(topic, "broker-a", 0)

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        await send_all(cluster, topic, 4)
        consumer = LitePullConsumer(cluster.namesrv_addr, "lite-bad-group", **FAST)
        with pytest.raises(ConsumerNotRunningError, match="start it first"):
            await consumer.poll(0)
        with pytest.raises(ValueError, match="empty"):
            consumer.assign([])
        with pytest.raises(ValueError, match="topic"):
            consumer.subscribe("")
        consumer.assign([mq])
        with pytest.raises(SubscriptionConflictError, match="mutually exclusive"):
            consumer.subscribe(topic)
        async with consumer:
            with pytest.raises(ValueError, match="negative"):
                await consumer.poll(-1)
            with pytest.raises(ClientError, match="not in the assigned list"):
                await consumer.seek(MessageQueue(topic, "broker-a", 1), 0)
            with pytest.raises(ClientError, match="seek offset illegal"):
                await consumer.seek(mq, 1000)
            with pytest.raises(ClientError, match="already started"):
                await consumer.start()
        with pytest.raises(ConsumerNotRunningError, match="closed"):
            await consumer.poll(0)
        with pytest.raises(ConsumerNotRunningError):
            await consumer.commit_sync()
        other = LitePullConsumer(cluster.namesrv_addr, "lite-bad-group-2", **FAST)
        other.subscribe(topic)
        with pytest.raises(SubscriptionConflictError):
            other.assign([mq])
        with pytest.raises(ValueError, match="auto_commit_interval_s"):
            LitePullConsumer(cluster.namesrv_addr, "g", auto_commit_interval_s=0.5)
        with pytest.raises(ValueError, match="pull_batch_size"):
            LitePullConsumer(cluster.namesrv_addr, "g", pull_batch_size=0)

    arun(go)


# --- the blocking wrapper -------------------------------------------------------------------------------------


def test_the_blocking_lite_pull_consumer_polls_and_commits_from_plain_threads(cluster: LocalCluster) -> None:
    topic, group = "LiteBlocking", "lite-blocking-group"
    arun(lambda: create_topic(cluster, topic))
    ids = arun(lambda: send_all(cluster, topic, 12))
    with BlockingLitePullConsumer(cluster.namesrv_addr, group, **FAST) as consumer:
        consumer.subscribe(topic)
        got: list[ConsumedMessage] = []
        deadline = time.monotonic() + 30
        while len(got) < 12 and time.monotonic() < deadline:
            got.extend(consumer.poll(0.2))
        assert Counter(m.msg_id for m in got) == Counter(ids)
        consumer.commit_sync()
        assert committed(cluster, group, topic) == max_offsets(cluster, topic)
        assert consumer.assignment() == topic_queues(topic)


# --- queue-set change listeners (registerTopicMessageQueueChangeListener) ------------------------------------


def test_a_queue_change_listener_hears_of_new_queues_and_not_of_unchanged_ones(cluster: LocalCluster) -> None:
    topic, other = "TopicLiteQueues", "TopicLiteQueuesAsync"
    heard: list[tuple[str, frozenset[MessageQueue]]] = []

    def listener(t: str, queues: frozenset[MessageQueue]) -> None:
        heard.append((t, queues))

    async def async_listener(t: str, queues: frozenset[MessageQueue]) -> None:
        await asyncio.sleep(0)
        heard.append((t, queues))

    async def go() -> None:
        await create_topic(cluster, topic, 4)
        await create_topic(cluster, other, 2)
        consumer = LitePullConsumer(cluster.namesrv_addr, "lite-queue-listener", **FAST)
        consumer.subscribe(topic)
        await consumer.register_topic_message_queue_change_listener(topic, listener)  # before start
        async with consumer:
            await consumer.register_topic_message_queue_change_listener(other, async_listener)  # while running
            await consumer.check_topic_queues()
            assert heard == []  # the queues at start and at registration are the baseline
            await create_topic(cluster, topic, 8)
            await consumer.check_topic_queues()
            assert heard == [(topic, frozenset(topic_queues(topic, 8)))]
            await consumer.check_topic_queues()
            assert len(heard) == 1  # no change, no call
            await create_topic(cluster, other, 3)
            await consumer.check_topic_queues()
            assert heard[1:] == [(other, frozenset(topic_queues(other, 3)))]

    arun(go)


def test_the_periodic_check_calls_the_listener_and_survives_its_failures(cluster: LocalCluster) -> None:
    topic = "TopicLiteQueuesTimer"
    calls: list[int] = []

    def failing(t: str, queues: frozenset[MessageQueue]) -> None:
        calls.append(len(queues))
        raise RuntimeError("a listener's bug")

    async def go() -> None:
        await create_topic(cluster, topic, 2)
        async with LitePullConsumer(cluster.namesrv_addr, "lite-queue-timer", topic_metadata_check_interval_s=0.2,
                                    **FAST) as consumer:
            consumer.assign(topic_queues(topic, 2))
            await consumer.register_topic_message_queue_change_listener(topic, failing)
            await create_topic(cluster, topic, 5)
            await eventually(lambda: calls == [5], 15, "the periodic check to report 5 queues")
            await create_topic(cluster, topic, 6)
            await eventually(lambda: calls == [5, 6], 15, "the check to go on after the listener raised")

    arun(go)


def test_the_blocking_consumer_registers_queue_change_listeners(cluster: LocalCluster) -> None:
    topic = "TopicLiteQueuesBlocking"
    heard: list[int] = []
    arun(lambda: create_topic(cluster, topic, 2))
    with BlockingLitePullConsumer(cluster.namesrv_addr, "lite-queue-blocking", **FAST) as consumer:
        consumer.subscribe(topic)
        consumer.register_topic_message_queue_change_listener(topic, lambda t, queues: heard.append(len(queues)))
        arun(lambda: create_topic(cluster, topic, 4))
        consumer.check_topic_queues()
        assert heard == [4]
    with pytest.raises(ValueError, match="topic"):
        LitePullConsumer(cluster.namesrv_addr, "g", topic_metadata_check_interval_s=0)
