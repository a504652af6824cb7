"""The Python push consumer (rocketstore.client.PushConsumer) against an in-process name server + broker:
retries through %RETRY% into the DLQ, queue sharing and rebalancing, broadcasting with local offsets,
orderly consumption under broker locks, delayed messages, at-least-once across a SIGKILL, and where a new
group starts."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    BlockingPushConsumer,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageModel,
    MessageQueue,
    OffsetStoreError,
    Producer,
    PullConsumer,
    PushConsumer,
    allocate_averagely,
)
from rocketstore.client.errors import NoRouteError
from rocketstore.client.offset_store import LocalFileOffsetStore
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.errors import ConnectionClosedError
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.headers import CreateTopicRequestHeader

TEST_TIMEOUT_S = 60.0
HERE = Path(__file__).resolve().parent
#: every delay level 1 s, so retries come back quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
#: short periods so rebalances, commits and lock renewals happen within a test's patience
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 2000, "pull_delay_on_error_s": 0.2,
                        "local_retry_delay_s": 0.5, "suspend_current_queue_s": 0.1, "lock_renew_interval_s": 0.5}
SUCCESS = ConsumeStatus.CONSUME_SUCCESS
LATER = ConsumeStatus.RECONSUME_LATER


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def stored(cluster: LocalCluster, topic: str, queue_id: int = 0) -> list[StoredMessage]:
    return cluster.call(lambda: cluster.broker.store.get(topic, queue_id, 0, 1000).messages)


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))


def max_offsets(cluster: LocalCluster, topic: str, queue_count: int = 4) -> dict[int, int]:
    return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(queue_count)})


async def send_all(cluster: LocalCluster, topic: str, count: int, *, prefix: str = "m",
                   **kw: Any) -> list[str]:
    async with Producer(cluster.namesrv_addr, "push-test-producer") as producer:
        return [(await producer.send(topic, f"{prefix}{i}".encode(), **kw)).msg_id for i in range(count)]


async def create_topic(cluster: LocalCluster, topic: str, queue_count: int = 4, perm: int = 6) -> None:
    """UPDATE_AND_CREATE_TOPIC on the broker, then wait for the name server to route it (a topic with no
    message yet, so no message can be handed over by the first rebalances)."""
    header = CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=queue_count,
                                      write_queue_nums=queue_count, perm=perm, topic_filter_type="SINGLE_TAG")
    async with PullConsumer(cluster.namesrv_addr, "push-test-admin") as admin:
        response = await admin.pool.request(
            cluster.broker_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC,
                                                         header.to_ext_fields()), 5)
        assert response.code == ResponseCode.SUCCESS, response.remark

        async def routed() -> bool:
            try:
                return len(await admin.queues(topic)) == queue_count
            except NoRouteError:
                return False

        await eventually(routed, 10, f"a route for {topic}")


def topic_queues(topic: str, count: int = 4) -> set[MessageQueue]:
    return {MessageQueue(topic, "broker-a", q) for q in range(count)}


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


# --- 1. retries through %RETRY%<group> and the DLQ ---------------------------------------------------------


def test_failed_message_comes_back_with_growing_reconsume_times_then_lands_in_the_dlq(cluster: LocalCluster) -> None:
    topic, group = "PushRetry", "push-retry-group"
    seen: list[tuple[str, int, str, bytes]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:  # a sync handler: runs on the pool
        for m in messages:
            seen.append((m.msg_id, m.reconsume_times, m.topic, m.body))
        if any(m.body.startswith(b"bad") and m.reconsume_times == 1 for m in messages):
            raise RuntimeError("an exception counts as RECONSUME_LATER")
        return LATER if any(m.body.startswith(b"bad") for m in messages) else SUCCESS

    async def go() -> None:
        good = await send_all(cluster, topic, 3, prefix="good")
        [bad] = await send_all(cluster, topic, 1, prefix="bad")
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, max_reconsume_times=2, **FAST):
            await eventually(lambda: stored(cluster, f"%DLQ%{group}"), 30, "the bad message in the DLQ")
        bad_seen = [(times, t) for msg_id, times, t, _ in seen if msg_id == bad]
        assert bad_seen == [(0, topic), (1, topic), (2, topic)], "retried with growing counts, topic restored"
        assert Counter(msg_id for msg_id, *_ in seen if msg_id in good) == Counter(good)
        [dead] = stored(cluster, f"%DLQ%{group}")
        assert dead.body == b"bad0" and dead.reconsume_times == 3
        assert dead.properties["RETRY_TOPIC"] == topic and dead.uniq_key == bad
        retries = stored(cluster, f"%RETRY%{group}")
        assert [m.reconsume_times for m in retries] == [1, 2] and all(m.body == b"bad0" for m in retries)

    arun(go)


def test_message_that_cannot_be_given_back_is_handled_again_here(cluster: LocalCluster) -> None:
    topic, group = "PushLocalRetry", "push-local-retry-group"
    attempts: list[tuple[bytes, int, str]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        attempts.extend((m.body, m.reconsume_times, m.stored_topic) for m in messages)
        stubborn = [m for m in messages if m.body == b"stubborn0" and m.reconsume_times < 2]
        return LATER if stubborn else SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic)
        settings = {**FAST, "local_retry_delay_s": 0.2}
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **settings) as consumer:
            # the group's retry topic exists now (the heartbeat made it); make it refuse writes, so neither
            # CONSUMER_SEND_MSG_BACK nor a copy sent to it can take the message back
            await create_topic(cluster, f"%RETRY%{group}", queue_count=1, perm=4)
            rebalances = consumer.rebalance_count  # each rebalance past the refresh interval re-reads routes
            await eventually(lambda: consumer.rebalance_count >= rebalances + 3, 10, "the new route to be seen")
            await send_all(cluster, topic, 1, prefix="stubborn")
            await eventually(lambda: (b"stubborn0", 2, topic) in attempts, 20, "the third local attempt")
            await eventually(lambda: committed(cluster, group, topic) == max_offsets(cluster, topic), 10,
                             "the offset to move past the message once it was handled")
        assert [a for a in attempts if a[0] == b"stubborn0"] == [(b"stubborn0", t, topic) for t in range(3)]
        cluster.wait_dispatched()  # a record the broker took back would be in the retry queue by now
        assert stored(cluster, f"%RETRY%{group}") == []

    arun(go)


def test_a_queue_whose_pull_loop_died_is_taken_again_by_the_next_rebalance(cluster: LocalCluster) -> None:
    """RocketMQ's rebalance drops a queue whose pulls stopped (ProcessQueue.isPullExpired) and takes it again
    in the same pass: a consumer whose pull loop is gone keeps receiving that queue's messages."""
    topic, group = "PushStalled", "push-stalled-group"
    got: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST) as consumer:
            mq = MessageQueue(topic, "broker-a", 0)
            await eventually(lambda: mq in consumer.assignment(topic), 10, "the queue to be assigned")
            await send_all(cluster, topic, 1, prefix="before")
            await eventually(lambda: got == [b"before0"], 10, "the first message")
            dead = consumer._pull_tasks[mq]
            dead.cancel()  # the pull loop ends as an unexpected error would end it
            await asyncio.gather(dead, return_exceptions=True)
            await send_all(cluster, topic, 2, prefix="after")
            await eventually(lambda: got == [b"before0", b"after0", b"after1"], 10,
                             "the messages sent after the pull loop died")
            assert consumer._pull_tasks[mq] is not dead

    arun(go)


def test_a_process_queue_not_pulled_for_the_idle_limit_is_pull_expired() -> None:
    pq = ProcessQueue(MessageQueue("T", "broker-a", 0))
    assert not pq.pull_expired(120.0)
    pq.last_pull_s -= 121.0
    assert pq.pull_expired(120.0) and not pq.pull_expired(130.0)


# --- 2. clustering: the group shares the queues --------------------------------------------------------------


def test_two_consumers_split_the_queues_and_get_each_message_once_then_a_third_triggers_a_rebalance(
        cluster: LocalCluster) -> None:
    topic, group = "PushSplit", "push-split-group"
    got: dict[str, list[str]] = defaultdict(list)

    def handler_for(name: str) -> Callable[[list[ConsumedMessage]], Awaitable[ConsumeStatus]]:
        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                got[m.msg_id].append(name)
            return SUCCESS

        return handle

    # no periodic rebalance: only NOTIFY_CONSUMER_IDS_CHANGED can make a member give queues up
    settings = {**FAST, "rebalance_interval_s": 3600}

    def split_ok(consumers: list[PushConsumer]) -> bool:
        shares = [c.assignment(topic) for c in consumers]
        union = set().union(*shares)
        return union == topic_queues(topic) and sum(len(s) for s in shares) == len(union) and all(shares)

    async def go() -> None:
        await create_topic(cluster, topic)
        c1 = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler_for("c1"), **settings)
        c2 = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler_for("c2"), **settings)
        assert c1.client_id != c2.client_id
        consumers = [c1, c2]
        try:
            for c in consumers:
                await c.start()
            await eventually(lambda: split_ok(consumers), 20, "a disjoint, covering split over two consumers")
            subs = cluster.call(lambda: cluster.broker.clients.group(group).subscriptions)  # type: ignore[union-attr]
            assert {t: sub.sub_string for t, sub in subs.items()} == {topic: "*", f"%RETRY%{group}": "*"}
            ids = sorted([c1.client_id, c2.client_id])
            for c in consumers:  # exactly AllocateMessageQueueAveragely over the sorted lists
                assert c.assignment(topic) == set(allocate_averagely(c.client_id, sorted(topic_queues(topic)), ids))
            sent = await send_all(cluster, topic, 40)
            await eventually(lambda: set(got) >= set(sent), 20, "every message")
            assert {m: len(v) for m, v in got.items()} == {m: 1 for m in sent}, "each message exactly once"
            assert {n for v in got.values() for n in v} == {"c1", "c2"}
            await eventually(lambda: committed(cluster, group, topic) == max_offsets(cluster, topic), 10,
                             "the group's offsets committed to the broker")

            c3 = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler_for("c3"), **settings)
            consumers.append(c3)
            await c3.start()
            await eventually(lambda: split_ok(consumers), 20, "a three-way split after the third joined")
            assert sorted(len(c.assignment(topic)) for c in consumers) == [1, 1, 2]
            more = await send_all(cluster, topic, 30, prefix="late")
            await eventually(lambda: set(got) >= set(more), 20, "the later messages")
            assert {m: len(v) for m, v in got.items()} == {m: 1 for m in sent + more}
            assert "c3" in {n for m in more for n in got[m]}
        finally:
            for c in consumers:
                await c.shutdown()

    arun(go)


# --- 3. broadcasting ---------------------------------------------------------------------------------------


def test_broadcasting_members_each_get_everything_and_keep_offsets_in_their_own_files(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "PushBroadcast", "push-broadcast-group"
    offset_dir = tmp_path / "offsets"
    got: dict[str, list[str]] = defaultdict(list)

    def member(name: str) -> PushConsumer:
        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            got[name].extend(m.msg_id for m in messages)
            return SUCCESS

        return PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle,
                            message_model=MessageModel.BROADCASTING, instance_name=f"member-{name}",
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            offset_dir=str(offset_dir), **FAST)

    def offset_file(consumer: PushConsumer) -> dict[int, int]:
        path = offset_dir / consumer.client_id / group / "offsets.json"
        table = LocalFileOffsetStore(path)._read_file()  # Java's fastjson form, object keys
        return {mq.queue_id: offset for mq, offset in table.items() if mq.topic == topic}

    async def go() -> None:
        sent = await send_all(cluster, topic, 20)
        a, b = member("a"), member("b")
        async with a, b:
            assert a.assignment(topic) == b.assignment(topic) == topic_queues(topic), "every member owns all"
            subs = cluster.call(lambda: cluster.broker.clients.group(group).subscriptions)  # type: ignore[union-attr]
            assert list(subs) == [topic], "no retry topic in broadcasting"
            await eventually(lambda: all(len(got[n]) >= len(sent) for n in "ab"), 20, "both members to get all")
        assert Counter(got["a"]) == Counter(got["b"]) == Counter(sent), "each member: every message, once"
        assert offset_file(a) == offset_file(b) == max_offsets(cluster, topic)
        assert not (offset_dir / a.client_id / group / "offsets.json.tmp").exists()
        assert committed(cluster, group, topic) == {}, "broadcasting commits nothing to the broker"

        # a member that comes back under the same instance name resumes from its file
        got.clear()
        more = await send_all(cluster, topic, 5, prefix="more")
        async with member("a") as again:
            await eventually(lambda: len(got["a"]) >= len(more), 20, "the new messages")
            await asyncio.sleep(0.3)  # room for anything wrongly re-delivered to show up
        assert Counter(got["a"]) == Counter(more)
        assert offset_file(again) == max_offsets(cluster, topic)

    arun(go)


# --- 4. orderly ------------------------------------------------------------------------------------------


def test_orderly_consumption_keeps_each_queues_send_order_while_holding_the_broker_lock(
        cluster: LocalCluster) -> None:
    topic, group = "PushOrderly", "push-orderly-group"
    keys = [f"order-{k}" for k in range(6)]
    handled: list[tuple[int, str, int, bool]] = []  # (queue, body, reconsume times, lock held by us)
    failed_once: set[str] = set()
    consumer_box: list[PushConsumer] = []

    def lock_holder(queue_id: int) -> str | None:
        lock = cluster.broker.queue_locks.locks.get((group, topic, "broker-a", queue_id))
        return lock.client_id if lock is not None else None

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        [m] = messages
        body = m.body.decode()
        held = cluster.call(lambda: lock_holder(m.queue_id)) == consumer_box[0].client_id
        handled.append((m.queue_id, body, m.reconsume_times, held))
        if body.endswith(":3") and body not in failed_once:  # one suspension per key: retried in place
            failed_once.add(body)
            return LATER
        return SUCCESS

    async def go() -> None:
        sent_by_queue: dict[int, list[str]] = defaultdict(list)
        async with Producer(cluster.namesrv_addr, "push-orderly-producer") as producer:
            for step in range(8):
                for key in keys:
                    r = await producer.send_orderly(topic, f"{key}:{step}".encode(), key)
                    sent_by_queue[r.message_queue.queue_id].append(f"{key}:{step}")
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST)
        consumer_box.append(consumer)
        async with consumer:
            total = sum(len(v) for v in sent_by_queue.values()) + len(keys)  # + one retry per key
            await eventually(lambda: len(handled) >= total, 30, "every message (and the retries)")
            assert all(lock_holder(q) == consumer.client_id for q in range(4))
            renewed_at = cluster.call(lambda: cluster.broker.queue_locks.locks[(group, topic, "broker-a", 0)]
                                      .last_update_ms)
            await eventually(lambda: cluster.call(lambda: cluster.broker.queue_locks.locks[
                (group, topic, "broker-a", 0)].last_update_ms) > renewed_at, 10, "the lock to be renewed")
        assert all(held for *_, held in handled), "handled only while the broker lock was ours"
        for queue_id, bodies in sent_by_queue.items():
            order = [body for q, body, _, _ in handled if q == queue_id]
            deduped = [b for i, b in enumerate(order) if i == 0 or order[i - 1] != b]
            assert deduped == bodies, f"queue {queue_id} out of order"
        retried = [(body, times) for _, body, times, _ in handled if body.endswith(":3")]
        assert sorted(retried) == sorted([(f"{k}:3", 0) for k in keys] + [(f"{k}:3", 1) for k in keys])
        assert cluster.call(lambda: [k for k in cluster.broker.queue_locks.locks if k[0] == group]) == [], \
            "the locks are released at shutdown"
        assert committed(cluster, group, topic) == max_offsets(cluster, topic)

    arun(go)


def test_orderly_message_past_max_reconsume_times_goes_to_the_dlq(cluster: LocalCluster) -> None:
    topic, group = "PushOrderlyDlq", "push-orderly-dlq-group"
    seen: list[tuple[str, int]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend((m.body.decode(), m.reconsume_times) for m in messages)
        return LATER if messages[0].body == b"poison" else SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "push-orderly-producer") as producer:
            for body in (b"before", b"poison", b"after"):
                await producer.send_orderly(topic, body, "one-key")
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                max_reconsume_times=2, **FAST):
            await eventually(lambda: ("after", 0) in seen, 20, "the message after the poison one")
        assert seen == [("before", 0), ("poison", 0), ("poison", 1), ("poison", 2), ("after", 0)]
        # the send-back is answered once the commitlog holds it; the DLQ's consume queue follows by dispatch
        [dead] = await eventually(lambda: stored(cluster, f"%DLQ%{group}"), 10, "the poison message in the DLQ")
        assert dead.body == b"poison" and dead.properties["RETRY_TOPIC"] == topic

    arun(go)


# --- 5. delayed messages -------------------------------------------------------------------------------------


def test_delayed_messages_arrive_no_earlier_than_their_level(tmp_path: Path) -> None:
    topic, group = "PushDelay", "push-delay-group"
    levels_s = {1: 1, 2: 2, 3: 3}
    arrived: dict[bytes, float] = {}

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        for m in messages:
            arrived[m.body] = time.time()
        return SUCCESS

    async def go() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST) as consumer:
            sent_at: dict[bytes, tuple[float, int]] = {}
            async with Producer(cluster.namesrv_addr, "push-delay-producer") as producer:
                await producer.send(topic, b"create")  # the topic exists before the consumer rebalances onto it
                await eventually(lambda: consumer.assignment(topic), 10, "the consumer to own the topic's queues")
                for level in (3, 2, 1, 0):
                    body = f"level-{level}".encode()
                    sent_at[body] = (time.time(), level)
                    props = {"DELAY": str(level)} if level else {}
                    await producer.send(topic, body, properties=props)
            await eventually(lambda: set(arrived) >= set(sent_at), 20, "every delayed message")
        for body, (at, level) in sent_at.items():
            assert arrived[body] - at >= levels_s.get(level, 0), f"{body!r} came too early"
        assert arrived[b"level-0"] < arrived[b"level-1"] < arrived[b"level-2"] < arrived[b"level-3"]

    with LocalCluster(tmp_path / "store", store_overrides={"message_delay_level": "1s 2s 3s 4s"}) as cluster:
        arun(go)


# --- 6. at-least-once across SIGKILL -------------------------------------------------------------------------


def _handled(path: Path) -> list[tuple[int, int, str]]:
    rows: list[tuple[int, int, str]] = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:  # a line cut by the kill is not a handled message
            rows.append((int(parts[0]), int(parts[1]), parts[2]))
    return rows


def _start_child(cluster: LocalCluster, topic: str, group: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HERE / "push_consumer_child.py"), cluster.namesrv_addr, topic,
                             group, str(out)], stdout=subprocess.PIPE, text=True)


def _wait_lines(path: Path, count: int, child: subprocess.Popen[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(_handled(path)) < count:
        assert child.poll() is None, "the consumer process died"
        assert time.monotonic() < deadline, f"fewer than {count} handled messages after {timeout_s} s"
        time.sleep(0.02)


def test_sigkilled_consumer_loses_nothing_and_redelivers_only_uncommitted_messages(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group, total = "PushKill", "push-kill-group", 1000
    sent = set(arun(lambda: send_all(cluster, topic, total)))
    first_out, second_out = tmp_path / "first.txt", tmp_path / "second.txt"

    first = _start_child(cluster, topic, group, first_out)
    try:
        _wait_lines(first_out, 100, first, 60)
        # kill once some progress is committed, so the check below covers messages on both sides of it
        cluster.wait_until(lambda: sum(cluster.broker.offsets.offsets(group, topic).values()) >= 100, 30,
                           "the first consumer to commit some progress")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        first.kill()
    cluster.wait_until(lambda: not cluster.broker.clients.consumer_ids(group), 10, "the broker to drop the client")
    at_kill = committed(cluster, group, topic)
    before = _handled(first_out)
    assert len(before) < total, "killed mid-stream"
    assert sum(at_kill.values()) >= 100

    second = _start_child(cluster, topic, group, second_out)
    try:
        deadline = time.monotonic() + 60
        while not {m for _, _, m in before} | {m for _, _, m in _handled(second_out)} >= sent:
            assert second.poll() is None and time.monotonic() < deadline, "the second consumer did not finish"
            time.sleep(0.05)
    finally:
        second.kill()
        second.wait(10)
    after = _handled(second_out)
    handled = Counter(m for _, _, m in before + after)
    assert set(handled) == sent, "every sent message handled at least once"
    duplicates = {(q, off) for q, off, m in before + after if handled[m] > 1}
    assert all(off >= at_kill.get(q, 0) for q, off in duplicates), \
        f"only uncommitted messages come again (committed at the kill: {at_kill})"
    uncommitted_seen = {(q, off) for q, off, _ in before if off >= at_kill.get(q, 0)}
    print(f"handled before the kill: {len(before)}, committed then: {at_kill}, "
          f"handled by the second run: {len(after)}, handled twice: {len(duplicates)}")
    assert duplicates <= uncommitted_seen
    assert len({(q, off) for q, off, _ in after} & {(q, off) for q, off, _ in before}) == len(duplicates)


# --- 7. where a new group starts ---------------------------------------------------------------------------


def test_new_group_starts_at_first_last_or_timestamp(tmp_path: Path) -> None:
    topic = "PushFromWhere"
    got: dict[str, list[bytes]] = defaultdict(list)

    def consumer(cluster: LocalCluster, name: str, where: ConsumeFromWhere, **kw: Any) -> PushConsumer:
        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            got[name].extend(m.body for m in messages)
            return SUCCESS

        return PushConsumer(cluster.namesrv_addr, f"push-from-{name}", {topic: "*"}, handle,
                            consume_from_where=where, **kw, **FAST)

    async def go(cluster: LocalCluster) -> None:
        old = await send_all(cluster, topic, 8, prefix="old")
        await asyncio.sleep(1.5)  # a gap, so the timestamp below is nearest to the first "mid" message
        timestamp_ms = int(time.time() * 1000)
        mid = await send_all(cluster, topic, 8, prefix="mid")
        # where a new group starts is read from the consume queues, which dispatch fills a moment after the sends
        await eventually(lambda: sum(max_offsets(cluster, topic).values()) == 16, 10,
                         "the old and mid messages in the consume queues")
        first = consumer(cluster, "first", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        last = consumer(cluster, "last", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        stamp = consumer(cluster, "stamp", ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, consume_timestamp_ms=timestamp_ms)
        async with first, last, stamp:
            for c in (first, last, stamp):
                assert c.assignment(topic) == topic_queues(topic)
            late = await send_all(cluster, topic, 8, prefix="late")
            await eventually(lambda: all(len(got[n]) >= w for n, w in (("first", 24), ("last", 8), ("stamp", 16))),
                             20, "each group's share")
        assert len(old) == len(mid) == len(late) == 8
        assert sorted(got["first"]) == sorted([f"{p}{i}".encode() for p in ("old", "mid", "late") for i in range(8)])
        assert sorted(got["last"]) == sorted(f"late{i}".encode() for i in range(8))
        assert sorted(got["stamp"]) == sorted(f"{p}{i}".encode() for p in ("mid", "late") for i in range(8))

    # with no in-memory share every entry counts as "on disk", so the broker has no offset for a new group
    # and the client's consume_from_where decides (with data still hot, RocketMQ starts new groups at 0)
    with LocalCluster(tmp_path / "store", store_overrides={"access_message_in_memory_max_ratio": 0}) as cluster:
        arun(lambda: go(cluster))


# --- the blocking wrapper ----------------------------------------------------------------------------------


def test_blocking_consumer_runs_a_sync_handler_and_commits_and_unregisters_at_shutdown(
        cluster: LocalCluster) -> None:
    topic, group = "PushBlocking", "push-blocking-group"
    sent = set(arun(lambda: send_all(cluster, topic, 12)))
    got: list[str] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.msg_id for m in messages)
        return SUCCESS

    # long periods: what is committed below is committed by the shutdown, not by the timer
    with BlockingPushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, persist_interval_s=3600,
                              consume_batch_size=4, pull_batch_size=8) as consumer:
        assert consumer.assignment(topic) == topic_queues(topic)
        assert cluster.call(lambda: cluster.broker.clients.consumer_ids(group)) == [consumer.client_id]
        deadline = time.monotonic() + 20
        while set(got) != sent:
            assert time.monotonic() < deadline, "the blocking consumer did not get every message"
            time.sleep(0.02)
    assert sorted(got) == sorted(sent)
    assert cluster.call(lambda: cluster.broker.clients.consumer_ids(group)) == []
    assert committed(cluster, group, topic) == max_offsets(cluster, topic)


# --- tag filtering and shutdown -----------------------------------------------------------------------------


def test_tag_expression_selects_messages_and_the_offset_moves_past_the_others(cluster: LocalCluster) -> None:
    topic, group = "PushTags", "push-tags-group"
    got: list[str | None] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.tags for m in messages)
        return SUCCESS

    async def go() -> None:
        for tag in ("TagA", "TagB", "TagC") * 4:
            await send_all(cluster, topic, 1, tags=tag)
        # all twelve in the consume queues first, so that the offsets compared below are the queues' ends
        await eventually(lambda: sum(max_offsets(cluster, topic).values()) == 12, 10, "the twelve messages")
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "TagA || TagB"}, handle, **FAST):
            await eventually(lambda: len(got) >= 8, 20, "the TagA and TagB messages")
            await eventually(lambda: committed(cluster, group, topic) == max_offsets(cluster, topic), 10,
                             "offsets past the TagC messages too")
        assert sorted(t or "" for t in got) == ["TagA"] * 4 + ["TagB"] * 4

    arun(go)


def test_shutdown_waits_for_the_handler_in_progress_and_commits_its_message(cluster: LocalCluster) -> None:
    topic, group = "PushInFlight", "push-in-flight-group"
    entered, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        entered.set()
        await release.wait()
        finished.extend(m.msg_id for m in messages)
        return SUCCESS

    async def go() -> None:
        [sent] = await send_all(cluster, topic, 1)
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **{**FAST,
                                                                                      "persist_interval_s": 3600})
        await consumer.start()
        await asyncio.wait_for(entered.wait(), 20)
        stopping = asyncio.ensure_future(consumer.shutdown())
        await asyncio.sleep(0.3)
        assert not stopping.done(), "shutdown returned while a handler was still running"
        release.set()
        await stopping
        assert finished == [sent]
        assert committed(cluster, group, topic) == max_offsets(cluster, topic)
        assert cluster.call(lambda: cluster.broker.clients.consumer_ids(group)) == []

    arun(go)


def test_a_corrupt_broadcasting_offset_file_fails_start_with_a_typed_error_and_is_left_alone(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "PushBadOffsets", "push-bad-offsets-group"

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 1)
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, instance_name="bad",
                                message_model=MessageModel.BROADCASTING, offset_dir=str(tmp_path), **FAST)
        path = tmp_path / consumer.client_id / group / "offsets.json"
        path.parent.mkdir(parents=True)
        path.write_text('{"offsetTable": "nope"}')
        with pytest.raises(OffsetStoreError):
            await consumer.start()
        assert path.read_text() == '{"offsetTable": "nope"}'
        with pytest.raises(ConnectionClosedError):  # a failed start leaves nothing open behind it
            await consumer.consumer.pool.get(cluster.broker_addr)

    arun(go)
