"""One CLUSTERING group whose members are written in different languages: two Python push consumers and the
official C++ client (PyPI ``rocketmq`` 0.4.4) sharing a topic of 8 queues on two brokers.  Every member
computes its own share (AllocateMessageQueueAveragely over the broker's client id list and the topic's
queue list, each sorted), so the shares must agree: every message reaches exactly the member whose share
holds its queue, none twice; a member that closes commits its offsets and the members that take its queues
over resume exactly there.

The C++ member joins last and the Python members leave, so the C++ client only ever gains queues: 0.4.4
hangs its rebalance when a queue it dropped comes back while the dropped queue's long poll is still held
by the broker (up to 15 s): a client bug (later rocketmq-client-cpp sources no longer wait there) that a Java
broker triggers just the same."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    ConsumedMessage,
    ConsumeStatus,
    MessageQueue,
    Producer,
    PushConsumer,
    group_requests,
)
from rocketstore.client.allocate import allocate_averagely, java_string_key

pytestmark = requires_cpp_client

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}
TOPIC, GROUP, PER_ROUND = "H19MixedTopic", "h19-mixed-group", 80


def test_cpp_and_python_members_of_one_group_split_two_brokers_queues_and_hand_them_over(
        tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b", "broker-b")
        try:
            cluster.create_topic_on(TOPIC, [cluster.broker_addr, broker_b.address], 4)
            _scenario(cluster, broker_b, tmp_path)
        finally:
            cluster.run(broker_b.close())


def _scenario(cluster: LocalCluster, broker_b: Any, tmp_path: Path) -> None:
    queues = sorted(MessageQueue(TOPIC, name, q) for name in ("broker-a", "broker-b") for q in range(4))
    handled: dict[str, list[str]] = {"py1": [], "py2": []}  # member -> keys, in delivery order
    sent: dict[str, MessageQueue] = {}  # key -> the queue it was stored in

    def handler(name: str) -> Any:
        async def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
            handled[name].extend(m.keys for m in batch)
            return ConsumeStatus.CONSUME_SUCCESS
        return handle

    async def ids_everywhere(asker: PushConsumer) -> list[list[str]]:
        """GET_CONSUMER_LIST_BY_GROUP's answer of each broker, sorted as every member sorts it."""
        pool = asker.consumer.pool
        return [sorted(await group_requests.consumer_ids(pool, addr, GROUP, 3.0), key=java_string_key)
                for addr in (cluster.broker_addr, broker_b.address)]

    (tmp_path / "cpp").mkdir()
    box: list[Runner] = []

    def cpp_keys() -> list[str]:
        box[0].drain()
        return [m["keys"] for m in messages(box[0].seen)]

    def delivered() -> Counter[str]:
        return Counter(handled["py1"]) + Counter(handled["py2"]) + Counter(cpp_keys() if box else [])

    async def send_round(name: str) -> list[str]:
        keys = [f"{name}-{i}" for i in range(PER_ROUND)]
        async with Producer(cluster.namesrv_addr, "h19-mixed-producer") as producer:
            for key in keys:
                result = await producer.send(TOPIC, key.encode(), keys=key)
                sent[key] = result.message_queue
        await eventually(lambda: set(keys) <= set(delivered()), 30, f"every message of round {name}")
        return keys

    def ends() -> dict[MessageQueue, int]:
        return {mq: cluster.call(lambda mq=mq: (cluster.broker if mq.broker_name == "broker-a" else broker_b)
                                 .store.max_offset(TOPIC, mq.queue_id)) for mq in queues}

    def committed() -> dict[MessageQueue, int]:
        """The group's offsets as the brokers hold them (the C++ client persists every 5 s)."""
        brokers = (("broker-a", cluster.broker), ("broker-b", broker_b))
        return {MessageQueue(TOPIC, name, q): o for name, b in brokers
                for q, o in cluster.call(lambda b=b: dict(b.offsets.offsets(GROUP, TOPIC))).items()}

    async def all_acknowledged(what: str) -> None:
        """Wait until every message so far is committed: a message still in a handler when its queue
        moves is consumed again by the next owner (at-least-once, as in Java): not what this test is about."""
        await eventually(lambda: committed() == ends(), 15, f"every offset of {what} committed")

    def owner_of(key: str) -> str:
        for name, keys in handled.items():
            if key in keys:
                return name
        return "cpp"

    async def go() -> None:
        py1 = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handler("py1"), **FAST)
        py2 = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handler("py2"), **FAST)
        members = {"py1": py1, "py2": py2}
        try:
            await py1.start()
            await py2.start()
            box.append(Runner(["consume", cluster.namesrv_addr, TOPIC, GROUP], tmp_path / "cpp"))

            async def three_everywhere() -> bool:
                return all(len(ids) == 3 for ids in await ids_everywhere(py2))

            await eventually(three_everywhere, 30, "three members on both brokers")
            ids, ids_b = await ids_everywhere(py2)
            assert ids == ids_b
            cpp_id = next(i for i in ids if i not in (py1.client_id, py2.client_id))
            pid, _, rest = cpp_id.partition("-")  # the C++ client's id: pid-ip@DEFAULT
            assert pid.isdigit() and rest.endswith("@DEFAULT"), cpp_id

            def shares(member_ids: list[str]) -> dict[str, set[MessageQueue]]:
                by_id = {py1.client_id: "py1", py2.client_id: "py2", cpp_id: "cpp"}
                return {by_id[i]: set(allocate_averagely(i, queues, member_ids)) for i in member_ids}

            expected = shares(ids)
            await eventually(lambda: all(members[n].assignment(TOPIC) == expected[n] for n in ("py1", "py2")),
                             15, "the Python members' Java-ordered shares")
            assert set().union(*expected.values()) == set(queues) and sum(map(len, expected.values())) == 8
            first = await send_round("a")
            # the C++ member took what the Python members left: each message went to the owner of its queue
            assert all(sent[k] in expected[owner_of(k)] for k in first), {k: owner_of(k) for k in first}
            await all_acknowledged("round a")

            await py1.shutdown()  # commits, unregisters: the broker tells the others at once
            later = shares(sorted([py2.client_id, cpp_id], key=java_string_key))
            await eventually(lambda: py2.assignment(TOPIC) == later["py2"], 15, "py2's share of two members")
            second = await send_round("b")
            assert all(sent[k] in later[owner_of(k)] for k in second), {k: owner_of(k) for k in second}
            await all_acknowledged("round b")

            await asyncio.get_running_loop().run_in_executor(None, box[0].stop)  # commits, unregisters
            await eventually(lambda: py2.assignment(TOPIC) == set(queues), 15, "py2 to take every queue")
            third = await send_round("c")
            assert set(third) <= set(handled["py2"])
            await all_acknowledged("round c")
        finally:
            await py1.shutdown()
            await py2.shutdown()
        counts = delivered()
        assert {k: n for k, n in counts.items() if n > 1} == {}, "a message consumed twice by the group"
        assert set(counts) == set(sent)
        assert committed() == ends()

    try:
        run_within(go, 120)
    finally:
        for runner in box:
            runner.kill()
