"""The official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4) against our name server and broker, unchanged.

The client runs in subprocesses (cpp_client_runner.py) so that a hang is killable and its threads and logs
stay out of the test process.  Skipped only when the wheel cannot be imported on this platform.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cpp_driver import Runner, collect_all_until, consume_messages, messages, requires_cpp_client
from local_cluster import LocalCluster, pull_all
from serve_process import cli

from rocketstore.client import Producer
from rocketstore.remoting.fastjson import loads
from rocketstore.remoting.transport import run

pytestmark = requires_cpp_client


def produce(cluster: LocalCluster, home: Path, topic: str, group: str, count: int, *extra: str
            ) -> list[dict[str, Any]]:
    runner = Runner(["produce", cluster.namesrv_addr, topic, group, str(count), *extra], home)
    try:
        runner.collect_until(lambda seen: any(s.get("done") for s in seen), 30, "the C++ producer")
        runner.wait(10)
    finally:
        runner.kill()
    return [s for s in runner.seen if "status" in s]


def wait_dispatched(cluster: LocalCluster, topic: str, count: int) -> None:
    """Consume queues are written by the store's dispatch thread a moment after each put."""
    cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(topic, q) for q in range(8)) == count, 10,
                       f"{count} messages in the consume queues of {topic}")


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    return cluster.call(lambda: cluster.broker.offsets.offsets(group, topic))


def test_cpp_producer_and_push_consumer_round_trip_with_committed_offsets(tmp_path: Path) -> None:
    store = tmp_path / "store"
    topic, group, count = "CppTopic", "cpp-consumer-group", 24
    with LocalCluster(store) as cluster:
        sent = produce(cluster, tmp_path, topic, "cpp-producer-group", count)
        assert [s["status"] for s in sent] == ["OK"] * count
        ids = [s["msg_id"] for s in sent]
        assert len(set(ids)) == count and all(len(i) == 32 for i in ids)

        # what the broker stored, seen through our own client: every message once, with tags, keys, CLUSTER
        wait_dispatched(cluster, topic, count)
        stored = pull_all(cluster.namesrv_addr, topic)
        assert sorted(m.body.decode() for m in stored) == sorted(f"body-{i} ünï" for i in range(count))
        for m in stored:
            i = int(m.body.decode().split()[0].split("-")[1])
            assert m.keys == f"key-{i}" and m.tags == ("TagA", "TagB")[i % 2]
            assert m.properties["CLUSTER"] == "DefaultCluster" and "WAIT" not in m.properties
            assert str(m.store_host) == cluster.broker_addr
            assert m.properties["UNIQ_KEY"] in ids

        got = consume_messages(["consume", cluster.namesrv_addr, topic, group], tmp_path, count)
        assert sorted(m["body"] for m in got) == sorted(f"body-{i} ünï" for i in range(count)), "each exactly once"
        for m in got:
            i = int(m["body"].split()[0].split("-")[1])
            assert m["keys"] == f"key-{i}" and m["tags"] == ("TagA", "TagB")[i % 2] and m["topic"] == topic
        assert sorted(m["id"] for m in got) == sorted(ids)

        max_offsets = cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(4)})
        assert sum(max_offsets.values()) == count
        cluster.wait_until(lambda: cluster.broker.offsets.offsets(group, topic) == max_offsets, 15,
                           "the consumer's offsets to be committed to the broker")

    offset_file = loads((store / "config" / "consumerOffset.json").read_bytes())
    assert {int(q): o for q, o in offset_file["offsetTable"][f"{topic}@{group}"].items()} == max_offsets

    # the same group again, on a restarted broker: nothing old comes back, a new message does
    with LocalCluster(store) as cluster:
        assert committed(cluster, group, topic) == max_offsets
        consumer = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
        try:
            consumer.collect_until(lambda seen: any(s.get("started") for s in seen), 20, "the consumer to start")
            # caught up = a long-polled pull parked at the end of every queue
            cluster.wait_until(lambda: {q: o[-1] for q, o in cluster.broker.pull_hold.waiting(topic).items()}
                               == max_offsets, 20, "pulls parked at the end of every queue")
            consumer.drain()
            assert messages(consumer.seen) == [], "a second run must not receive consumed messages again"
            produce(cluster, tmp_path, topic, "cpp-producer-group", 1)
            consumer.collect_until(lambda seen: len(messages(seen)) >= 1, 20, "the new message")
            consumer.stop()
        finally:
            consumer.kill()
        assert [m["body"] for m in messages(consumer.seen)] == ["body-0 ünï"]
    offset_file = loads((store / "config" / "consumerOffset.json").read_bytes())
    assert sum(offset_file["offsetTable"][f"{topic}@{group}"].values()) == count + 1


def test_cpp_batch_send_and_tag_filtered_push_consumer(tmp_path: Path) -> None:
    topic = "CppBatchTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        sent = produce(cluster, tmp_path, topic, "cpp-batch-producer", 12, "--batch", "4", "--tags", "TagA,TagB,TagC")
        assert [s["status"] for s in sent] == ["OK"] * 3
        wait_dispatched(cluster, topic, 12)
        stored = pull_all(cluster.namesrv_addr, topic)
        assert sorted(m.body.decode() for m in stored) == sorted(f"body-{i} ünï" for i in range(12))

        consumer = Runner(["consume", cluster.namesrv_addr, topic, "cpp-filter-group", "TagA || TagC"], tmp_path)
        try:
            want = sorted(f"body-{i} ünï" for i in range(12) if i % 3 != 1)
            consumer.collect_until(lambda seen: len(messages(seen)) >= len(want), 30, "TagA and TagC messages")
            cluster.wait_until(lambda: sum(len(o) for o in cluster.broker.pull_hold.waiting(topic).values()) >= 4,
                               20, "the consumer to wait at the end of its queues")
            consumer.stop()
        finally:
            consumer.kill()
        got = messages(consumer.seen)
        assert sorted(m["body"] for m in got) == want
        assert {m["tags"] for m in got} == {"TagA", "TagC"}


def test_cpp_compressed_bodies_reach_an_orderly_consumer_in_queue_order(tmp_path: Path) -> None:
    """Bodies over 4 KiB are deflated by the C++ producer (sysFlag bit 0) and stored as they come; the orderly
    consumer locks its queues (LOCK_BATCH_MQ) before pulling."""
    topic, count, pad = "CppBigTopic", 8, 20_000
    with LocalCluster(tmp_path / "store") as cluster:
        sent = produce(cluster, tmp_path, topic, "cpp-big-producer", count, "--pad", str(pad))
        assert [s["status"] for s in sent] == ["OK"] * count
        wait_dispatched(cluster, topic, count)
        stored = pull_all(cluster.namesrv_addr, topic)
        assert sorted(m.body.decode() for m in stored) == sorted(f"body-{i} ünï " + "x" * pad for i in range(count))
        assert all(m.sys_flag & 1 for m in stored), "kept compressed in the store"

        consumer = Runner(["consume", cluster.namesrv_addr, topic, "cpp-orderly-group", "*", "--orderly"], tmp_path)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= count, 30, "the big messages")
            cluster.wait_until(lambda: len(cluster.broker.queue_locks.locks) == 4, 10, "all four queues locked")
            consumer.stop()
        finally:
            consumer.kill()
        got = messages(consumer.seen)
        assert sorted(m["body"] for m in got) == sorted(f"body-{i} ünï " + "x" * pad for i in range(count))
        for q in {m["queue_id"] for m in got}:
            offsets = [m["queue_offset"] for m in got if m["queue_id"] == q]
            assert offsets == sorted(offsets) == list(range(len(offsets))), f"queue {q} consumed in order"
        # rocketmq-client-cpp 1.2.3's Rebalance::unlockAll leaves the first queue of each broker out of its
        # UNLOCK_BATCH_MQ request (its map insert skips the first element); that lock expires after 60 s
        locks = cluster.call(lambda: sorted(k[3] for k in cluster.broker.queue_locks.locks))
        assert len(locks) <= 1, "the orderly consumer unlocked its queues when it shut down"


#: every delay level 1 s (level 3, what a consumer's send-back uses first, included) so retries are quick
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}


def test_cpp_delayed_messages_and_consumer_retries_through_the_retry_topic(tmp_path: Path) -> None:
    topic, group = "CppRetryTopic", "cpp-retry-group"
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        # A first run of the group creates its %RETRY% topic (broker side, on the heartbeat).  The C++ client
        # fetches routes when it starts and then only every 30 s, so only a later run consumes the retry
        # topic at once; a first run would pick it up at its 10 s rebalance.
        produce(cluster, tmp_path, topic, "cpp-delay-producer", 1, "--first", "100")
        first = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
        try:
            first.collect_until(lambda seen: len(messages(seen)) >= 1, 20, "the warm-up message")
            cluster.wait_until(lambda: cluster.namesrv.routes.route("%RETRY%" + group), 10,
                               "the retry topic to be routed")
            first.stop()
        finally:
            first.kill()

        sent = produce(cluster, tmp_path, topic, "cpp-delay-producer", 3, "--delay", "2")
        assert [s["status"] for s in sent] == ["OK"] * 3
        # delay level 2 waits in SCHEDULE_TOPIC_XXXX queue 1 (its consume queue is written by dispatch, a moment
        # after the sends were answered)
        cluster.wait_until(lambda: cluster.broker.store.max_offset("SCHEDULE_TOPIC_XXXX", 1) == 3, 10,
                           "the three delayed messages in SCHEDULE_TOPIC_XXXX queue 1")
        cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(topic, q) for q in range(4)) == 4, 10,
                           "the delayed messages to reach their topic")

        consumer = Runner(["consume", cluster.namesrv_addr, topic, group, "*", "--fail-first"], tmp_path)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= 6, 30, "each message twice")
            consumer.stop()
        finally:
            consumer.kill()
        got = messages(consumer.seen)
        bodies = [f"body-{i} ünï" for i in range(3)]
        first_tries = sorted((m for m in got if m["failed"]), key=lambda m: m["body"])
        retries = sorted((m for m in got if not m["failed"]), key=lambda m: m["body"])
        assert [m["body"] for m in first_tries] == bodies and [m["body"] for m in retries] == bodies
        assert {m["reconsume_times"] for m in first_tries} == {0}
        assert {m["reconsume_times"] for m in retries} == {1}
        assert {m["topic"] for m in got} == {topic}, "the client restores the original topic of a retry"
        assert [m["keys"] for m in retries] == [f"key-{i}" for i in range(3)]
        assert cluster.call(lambda: cluster.broker.store.max_offset("%RETRY%" + group, 0)) == 3


def test_cpp_consumer_that_always_fails_gets_retries_with_growing_count_then_the_dlq(tmp_path: Path) -> None:
    """rocketmq-client-cpp 1.x sends CONSUMER_SEND_MSG_BACK without maxReconsumeTimes (its header has group,
    offset and delayLevel 0 only), so the broker applies the subscription group's retryMaxTimes: set to 2 here
    through ``rocketstore group update``.  Deliveries 0, 1 and 2 fail; the third send-back goes to %DLQ%.
    (The Python binding has no set_max_reconsume_times; the group config is the way, as for a Java client
    that leaves maxReconsumeTimes at -1.)"""
    topic, group = "CppDlqTopic", "cpp-dlq-group"
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        update = cli("group", "update", group, "--retry-max-times", "2", *ns)
        assert update.returncode == 0, update.stderr
        assert cluster.call(lambda: cluster.broker.groups.get(group).retry_max_times) == 2  # type: ignore[union-attr]

        # warm-up run: creates the group's %RETRY% topic, so the next run routes it from its start
        produce(cluster, tmp_path, topic, "cpp-dlq-producer", 1, "--first", "100")
        first = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
        try:
            first.collect_until(lambda seen: len(messages(seen)) >= 1, 30, "the warm-up message")
            cluster.wait_until(lambda: cluster.namesrv.routes.route("%RETRY%" + group), 10, "the retry route")
            first.stop()
        finally:
            first.kill()

        # One message: rocketmq-client-cpp 1.x hands a pulled batch to its C wrapper, which stops at the first
        # failing callback and sends the whole batch back, so messages behind it in the retry queue would
        # come back without ever reaching the callback (the broker side is the same either way).
        [sent] = produce(cluster, tmp_path, topic, "cpp-dlq-producer", 1)
        assert sent["status"] == "OK"
        body = "body-0 ünï"
        consumer = Runner(["consume", cluster.namesrv_addr, topic, group, "*", "--fail-always"], tmp_path)
        try:
            consumer.collect_until(lambda seen: len([m for m in messages(seen) if m["body"] == body]) >= 3, 120,
                                   "three failed deliveries")
            cluster.wait_until(lambda: cluster.broker.store.max_offset("%DLQ%" + group, 0) == 1, 60,
                               "the message in the DLQ")
            consumer.stop()
        finally:
            consumer.kill()
        tries = [m for m in messages(consumer.seen) if m["body"] == body]
        assert [m["reconsume_times"] for m in tries] == [0, 1, 2], "one delivery per count, in order, no more"
        assert {m["topic"] for m in tries} == {topic} and all(m["failed"] for m in tries)
        assert {m["id"] for m in tries} == {sent["msg_id"]}, "the same message id every time"
        retry_topic = "%RETRY%" + group
        retried = cluster.call(lambda: cluster.broker.store.get(retry_topic, 0, 0, 32).messages)
        assert [(m.body.decode(), m.reconsume_times) for m in retried] == [(body, 1), (body, 2)]

        [dead] = cluster.call(lambda: cluster.broker.store.get("%DLQ%" + group, 0, 0, 32).messages)
        assert (dead.body.decode(), dead.reconsume_times, dead.keys) == (body, 3, "key-0")
        assert dead.properties["RETRY_TOPIC"] == topic and dead.properties["UNIQ_KEY"] == sent["msg_id"]
        assert dead.properties["ORIGIN_MESSAGE_ID"]

        # mqadmin-style progress: the topic and the retry topic, both fully consumed once the client committed
        cluster.wait_until(lambda: cluster.broker.offsets.offsets(group, retry_topic) == {0: 2}, 30,
                           "the retry topic's offset to be committed")
        progress = cli("group", "progress", group, "--json", *ns)
        assert progress.returncode == 0, progress.stderr
        rows = json.loads(progress.stdout)["queues"]
        assert {r["topic"] for r in rows} == {topic, retry_topic}
        assert [(r["brokerOffset"], r["consumerOffset"], r["diff"]) for r in rows if r["topic"] == retry_topic] \
            == [(2, 2, 0)]
        assert sum(r["brokerOffset"] for r in rows if r["topic"] == topic) == 2
        assert sum(r["diff"] for r in rows) == 0


def test_two_cpp_push_consumers_in_one_group_split_the_queues_and_get_each_message_once(tmp_path: Path) -> None:
    """Clustering: the group's queues are divided between its two clients (the broker tells them of each
    other with NOTIFY_CONSUMER_IDS_CHANGED; the C++ client also rebalances every 20 s).  Probe rounds, one
    message per queue, run until the split shows (each queue served by one client, both serving); after
    that every message reaches exactly one of them."""
    topic, group, queues = "CppSplitTopic", "cpp-split-group", 4
    with LocalCluster(tmp_path / "store") as cluster:
        created = cli("topic", "create", topic, "-r", str(queues), "-w", str(queues), "--namesrv", cluster.namesrv_addr)
        assert created.returncode == 0, created.stderr
        cluster.wait_until(lambda: cluster.namesrv.routes.route(topic), 10, "the topic's route")
        for name in "ab":
            (tmp_path / name).mkdir()
        runners = [Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path / name) for name in "ab"]
        try:
            collect_all_until(runners, lambda seens: all(any(s.get("started") for s in seen) for seen in seens),
                              30, "both consumers to start")
            cluster.wait_until(lambda: len(cluster.broker.clients.consumer_ids(group)) == 2, 30,
                               "two clients in the group")

            def send(bodies_by_queue: dict[int, list[str]]) -> None:
                async def go() -> None:
                    async with Producer(cluster.namesrv_addr, "split-producer") as producer:
                        for q, bodies in bodies_by_queue.items():
                            for body in bodies:
                                await producer.send(topic, body.encode(), queue_id=q)

                run(go())

            def queues_of(seen: list[dict[str, Any]], prefix: str) -> set[int]:
                return {m["queue_id"] for m in messages(seen) if m["body"].startswith(prefix)}

            for probe in range(12):
                prefix = f"probe-{probe}-"
                send({q: [f"{prefix}{q}"] for q in range(queues)})
                collect_all_until(runners, lambda seens, p=prefix: len(
                    {m["body"] for seen in seens for m in messages(seen) if m["body"].startswith(p)}) == queues,
                    60, f"probe round {probe}")
                qa, qb = (queues_of(r.seen, prefix) for r in runners)
                if qa and qb and not qa & qb:
                    break
            else:
                raise AssertionError("the two consumers never split the queues between them")

            main = {q: [f"main-{q}-{i}" for i in range(10)] for q in range(queues)}
            send(main)
            wanted = sorted(b for bodies in main.values() for b in bodies)
            collect_all_until(runners, lambda seens: len(
                {m["body"] for seen in seens for m in messages(seen) if m["body"].startswith("main-")}) == len(wanted),
                60, "every main message")
            for r in runners:
                r.stop()
        finally:
            for r in runners:
                r.kill()
        got = [[m for m in messages(r.seen) if m["body"].startswith("main-")] for r in runners]
        assert sorted(m["body"] for m in got[0] + got[1]) == wanted, "each message exactly once in the group"
        qa, qb = ({m["queue_id"] for m in g} for g in got)
        assert qa and qb and not qa & qb and qa | qb == set(range(queues)), (qa, qb)
        for g in got:
            for q in {m["queue_id"] for m in g}:
                offsets = [m["queue_offset"] for m in g if m["queue_id"] == q]
                assert sorted(offsets) == list(range(min(offsets), min(offsets) + 10))


def test_cpp_sends_to_a_sync_flush_broker_are_answered_after_the_sync_and_stored(tmp_path: Path) -> None:
    """SYNC_FLUSH: the C++ client's send_sync (WAIT=true) and batch sends go through the broker's
    group-commit wait on the loop; every answer is OK and names a record that is on disk."""
    topic = "CppSyncTopic"
    with LocalCluster(tmp_path / "store", store_overrides={"flush_disk_type": "SYNC_FLUSH"}) as cluster:
        singles = produce(cluster, tmp_path, topic, "cpp-sync-producer", 40)
        batches = produce(cluster, tmp_path, topic, "cpp-sync-batcher", 12, "--batch", "4", "--first", "40")
        assert [s["status"] for s in singles] == ["OK"] * 40
        assert [s["status"] for s in batches] == ["OK"] * 3
        store = cluster.broker.store
        durable, written = cluster.call(lambda: (store.durable_offset, store.max_commit_log_offset))
        assert durable == written  # every acknowledged record was synced before its answer
        wait_dispatched(cluster, topic, 52)
        stored = pull_all(cluster.namesrv_addr, topic)
        assert sorted(m.body.decode() for m in stored) == sorted(f"body-{i} ünï" for i in range(52))
