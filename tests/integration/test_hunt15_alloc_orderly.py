"""Orderly consumption across several members of a group, and the allocation strategy setting, against an
in-process name server + broker with real clients: Python orderly push consumers joining and leaving while
a producer sends (no queue handled by two members at once, each only under its broker lock, every queue in
send order, RECONSUME_LATER retried in place, the locks released at shutdown), a broker lock left by a
member that vanished (taken once it expires), a Python and a C++ (PyPI ``rocketmq`` 0.4.4) orderly member
sharing a topic, a group whose members use another allocation strategy or a failing one or client ids Java
sorts differently from Python, and a busy orderly handler whose queue is reset or given away (never two
handlers of one queue at once)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    AllocateByConfig,
    ConsumedMessage,
    ConsumeStatus,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
    allocate_averagely_by_circle,
    group_requests,
)
from rocketstore.client.admin import AdminClient

TEST_TIMEOUT_S = 40.0
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "suspend_current_queue_s": 0.05, "lock_renew_interval_s": 0.3}
SUCCESS = ConsumeStatus.CONSUME_SUCCESS
LATER = ConsumeStatus.RECONSUME_LATER


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def lock_table(cluster: LocalCluster, group: str) -> dict[int, str]:
    """queue id -> the client id holding its broker lock, for *group*'s queues of any topic but retries."""
    return cluster.call(lambda: {key[3]: lock.client_id for key, lock in cluster.broker.queue_locks.locks.items()
                                 if key[0] == group and not key[1].startswith("%RETRY%")})


def max_offsets(cluster: LocalCluster, topic: str) -> dict[int, int]:
    return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(4)})


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_orderly_members_joining_and_leaving_never_share_a_queue_and_keep_each_queues_order(
        cluster: LocalCluster) -> None:
    topic, group = "H15Orderly", "h15-orderly-group"
    cluster.create_topic(topic, 4)
    guard = threading.Lock()
    in_handler: dict[int, str] = {}  # queue id -> the member in its handler now
    problems: list[tuple[Any, ...]] = []
    handled: list[tuple[int, int, str, int]] = []  # (queue id, queue offset, member, reconsume times)
    failed: set[tuple[int, int]] = set()
    client_ids: dict[str, str] = {}

    def handler(name: str) -> Callable[[list[ConsumedMessage]], ConsumeStatus]:
        def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
            [m] = batch
            with guard:
                if m.queue_id in in_handler:
                    problems.append(("two members at once", m.queue_id, in_handler[m.queue_id], name))
                in_handler[m.queue_id] = name
            holder = lock_table(cluster, group).get(m.queue_id)
            if holder != client_ids[name]:
                problems.append(("handled without the broker lock", m.queue_id, m.queue_offset, name, holder))
            time.sleep(0.002)
            with guard:
                del in_handler[m.queue_id]
                handled.append((m.queue_id, m.queue_offset, name, m.reconsume_times))
                if m.queue_offset % 23 == 7 and (m.queue_id, m.queue_offset) not in failed:
                    failed.add((m.queue_id, m.queue_offset))  # SUSPEND_CURRENT_QUEUE_A_MOMENT, once
                    return LATER
            return SUCCESS
        return handle

    async def go() -> None:
        sent: dict[int, list[int]] = defaultdict(list)

        async def produce() -> None:
            async with Producer(cluster.namesrv_addr, "h15-orderly-producer") as producer:
                for i in range(360):
                    r = await producer.send_orderly(topic, f"m{i}".encode(), f"key-{i % 8}")
                    sent[r.message_queue.queue_id].append(r.queue_offset)
                    await asyncio.sleep(0.004)

        members: dict[str, PushConsumer] = {}

        async def start(name: str) -> None:
            consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler(name), orderly=True, **FAST)
            client_ids[name] = consumer.client_id
            await consumer.start()
            members[name] = consumer

        def held_by(*names: str) -> bool:
            holders = lock_table(cluster, group)
            return len(holders) == 4 and set(holders.values()) == {client_ids[n] for n in names}

        producing = asyncio.get_running_loop().create_task(produce())
        try:
            await start("A")
            await eventually(lambda: held_by("A") and handled, 10, "A to lock and consume every queue")
            await start("B")
            await eventually(lambda: held_by("A", "B"), 10, "A and B to hold two queues each")
            await members["A"].shutdown()
            await eventually(lambda: held_by("B"), 10, "B to take A's queues")
            await start("C")
            await eventually(lambda: held_by("B", "C"), 10, "B and C to share the queues")
            await members["B"].shutdown()
            await producing
            await eventually(lambda: held_by("C") and all((q, o) in {(h[0], h[1]) for h in handled}
                                                            for q, offsets in sent.items() for o in offsets),
                             15, "C to hold every queue and every message to be handled")
        finally:
            producing.cancel()
            for consumer in members.values():
                await consumer.shutdown()
        assert problems == []
        for queue_id, offsets in sent.items():
            seq = [(o, name, times) for q, o, name, times in handled if q == queue_id]
            first_seen = list(dict.fromkeys(o for o, _, _ in seq))
            assert first_seen == offsets, f"queue {queue_id}: handled first in send order, nothing lost"
            for (o1, n1, _), (o2, n2, t2) in itertools.pairwise(seq):
                if n1 == n2:  # one member's tenure: forward, or the same message again after a suspension
                    assert o2 > o1 or (o2 == o1 and (queue_id, o1) in failed and t2 >= 1), (queue_id, o1, o2)
                else:  # a new owner starts at the committed offset: never past the old owner's next message
                    assert o2 <= o1 + 1, (queue_id, o1, n1, o2, n2)
        for q, o in failed:
            later = [h for h in handled if h[0] == q and h[1] == o]
            assert len(later) >= 2, f"the suspended message {q}:{o} was handled again"
        assert lock_table(cluster, group) == {}, "every member unlocked its queues when it shut down"
        assert committed(cluster, group, topic) == max_offsets(cluster, topic)

    arun(go)


def test_a_lock_left_by_a_vanished_member_is_taken_once_it_expires(cluster: LocalCluster) -> None:
    """A member that died holding a queue's lock never unlocks it: the others wait for the broker to let it
    expire (rocketmq.broker.rebalance.lockMaxLiveTime, 60 s in 4.9.3; shortened here on the broker object)."""
    topic, group = "H15Expire", "h15-expire-group"
    cluster.create_topic(topic, 4)
    cluster.call(lambda: setattr(cluster.broker.queue_locks, "max_live_ms", 1500))
    cluster.call(lambda: cluster.broker.groups.find_or_create(group))  # as the ghost's heartbeat made it
    handled: list[tuple[int, int, float]] = []

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend((m.queue_id, m.queue_offset, time.monotonic()) for m in batch)
        return SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "h15-expire-producer") as producer:
            for i in range(40):
                await producer.send_orderly(topic, f"m{i}".encode(), f"key-{i % 8}")
        ghost_mq = MessageQueue(topic, "broker-a", 0)
        async with PullConsumer(cluster.namesrv_addr, "h15-ghost") as ghost:
            locked_at = time.monotonic()  # no later than the broker's timestamp of the lock
            taken = await group_requests.lock_queues(ghost.pool, cluster.broker_addr, group, "10.9.9.9@ghost",
                                                     [ghost_mq], 3.0)
        assert taken == {ghost_mq}
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST) as c:
            await eventually(lambda: {q for q, _, _ in handled} >= {1, 2, 3}, 10, "the free queues")
            assert ghost_mq not in c.assignment(topic) and lock_table(cluster, group)[0] == "10.9.9.9@ghost"
            await eventually(lambda: any(q == 0 for q, _, _ in handled), 10, "queue 0 after the ghost's lock")
            first_at = min(t for q, _, t in handled if q == 0)
            assert first_at - locked_at >= 1.4, "not before the lock expired (1.5 s, to the broker's ms)"
            assert lock_table(cluster, group)[0] == c.client_id
            await eventually(lambda: len(handled) >= 40, 10, "every message")
        offsets0 = [o for q, o, _ in handled if q == 0]
        assert offsets0 == sorted(offsets0) == list(range(len(offsets0)))
        assert lock_table(cluster, group) == {}

    arun(go)


def test_members_share_queues_by_the_configured_strategy_and_survive_one_that_fails(
        cluster: LocalCluster) -> None:
    topic, group = "H15Strategy", "h15-strategy-group"
    cluster.create_topic(topic, 4)
    cluster.create_topic("H15Other", 1)
    failing = threading.Event()

    def circle_or_fail(client_id: str, queues: Sequence[Any], client_ids: Sequence[str]) -> list[Any]:
        if failing.is_set():
            raise ValueError("this strategy fails now")
        return allocate_averagely_by_circle(client_id, queues, client_ids)

    async def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        return SUCCESS

    async def go() -> None:
        queues = sorted(MessageQueue(topic, "broker-a", q) for q in range(4))
        a = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, allocate_strategy=circle_or_fail,
                         orderly=True, **FAST)
        b = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, allocate_strategy=circle_or_fail,
                         orderly=True, **FAST)
        async with a, b:
            ids = sorted([a.client_id, b.client_id])
            first = a if ids[0] == a.client_id else b
            second = b if first is a else a
            # by circle: the first member queues 0 and 2, the second 1 and 3 (averagely would give 0, 1 / 2, 3)
            await eventually(lambda: first.assignment(topic) == {queues[0], queues[2]}
                             and second.assignment(topic) == {queues[1], queues[3]}, 10, "the circle shares")
            held = lock_table(cluster, group)
            assert held == {0: first.client_id, 1: second.client_id, 2: first.client_id, 3: second.client_id}
            failing.set()
            count = a.rebalance_count
            await eventually(lambda: a.rebalance_count >= count + 3, 10, "rebalances to go on")
            assert first.assignment(topic) == {queues[0], queues[2]}, "a failed allocation changes nothing"
        # a fixed list keeps only the queues of the topic being rebalanced (not those of a topic the member
        # does not subscribe to, nor of the retry topic)
        fixed = AllocateByConfig([queues[1], MessageQueue("H15Other", "broker-a", 0)])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, allocate_strategy=fixed,
                                **FAST) as c:
            await eventually(lambda: c.assignment(topic) == {queues[1]}, 10, "the configured queue")
            assert c.assignment() == {queues[1]}
            assert c.running_info().properties["allocateMessageQueueStrategy"] == "CONFIG"
            assert a.running_info().properties["allocateMessageQueueStrategy"] == "circle_or_fail"

    arun(go)


def test_members_sort_the_group_as_java_does_past_u_ffff(cluster: LocalCluster) -> None:
    """Java sorts client ids by UTF-16 unit: ``x\U00010000`` (D800 DC00) before ``x\uffff``, the reverse of
    Python's code point order; a member sorting otherwise would take the other's queues too."""
    topic, group = "H15Sort", "h15-sort-group"
    cluster.create_topic(topic, 4)

    async def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        return SUCCESS

    async def go() -> None:
        queues = sorted(MessageQueue(topic, "broker-a", q) for q in range(4))
        astral = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, instance_name="x\U00010000", **FAST)
        bmp = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, instance_name="x\uffff", **FAST)
        async with astral, bmp:
            await eventually(lambda: astral.assignment(topic) == set(queues[:2])
                             and bmp.assignment(topic) == set(queues[2:]), 10, "the Java-ordered shares")

    arun(go)


@requires_cpp_client
def test_python_and_cpp_orderly_members_split_the_queues_and_hand_them_over(
        cluster: LocalCluster, tmp_path: Path) -> None:
    """The C++ client (0.4.4, averagely, as ours by default) takes half the queues under its own locks; when it
    stops, the Python member takes them all (the C++ client leaves one lock behind at shutdown, see
    test_cpp_client.py, so the broker's lock life is shortened here)."""
    topic, group = "H15Mixed", "h15-mixed-group"
    cluster.create_topic(topic, 4)
    cluster.call(lambda: setattr(cluster.broker.queue_locks, "max_live_ms", 2000))
    guard = threading.Lock()
    python_handled: list[tuple[int, int, float, float]] = []  # (queue id, offset, wall start, wall end)
    problems: list[tuple[Any, ...]] = []
    box: list[PushConsumer] = []

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        [m] = batch
        began = time.time()
        holder = lock_table(cluster, group).get(m.queue_id)
        if holder != box[0].client_id:
            problems.append(("handled without the broker lock", m.queue_id, m.queue_offset, holder))
        time.sleep(0.002)
        with guard:
            python_handled.append((m.queue_id, m.queue_offset, began, time.time()))
        return SUCCESS

    async def send(first: int, count: int) -> None:
        async with Producer(cluster.namesrv_addr, "h15-mixed-producer") as producer:
            for i in range(first, first + count):
                await producer.send_orderly(topic, f"m{i}".encode(), f"key-{i % 8}")

    cpp = Runner(["consume", cluster.namesrv_addr, topic, group, "*", "--orderly"], tmp_path)

    def everything_handled(count: int) -> bool:
        cpp.drain()
        done = {(q, o) for q, o, _, _ in python_handled} | {(m["queue_id"], m["queue_offset"])
                                                              for m in messages(cpp.seen)}
        return len(done) >= count

    async def go() -> None:
        python = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST)
        box.append(python)
        async with python:
            await send(0, 80)
            def split() -> bool:
                # both members hold locks, and the Python member exactly its new half (the queues it gave up
                # are unlocked a moment after the C++ member's first lock: both holding is not yet the split)
                cpp.drain()
                holders = lock_table(cluster, group)
                return len(set(holders.values())) == 2 and len(python.assignment(topic)) == 2 and {
                    q for q, cid in holders.items() if cid == python.client_id} == {
                    mq.queue_id for mq in python.assignment(topic)}

            await eventually(split, 20, "the C++ member to lock its half and the Python member to keep its own")
            await send(80, 80)
            await eventually(lambda: everything_handled(160), 20, "every message")
            await asyncio.get_running_loop().run_in_executor(None, cpp.stop)
            await eventually(lambda: len(python.assignment(topic)) == 4, 15, "the Python member to take all")
            await send(160, 40)
            await eventually(lambda: everything_handled(200), 15, "the messages sent after the C++ member left")
        cpp_seen = [(m["queue_id"], m["queue_offset"], m["t"]) for m in messages(cpp.seen)]
        assert problems == []
        for q in range(4):
            mine = [(s, e, o) for qq, o, s, e in python_handled if qq == q]
            theirs = [(t, o) for qq, o, t in cpp_seen if qq == q]
            overlaps = [(t, o) for t, o in theirs for s, e, _ in mine if s <= t <= e]
            assert overlaps == [], f"queue {q} handled by both members at once"
            for who in (sorted(mine), sorted(theirs)):
                offsets = [x[-1] for x in who]
                assert offsets == sorted(offsets), f"queue {q} handled in order by each member"
        assert lock_table(cluster, group) == {}

    try:
        arun(go)
    finally:
        cpp.kill()


def test_a_reset_offset_waits_for_the_orderly_batch_in_hand_before_the_queue_is_unlocked_or_taken_again(
        cluster: LocalCluster) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET while an orderly handler is busy: as 4.9.3's resetOffset (which lets the
    batch in hand finish and unlocks only under the queue's consume lock), the queue is neither unlocked nor
    started again while that handler runs: never two handlers of one queue at once."""
    topic, group = "H15Reset", "h15-reset-group"
    cluster.create_topic(topic, 1)
    guard = threading.Lock()
    running: list[int] = []
    most_at_once = [0]
    handled: list[tuple[int, int]] = []  # (queue offset, reconsume times)
    entered, leave = threading.Event(), threading.Event()

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        [m] = batch
        with guard:
            running.append(m.queue_offset)
            most_at_once[0] = max(most_at_once[0], len(running))
        if m.queue_offset == 1 and not entered.is_set():
            entered.set()
            leave.wait(10)
        with guard:
            running.remove(m.queue_offset)
            handled.append((m.queue_offset, m.reconsume_times))
        return SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "h15-reset-producer") as producer:
            for i in range(3):
                await producer.send(topic, f"m{i}".encode())
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST) as c:
            await eventually(entered.is_set, 10, "the handler of offset 1 to start")
            await eventually(lambda: committed(cluster, group, topic) == {0: 1}, 10, "offset 0 committed")
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.reset_offset_by_time(group, topic, 0)
            await asyncio.sleep(1.5)  # several rebalances while the handler is still busy
            assert most_at_once[0] == 1, "the queue was taken again while its handler ran"
            assert lock_table(cluster, group) == {0: c.client_id}
            leave.set()
            await eventually(lambda: [o for o, _ in handled] == [0, 1, 0, 1, 2], 10, "everything again from 0")
        assert most_at_once[0] == 1
        assert committed(cluster, group, topic) == {0: 3}
        assert lock_table(cluster, group) == {}

    try:
        arun(go)
    finally:
        leave.set()


def test_a_queue_given_away_under_a_busy_orderly_handler_stays_locked_until_the_handler_is_done(
        cluster: LocalCluster) -> None:
    """The queue goes to a new member while the old one's handler is still busy with it: as 4.9.3's lockAll
    (which renews every queue still in the process queue table, dropped or not), the old member keeps the
    broker lock alive until it has let the queue go, so the lock cannot expire under the busy handler and the
    new member cannot start on the queue meanwhile (the broker's lock life is shortened here)."""
    topic, group = "H15Busy", "h15-busy-group"
    cluster.create_topic(topic, 1)
    cluster.call(lambda: setattr(cluster.broker.queue_locks, "max_live_ms", 1000))
    guard = threading.Lock()
    running: list[str] = []
    most_at_once = [0]
    handled: list[tuple[str, int]] = []  # (member, queue offset)
    entered, leave = threading.Event(), threading.Event()

    def handler(name: str) -> Callable[[list[ConsumedMessage]], ConsumeStatus]:
        def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
            [m] = batch
            with guard:
                running.append(name)
                most_at_once[0] = max(most_at_once[0], len(running))
            if name == "old" and m.queue_offset == 1:
                entered.set()
                leave.wait(10)
            with guard:
                running.remove(name)
                handled.append((name, m.queue_offset))
            return SUCCESS
        return handle

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "h15-busy-producer") as producer:
            for i in range(3):
                await producer.send(topic, f"m{i}".encode())
        # client ids sort "...@a-new" before "...@z-old": the only queue goes to the new member once it joins
        old = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler("old"), orderly=True,
                           instance_name="z-old", **FAST)
        new = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handler("new"), orderly=True,
                           instance_name="a-new", **FAST)
        async with old:
            await eventually(entered.is_set, 10, "the old member's handler of offset 1 to start")
            async with new:
                await eventually(lambda: not old.assignment(topic), 10, "the old member to give the queue up")
                await asyncio.sleep(2.5)  # well past the broker's lock life
                assert most_at_once[0] == 1, "the new member started on the queue under the busy handler"
                assert lock_table(cluster, group) == {0: old.client_id}
                leave.set()
                await eventually(lambda: ("new", 2) in handled, 10, "the new member to go on after the old one")
                assert lock_table(cluster, group) == {0: new.client_id}
        assert most_at_once[0] == 1
        assert handled[:2] == [("old", 0), ("old", 1)] and handled[-1] == ("new", 2)

    try:
        arun(go)
    finally:
        leave.set()
