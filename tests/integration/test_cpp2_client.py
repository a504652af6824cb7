"""The official RocketMQ C++ client 2.x (core "2.1.0_cvs", its C API driven with ctypes by cpp2_tx_runner.py)
against our name server and broker: its ordinary producer in every send mode, its push consumer (concurrent,
orderly, broadcasting, tag-filtered, with RECONSUME_LATER) and its pull consumer.  What the broker stored is
read from its store on the cluster's loop and compared with what was sent; what the consumers got is compared
with what was stored.

Properties of the client that shape these tests (none of them is the broker's doing):

* 2.1.0's ShutdownPushConsumer dereferences its message-trace producer, which exists only with message trace
  on: without it the consumer process dies of SIGSEGV in the shutdown, before committing its offsets.  The
  consumers here run with ``--trace`` (SetPushConsumerMessageTrace(OPEN)) so that they shut down cleanly;
  their trace data goes to rmq_sys_TRACE_DATA_DEFAULT_REGION as ordinary sends.
* its concurrent consume service hands a whole pulled list to the C API's wrapper, which stops at the first
  callback answering E_RECONSUME_LATER and sends the whole list back (messages behind it never reach the
  callback); the retry test therefore puts one message in each queue.
* it heartbeats only to the brokers of its subscribed topics' routes, so a group's %RETRY% topic (created
  on the first heartbeat) exists only once the consumer's topic does, and it routes a retry topic created
  after its start only at a later rebalance: the retry tests warm the group up first.
* its Rebalance::unlockAll leaves the first queue of each broker out of UNLOCK_BATCH_MQ (as 1.x's does).
* its SendBatchMessage result carries no message id (it reports the batch envelope's unset UNIQ_KEY).

The whole module takes about 25 s here, 17 of them the DLQ test (16 retries, 1 s apart).

Skipped (with the reason) only when pip cannot fetch the sdist or the library does not load here.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cpp2_driver import Cpp2Lib, Runner
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.broker.groups import SubscriptionGroupConfig
from rocketstore.client.admin import AdminClient, ConsumeProgress, ConsumerConnection
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo
from rocketstore.remoting.transport import run

QUEUES = 4  # the broker's default queue count for an auto-created topic
#: every delay level 1 s (level 3, what a consumer's first send-back uses, included) so retries are quick
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
COLOR = "red ünï"
COMPRESSED = 0x1  # sysFlag bit of a deflated body
#: where the 2.x client's message trace goes (an ordinary topic, auto-created from TBW102)
TRACE_TOPIC = "rmq_sys_TRACE_DATA_DEFAULT_REGION"


def body_of(i: int) -> str:
    return f"body-{i} ünï"


def number_of(body: str) -> int:
    return int(body.split()[0].split("-")[1])


def deliveries(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message lines of a consume or pull run."""
    return [s for s in seen if "body" in s]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def run_to_done(cpp2_lib: Cpp2Lib, cluster: LocalCluster, home: Path, args: list[str],
                what: str) -> list[dict[str, Any]]:
    """Run a produce or pull command until its {"done": true} and clean shutdown; its lines before "done"."""
    runner = cpp2_lib.runner([args[0], cluster.namesrv_addr, *args[1:]], home)
    try:
        runner.collect_until(lambda seen: any("shutdown" in s for s in seen), 60, what)
        runner.stop()
    finally:
        runner.kill()
    assert [s["clean"] for s in runner.seen if "shutdown" in s] == [True], "the client shut down within 10 s"
    done = next(k for k, s in enumerate(runner.seen) if s.get("done"))
    return runner.seen[:done]


def produce(cpp2_lib: Cpp2Lib, cluster: LocalCluster, home: Path, topic: str, count: int,
            *flags: str) -> list[dict[str, Any]]:
    return run_to_done(cpp2_lib, cluster, home, ["produce", topic, "cpp2-producer", str(count), *flags],
                       f"{count} sends to {topic} {flags}")


def start_consumer(cpp2_lib: Cpp2Lib, cluster: LocalCluster, home: Path, topic: str, group: str,
                   *flags: str) -> Runner:
    home.mkdir(parents=True, exist_ok=True)
    runner = cpp2_lib.runner(["consume", cluster.namesrv_addr, topic, group, *flags, "--trace"], home)
    try:
        runner.collect_until(lambda seen: any(s.get("started") for s in seen), 30, "the push consumer to start")
    except BaseException:
        runner.kill()
        raise
    return runner


def stop_consumer(runner: Runner) -> None:
    """Stop and check that ShutdownPushConsumer returned (it commits the offsets and unlocks the queues)."""
    try:
        runner.stop()
    finally:
        runner.kill()
    assert [s["clean"] for s in runner.seen if "shutdown" in s] == [True], \
        f"the consumer shut down within 10 s; stderr: {runner.stderr_tail()}"


def max_offsets(cluster: LocalCluster, topic: str) -> dict[int, int]:
    return cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)})


def wait_parked_at_end(cluster: LocalCluster, topic: str, per_queue: int = 1, timeout_s: float = 20.0) -> None:
    """Caught up: *per_queue* long-polled pulls parked at the end of every queue of *topic*."""
    def parked() -> bool:
        ends = {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)}
        waiting = cluster.broker.pull_hold.waiting(topic)
        return all(waiting.get(q, []) == [end] * per_queue for q, end in ends.items())

    cluster.wait_until(parked, timeout_s, f"{per_queue} pull(s) parked at the end of every queue of {topic}")


def check_against_store(got: dict[str, Any], m: StoredMessage, topic: str) -> None:
    """A consume / pull line describes stored message *m* (whose body the client inflates if compressed)."""
    body = zlib.decompress(m.body) if m.sys_flag & COMPRESSED else m.body
    assert (got["body"], got["topic"], got["tags"], got["keys"]) == (body.decode(), topic, m.tags, m.keys), got
    assert (got["queue_id"], got["queue_offset"], got["commit_log_offset"]) == \
        (m.queue_id, m.queue_offset, m.commit_log_offset), got
    assert (got["store_size"], got["born_timestamp"], got["store_timestamp"]) == \
        (m.store_size, m.born_timestamp, m.store_timestamp), got
    assert got["id"] == got["uniq_key"] == m.uniq_key, "the message id a consumer sees is the producer's"


# --- producer ------------------------------------------------------------------------------------------------

SEND_MODES = ["sync", "oneway", "orderly", "sharding", "async", "async-data", "batch"]


@pytest.mark.parametrize("mode", SEND_MODES)
def test_cpp2_sends_in_every_mode_are_stored_as_sent(cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path,
                                                     mode: str) -> None:
    """SendMessageSync / Oneway / Orderly (a selector picking queue i % 4) / OrderlyByShardingKey / Async /
    SendAsync / SendBatchMessage: every message stored once, body, tags, keys and user properties as set; the
    id and queue offset each send returned name the stored message (UNIQ_KEY, found through the index)."""
    topic, count = f"Cpp2{mode.replace('-', '').title()}Topic", 12
    flags = ["--batch", "4"] if mode == "batch" else ["--mode", mode]
    sent = produce(cpp2_lib, cluster, tmp_path, topic, count, *flags, "--tags", "TagA,TagB,TagC",
                   "--prop", f"color={COLOR}", "--prop", "idx={i}")
    if mode == "batch":
        assert [(s["i"], s["n"], s["status"]) for s in sent] == [(i, 4, "SEND_OK") for i in (0, 4, 8)], sent
    elif mode == "oneway":
        assert [(s["i"], s["status"]) for s in sent] == [(i, "ONEWAY") for i in range(count)]
    else:
        assert [s["status"] for s in sent] == ["SEND_OK"] * count, sent
    found = wait_stored(cluster, topic, count, f"the {mode} sends")
    by_i = {number_of(m.body.decode()): m for m in found}
    assert sorted(by_i) == list(range(count)), "each message stored exactly once"
    for i, m in by_i.items():
        assert m.body.decode() == body_of(i) and m.keys == f"key-{i}" and m.tags == ("TagA", "TagB", "TagC")[i % 3]
        assert m.properties["color"] == COLOR and m.properties["idx"] == str(i), m.properties
        assert m.uniq_key is not None and len(m.uniq_key) == 32, m.properties
        assert m.reconsume_times == 0 and m.sys_flag == 0 and m.flag == 0, m
        assert m.properties["CLUSTER"] == "DefaultCluster" and str(m.store_host) == cluster.broker_addr
    assert len({m.uniq_key for m in found}) == count

    if mode in ("sync", "orderly", "sharding", "async-data"):
        for s in sent:
            m = by_i[s["i"]]
            assert s["msg_id"] == m.uniq_key, f"send {s['i']}: the id returned is the stored UNIQ_KEY"
            assert s["offset"] == m.queue_offset, f"send {s['i']}: the queue offset returned"
    if mode == "async":  # SendMessageAsync's callback gets the result only: match by id
        by_id = {m.uniq_key: m for m in found}
        assert sorted(s["msg_id"] for s in sent) == sorted(by_id), "one success callback per message, its id"
        assert all(s["offset"] == by_id[s["msg_id"]].queue_offset for s in sent)
    if mode == "batch":
        for s in sent:
            members = [by_i[j] for j in range(s["i"], s["i"] + s["n"])]
            assert len({m.queue_id for m in members}) == 1, "a batch goes to one queue"
            assert [m.queue_offset for m in members] == list(range(s["offset"], s["offset"] + s["n"])), \
                "a batch's messages take consecutive offsets from the one its send returned"
            # the client reports the UNIQ_KEY of the batch envelope, which it never sets
            assert s["msg_id"] == ""
    if mode == "orderly":
        assert all(s["queues"] == QUEUES and by_i[s["i"]].queue_id == s["queue"] == s["i"] % QUEUES for s in sent)
    if mode in ("orderly", "sharding"):
        key = (lambda i: i % QUEUES) if mode == "orderly" else (lambda i: i % 3)
        for k in {key(i) for i in range(count)}:
            ms = [by_i[i] for i in range(count) if key(i) == k]
            assert len({m.queue_id for m in ms}) == 1, f"one queue for selector / sharding key {k}"
            assert [m.queue_offset for m in ms] == sorted(m.queue_offset for m in ms), "stored in send order"
    if mode == "sharding":
        assert all(m.properties["__SHARDINGKEY"] == f"shard-{i % 3}" for i, m in by_i.items())

    # the index resolves every id (UNIQ_KEY) and every key to its message
    def resolved() -> bool:
        store = cluster.broker.store
        return all(any(hit.commit_log_offset == m.commit_log_offset for hit in store.query(topic, m.uniq_key).messages)
                   and any(hit.commit_log_offset == m.commit_log_offset
                           for hit in store.query(topic, f"key-{i}").messages)
                   for i, m in by_i.items())

    cluster.wait_until(resolved, 10, "every id and key in the index")


# --- push consumer -------------------------------------------------------------------------------------------

def test_cpp2_push_consumer_gets_each_message_once_as_stored_and_commits_its_offsets(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group, count = "Cpp2PushTopic", "cpp2-push-group", 20
    produce(cpp2_lib, cluster, tmp_path, topic, count, "--prop", f"color={COLOR}", "--prop", "idx={i}")
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, count, "the sends")}
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "--props", "color,idx")
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= count, 30, f"{count} deliveries")
        wait_parked_at_end(cluster, topic)
    finally:
        stop_consumer(consumer)
    got = deliveries(consumer.seen)
    assert sorted(g["id"] for g in got) == sorted(found), "each message exactly once"
    for g in got:
        m = found[g["id"]]
        check_against_store(g, m, topic)
        assert g["props"] == {"color": COLOR, "idx": str(number_of(g["body"]))} and g["reconsume_times"] == 0
    ends = max_offsets(cluster, topic)
    assert sum(ends.values()) == count
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == ends, \
        "the consumer committed the end of every queue"

    # message trace on: the client sent "SubBefore" / "SubAfter" records (fields split by \x01, records ended by
    # \x02; the message id third in a SubAfter) to its trace topic, which the broker created on the first send
    def traced_ids() -> set[str]:
        ids = set()
        for m in stored_messages(cluster, TRACE_TOPIC):
            for record in m.body.decode().split("\x02"):
                fields = record.split("\x01")
                if fields[0] == "SubAfter":
                    ids.add(fields[2])
        return ids

    deadline = time.monotonic() + 10
    while traced_ids() != set(found) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert traced_ids() == set(found), "a SubAfter trace record for every message consumed"

    # the group again: it starts from the committed offsets, so only a new message comes
    again = start_consumer(cpp2_lib, cluster, tmp_path / "again", topic, group)
    try:
        wait_parked_at_end(cluster, topic)
        assert deliveries(again.drain()) == [], "a second run must not get consumed messages again"
        [new] = produce(cpp2_lib, cluster, tmp_path, topic, 1)
        again.collect_until(lambda seen: len(deliveries(seen)) >= 1, 20, "the new message")
        wait_parked_at_end(cluster, topic)
    finally:
        stop_consumer(again)
    assert [(g["id"], g["body"]) for g in deliveries(again.seen)] == [(new["msg_id"], body_of(0))]
    assert cluster.call(lambda: cluster.broker.clients.consumer_ids(group)) == [], \
        "the consumer unregistered when it shut down (UNREGISTER_CLIENT)"


def test_cpp2_push_consumer_with_a_tag_expression_gets_only_matching_messages(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group, count = "Cpp2FilterTopic", "cpp2-filter-group", 30
    tags = ("TagA", "TagB", "TagC")
    produce(cpp2_lib, cluster, tmp_path, topic, count, "--tags", ",".join(tags))
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, count, "the sends")}
    want = sorted(body_of(i) for i in range(count) if tags[i % 3] != "TagB")
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "TagA || TagC")
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= len(want), 30, "the TagA and TagC messages")
        wait_parked_at_end(cluster, topic)
        consumer.drain()
    finally:
        stop_consumer(consumer)
    got = deliveries(consumer.seen)
    assert sorted(g["body"] for g in got) == want, "only the matching tags, each once"
    for g in got:
        check_against_store(g, found[g["id"]], topic)
    # Committed: at least past the last delivered message of each queue.  A queue that ends in TagB messages
    # is committed to its end only when the pull parked there returns NO_NEW_MSG (after the client's long-poll
    # timeout): a FOUND pull's nextBeginOffset moves the pull on, the commit follows the consumed messages, as
    # with the Java client's correctTagsOffset.
    ends = max_offsets(cluster, topic)
    delivered_to = {q: 1 + max(g["queue_offset"] for g in got if g["queue_id"] == q) for q in range(QUEUES)}
    committed = cluster.call(lambda: cluster.broker.offsets.offsets(group, topic))
    assert all(delivered_to[q] <= committed[q] <= ends[q] for q in range(QUEUES)), (committed, delivered_to, ends)


def test_cpp2_reconsume_later_comes_back_once_through_the_retry_topic(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """E_RECONSUME_LATER: the client sends the message back (CONSUMER_SEND_MSG_BACK), the broker stores it in
    %RETRY%<group> after delay level 3 (1 s here) with reconsumeTimes 1, and the consumer, which subscribes to
    its retry topic, gets it again: same id, original topic restored, reconsume times 1."""
    topic, group = "Cpp2RetryTopic", "cpp2-retry-group"
    retry = "%RETRY%" + group
    # A group that consumed before has its retry topic: the broker creates it on the group's first heartbeat,
    # and a 2.x consumer that started before that routes it only at a later rebalance (about 10 s).  The
    # client sends heartbeats only to the brokers of its topics' routes: the topic must exist first.
    produce(cpp2_lib, cluster, tmp_path, topic, 1, "--tags", "Warm")
    warm_up = start_consumer(cpp2_lib, cluster, tmp_path / "w", topic, group)
    try:
        warm_up.collect_until(lambda seen: len(deliveries(seen)) >= 1, 20, "the warm-up message")
        cluster.wait_until(lambda: cluster.namesrv.routes.route(retry), 10, "the retry topic to be routed")
    finally:
        stop_consumer(warm_up)

    # one message per queue (see the module docstring)
    sent = produce(cpp2_lib, cluster, tmp_path, topic, QUEUES, "--prop", f"color={COLOR}")
    ids = {s["i"]: s["msg_id"] for s in sent}
    messages = [m for m in wait_stored(cluster, topic, QUEUES + 1, "the sends") if m.tags != "Warm"]
    assert sorted(m.queue_id for m in messages) == list(range(QUEUES))
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "--fail-first", "--props", "color")
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= 2 * QUEUES, 30, "each message twice")
        wait_parked_at_end(cluster, topic)
        cluster.wait_until(lambda: cluster.broker.pull_hold.waiting(retry).get(0) == [QUEUES], 10,
                           "a pull parked at the end of the retry queue")
        consumer.drain()
    finally:
        stop_consumer(consumer)
    got = [g for g in deliveries(consumer.seen) if g["tags"] != "Warm"]
    bodies = [body_of(i) for i in range(QUEUES)]
    first = sorted((g for g in got if g["failed"]), key=lambda g: g["body"])
    again = sorted((g for g in got if not g["failed"]), key=lambda g: g["body"])
    assert [g["body"] for g in first] == bodies and [g["body"] for g in again] == bodies, "each twice, no more"
    assert [g["reconsume_times"] for g in first] == [0] * QUEUES
    assert [g["reconsume_times"] for g in again] == [1] * QUEUES
    assert [g["id"] for g in first] == [g["id"] for g in again] == [ids[i] for i in range(QUEUES)]
    assert {g["topic"] for g in got} == {topic}, "the client restores the original topic of a retry"
    assert all(g["props"] == {"color": COLOR} for g in got) and [g["keys"] for g in again] == \
        [f"key-{i}" for i in range(QUEUES)]

    retried = {number_of(m.body.decode()): m for m in wait_stored(cluster, retry, QUEUES, "the retries", queues=1)}
    assert sorted(retried) == list(range(QUEUES))
    for i, m in retried.items():
        assert m.reconsume_times == 1 and m.properties["RETRY_TOPIC"] == topic, m.properties
        assert m.uniq_key == ids[i] and m.properties["color"] == COLOR and m.keys == f"key-{i}"
        assert m.properties.get("ORIGIN_MESSAGE_ID")
    # the retries were delivered from the retry queue, at its offsets
    assert sorted((g["queue_id"], g["queue_offset"]) for g in again) == \
        sorted((0, m.queue_offset) for m in retried.values())
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, retry)) == {0: QUEUES}
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == max_offsets(cluster, topic)


def test_cpp2_orderly_consumer_locks_its_queues_and_gets_each_queue_in_order(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group, count = "Cpp2OrderlyTopic", "cpp2-orderly-group", 24
    produce(cpp2_lib, cluster, tmp_path, topic, count, "--mode", "orderly")
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, count, "the sends")}
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "--orderly")
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= count, 30, f"{count} deliveries")
        locks = cluster.wait_until(lambda: sorted(k[3] for k in cluster.broker.queue_locks.locks), 10,
                                   "the queues locked")
        wait_parked_at_end(cluster, topic)
    finally:
        stop_consumer(consumer)
    assert locks == list(range(QUEUES)), "LOCK_BATCH_MQ took every queue"
    got = deliveries(consumer.seen)
    assert sorted(g["body"] for g in got) == sorted(body_of(i) for i in range(count)), "each exactly once"
    for g in got:
        check_against_store(g, found[g["id"]], topic)
    for q in range(QUEUES):
        in_queue = [g for g in got if g["queue_id"] == q]
        assert [g["queue_offset"] for g in in_queue] == list(range(count // QUEUES)), f"queue {q} in order"
        assert [number_of(g["body"]) for g in in_queue] == list(range(q, count, QUEUES)), "in send order"
    # rocketmq-client-cpp 2.1.0's Rebalance::unlockAll, as 1.x's, leaves the first queue of each broker out of
    # its UNLOCK_BATCH_MQ request (its map insert skips the first element): that lock expires after 60 s
    left = cluster.call(lambda: sorted((k[1], k[3]) for k in cluster.broker.queue_locks.locks))
    assert left in ([], [(topic, 0)]), f"the consumer unlocked its queues when it shut down; still locked: {left}"
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == max_offsets(cluster, topic)


def test_two_cpp2_broadcasting_consumers_of_one_group_both_get_every_message(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group, count = "Cpp2BroadcastTopic", "cpp2-broadcast-group", 24
    produce(cpp2_lib, cluster, tmp_path, topic, QUEUES, "--tags", "Warm")  # creates the topic (4 queues)
    wait_stored(cluster, topic, QUEUES, "the topic's first messages")
    consumers: list[Runner] = []
    try:
        for name in "ab":
            consumers.append(start_consumer(cpp2_lib, cluster, tmp_path / name, topic, group, "--broadcast"))
        cluster.wait_until(lambda: len(cluster.broker.clients.consumer_ids(group)) == 2, 20,
                           "two clients in the group")
        # each client has a pull parked at the end of every queue: both are consuming all of them
        wait_parked_at_end(cluster, topic, per_queue=2)
        produce(cpp2_lib, cluster, tmp_path, topic, count, "--prop", "idx={i}")
        for c in consumers:
            c.collect_until(lambda seen: len([d for d in deliveries(seen) if d["tags"] != "Warm"]) >= count, 30,
                            "every message at both consumers")
        wait_parked_at_end(cluster, topic, per_queue=2)
        for c in consumers:
            c.drain()
    finally:
        for c in consumers:
            stop_consumer(c)
    found = {m.uniq_key: m for m in stored_messages(cluster, topic)}
    for c in consumers:
        got = [d for d in deliveries(c.seen) if d["tags"] != "Warm"]
        assert sorted(g["body"] for g in got) == sorted(body_of(i) for i in range(count)), \
            "every message exactly once at each consumer"
        for g in got:
            check_against_store(g, found[g["id"]], topic)
        assert {g["queue_id"] for g in got} == set(range(QUEUES))
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == {}, \
        "BROADCASTING consumers keep their offsets locally"


def test_two_cpp2_consumers_of_one_group_split_the_queues_and_get_each_message_once(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """CLUSTERING with two clients: when the second one's heartbeat arrives the broker tells the first
    (NOTIFY_CONSUMER_IDS_CHANGED), both ask for the group's members (GET_CONSUMER_LIST_BY_GROUP) and
    rebalance: two queues each, every message (before and after the second joined) once in the group."""
    topic, group = "Cpp2ClusterTopic", "cpp2-cluster-group"
    produce(cpp2_lib, cluster, tmp_path, topic, 8, "--tags", "Early")
    wait_stored(cluster, topic, 8, "the early sends")
    consumers = [start_consumer(cpp2_lib, cluster, tmp_path / "a", topic, group)]
    try:
        consumers[0].collect_until(lambda seen: len(deliveries(seen)) >= 8, 30, "the early messages")
        # the first client's offsets reach the broker (every 5 s) before the second asks for them: a queue
        # handed over before that is read again from the last committed offset (at least once, as RocketMQ)
        early_ends = max_offsets(cluster, topic)
        cluster.wait_until(lambda: cluster.broker.offsets.offsets(group, topic) == early_ends, 30,
                           "the first client's offsets for the early messages")
        consumers.append(start_consumer(cpp2_lib, cluster, tmp_path / "b", topic, group))
        cluster.wait_until(lambda: len(cluster.broker.clients.consumer_ids(group)) == 2, 20, "two clients")
        # The second client pulls its two queues once it has rebalanced (after its heartbeat, which made the
        # broker notify the first): six pulls parked, the first client's two on the queues it gave up stay
        # parked until their long-poll timeout.
        cluster.wait_until(lambda: sum(len(o) for o in cluster.broker.pull_hold.waiting(topic).values()) == 6, 20,
                           "the second client's pulls parked next to the first's")
        produce(cpp2_lib, cluster, tmp_path, topic, 24, "--tags", "Late")
        deadline = time.monotonic() + 30
        while sum(len(deliveries(c.drain())) for c in consumers) < 32:
            assert time.monotonic() < deadline, \
                f"timed out after 30 s waiting for 32 deliveries: {[len(deliveries(c.seen)) for c in consumers]}"
            time.sleep(0.05)
    finally:
        for c in consumers:
            stop_consumer(c)
    got = [deliveries(c.seen) for c in consumers]
    found = {m.uniq_key: m for m in stored_messages(cluster, topic)}
    assert sorted(g["id"] for g in got[0] + got[1]) == sorted(found), "each message exactly once in the group"
    for g in got[0] + got[1]:
        check_against_store(g, found[g["id"]], topic)
    late = [{g["queue_id"] for g in mine if g["tags"] == "Late"} for mine in got]
    assert all(len(qs) == 2 for qs in late) and not late[0] & late[1], f"two queues each after the rebalance: {late}"
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == max_offsets(cluster, topic)


def test_cpp2_compressed_and_delayed_messages_reach_push_and_pull_consumers(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """Bodies over 4 KiB are deflated by the 2.x producer (sysFlag COMPRESSED) and kept so; a message with
    delay level 2 (SetDelayTimeLevel) waits in SCHEDULE_TOPIC_XXXX queue 1 (1 s here), then reaches its topic
    with its delay level served.  Both kinds reach the push and the pull consumer as sent."""
    topic, group, pad = "Cpp2BigDelayTopic", "cpp2-big-delay-group", 6000
    produce(cpp2_lib, cluster, tmp_path, topic, 4, "--pad", str(pad), "--tags", "Big")
    sent_at = time.time()
    produce(cpp2_lib, cluster, tmp_path, topic, 4, "--delay", "2", "--tags", "Late")
    scheduled = wait_stored(cluster, "SCHEDULE_TOPIC_XXXX", 4, "the delayed sends waiting", queues=2)
    assert {m.queue_id for m in scheduled} == {1} and all(m.properties["REAL_TOPIC"] == topic for m in scheduled)
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, 8, "the big and the delayed messages")}
    big = [m for m in found.values() if m.tags == "Big"]
    assert len(big) == 4 and all(m.sys_flag & COMPRESSED for m in big), "kept compressed in the store"
    assert sorted(zlib.decompress(m.body).decode() for m in big) == \
        sorted(f"{body_of(i)} {'x' * pad}" for i in range(4))
    late = [m for m in found.values() if m.tags == "Late"]
    assert sorted(m.body.decode() for m in late) == sorted(body_of(i) for i in range(4))
    # RocketMQ 4.9.3's messageTimeup serialises the properties before it clears DELAY: the record keeps it
    assert all(m.store_timestamp >= sent_at * 1000 + 900 for m in late), [(m.store_timestamp, sent_at) for m in late]
    assert all((m.properties["DELAY"], m.properties["REAL_TOPIC"], m.properties["REAL_QID"]) ==
               ("2", topic, str(m.queue_id)) for m in late), [m.properties for m in late]

    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group)
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= 8, 30, "the eight messages")
    finally:
        stop_consumer(consumer)
    pulled = deliveries(run_to_done(cpp2_lib, cluster, tmp_path, ["pull", topic, "cpp2-big-delay-pull"], "the pull"))
    for got in (deliveries(consumer.seen), pulled):
        assert sorted(g["id"] for g in got) == sorted(found), "each message exactly once"
        for g in got:
            check_against_store(g, found[g["id"]], topic)


def test_cpp2_consumer_that_always_fails_gets_16_retries_then_the_dlq_whatever_the_group_says(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """The 2.x client sends CONSUMER_SEND_MSG_BACK with maxReconsumeTimes (16 unless set; the C API has no
    setter) and version V4_6_0, so the broker follows the header, not the group's retryMaxTimes (2 here):
    deliveries with reconsume times 0..16, then the 17th send-back goes to %DLQ%<group> (every delay level is
    1 s here: about 17 s)."""
    topic, group = "Cpp2DlqTopic", "cpp2-dlq-group"
    cluster.call(lambda: cluster.broker.groups.update(SubscriptionGroupConfig(group_name=group, retry_max_times=2)))
    # warm-up: the group's retry topic exists, and is routed, before the failing consumer starts
    produce(cpp2_lib, cluster, tmp_path, topic, 1, "--tags", "Warm")
    warm_up = start_consumer(cpp2_lib, cluster, tmp_path / "w", topic, group)
    try:
        warm_up.collect_until(lambda seen: len(deliveries(seen)) >= 1, 20, "the warm-up message")
        cluster.wait_until(lambda: cluster.namesrv.routes.route("%RETRY%" + group), 10, "the retry route")
    finally:
        stop_consumer(warm_up)

    [sent] = produce(cpp2_lib, cluster, tmp_path, topic, 1, "--prop", f"color={COLOR}")
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "--fail-always", "--props", "color")
    try:
        cluster.wait_until(lambda: cluster.broker.store.max_offset("%DLQ%" + group, 0) == 1, 45,
                           "the message in the DLQ")
        consumer.drain()
    finally:
        stop_consumer(consumer)
    tries = [g for g in deliveries(consumer.seen) if g["id"] == sent["msg_id"]]
    assert [g["reconsume_times"] for g in tries] == list(range(17)), "one delivery per count, in order, no more"
    assert all(g["failed"] and g["topic"] == topic and g["props"] == {"color": COLOR} for g in tries)
    [dead] = cluster.call(lambda: cluster.broker.store.get("%DLQ%" + group, 0, 0, 32).messages)
    assert (dead.body.decode(), dead.reconsume_times, dead.keys) == (body_of(0), 17, "key-0")
    assert dead.uniq_key == sent["msg_id"] and dead.properties["RETRY_TOPIC"] == topic
    assert dead.properties["color"] == COLOR and dead.properties["ORIGIN_MESSAGE_ID"]
    retried = cluster.call(lambda: cluster.broker.store.get("%RETRY%" + group, 0, 0, 32).messages)
    assert [m.reconsume_times for m in retried] == list(range(1, 17))


# --- pull consumer -------------------------------------------------------------------------------------------

def test_cpp2_pull_consumer_walks_every_queue_and_filters_by_tag(cpp2_lib: Cpp2Lib, cluster: LocalCluster,
                                                                 tmp_path: Path) -> None:
    """FetchSubscriptionMessageQueues names the topic's four queues; Pull from offset 0 in steps of at most 3,
    each from the previous nextBeginOffset, gets every message once as stored, the last pull of a queue
    NO_NEW_MSG with min/max offsets as stored; with "TagA || TagC" only those."""
    topic, count = "Cpp2PullTopic", 30
    tags = ("TagA", "TagB", "TagC")
    produce(cpp2_lib, cluster, tmp_path, topic, count, "--tags", ",".join(tags), "--prop", "idx={i}")
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, count, "the sends")}
    ends = max_offsets(cluster, topic)
    assert all(n >= 4 for n in ends.values()), "more than one pull's worth in every queue"

    lines = run_to_done(cpp2_lib, cluster, tmp_path, ["pull", topic, "cpp2-pull-group", "*", "--max", "3",
                                                      "--props", "idx"], "the pull of everything")
    [queues] = [s["queues"] for s in lines if "queues" in s]
    assert sorted((q["topic"], q["broker"], q["queue_id"]) for q in queues) == \
        [(topic, cluster.broker_name, q) for q in range(QUEUES)]
    got = deliveries(lines)
    assert sorted(g["id"] for g in got) == sorted(found), "each message exactly once"
    for g in got:
        check_against_store(g, found[g["id"]], topic)
        assert g["props"] == {"idx": str(number_of(g["body"]))}
    pulls = [s for s in lines if s.get("pull")]
    for q, end in ends.items():
        in_queue = [p for p in pulls if p["queue_id"] == q]
        assert [p["status"] for p in in_queue] == ["FOUND"] * -(-end // 3) + ["NO_NEW_MSG"], in_queue
        assert all(p["next"] == min(p["offset"] + 3, end) and (p["min"], p["max"]) == (0, end) for p in in_queue)

    lines = run_to_done(cpp2_lib, cluster, tmp_path, ["pull", topic, "cpp2-pull-filter-group", "TagA || TagC"],
                        "the pull of TagA and TagC")
    got = deliveries(lines)
    assert sorted(g["body"] for g in got) == sorted(body_of(i) for i in range(count) if tags[i % 3] != "TagB")
    for g in got:
        check_against_store(g, found[g["id"]], topic)
    assert {p["next"] for p in lines if p.get("pull") and p["status"] == "NO_NEW_MSG"} == set(ends.values())

    # past the end: PULL_OFFSET_MOVED (OFFSET_ILLEGAL to the client) with RocketMQ 4.9.3's correction, which
    # for a queue whose min offset is 0 is 0 (not the max offset), and an OFFSET_MOVED_EVENT record
    lines = run_to_done(cpp2_lib, cluster, tmp_path, ["pull", topic, "cpp2-pull-far-group", "*", "--from", "1000"],
                        "a pull past the end")
    pulls = [s for s in lines if s.get("pull")]
    assert sorted((p["queue_id"], p["status"], p["next"], p["min"], p["max"]) for p in pulls) == \
        [(q, "OFFSET_ILLEGAL", 0, 0, end) for q, end in ends.items()]
    assert deliveries(lines) == []
    moved = wait_stored(cluster, "OFFSET_MOVED_EVENT", QUEUES, "the offset-moved events", queues=1)
    assert all(m.tags == "cpp2-pull-far-group" for m in moved)


def test_cpp2_pull_consumer_gets_at_most_32_per_pull_and_moves_past_ranges_without_a_match(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """Two batches of 40 (one queue each): a Pull of up to 64 gets 32 (maxTransferCountOnMessageInMemory),
    then 8; a Pull for a tag no message has gets NO_MATCHED_MSG (PULL_RETRY_IMMEDIATELY) with nextBeginOffset
    past the scanned range, then NO_NEW_MSG; a Pull of up to 5 TagB (every other message) ends each at the
    entry after its fifth match."""
    topic = "Cpp2PullBigTopic"
    sent = produce(cpp2_lib, cluster, tmp_path, topic, 80, "--batch", "40")
    assert [(s["status"], s["offset"]) for s in sent] == [("SEND_OK", 0)] * 2
    found = {m.uniq_key: m for m in wait_stored(cluster, topic, 80, "the batches")}
    full = sorted(q for q, end in max_offsets(cluster, topic).items() if end)
    assert len(full) == 2 and all(max_offsets(cluster, topic)[q] == 40 for q in full)

    def pulls(expression: str, *flags: str) -> tuple[list[tuple[int, int, str, int, int]], list[dict[str, Any]]]:
        lines = run_to_done(cpp2_lib, cluster, tmp_path, ["pull", topic, f"cpp2-pull-{len(flags)}", expression,
                                                          *flags], f"the pull of {expression} {flags}")
        return ([(p["queue_id"], p["offset"], p["status"], p["next"], p["size"]) for p in lines if p.get("pull")
                 and p["queue_id"] in full], deliveries(lines))

    steps, got = pulls("*", "--max", "64")
    assert steps == [row for q in full for row in [(q, 0, "FOUND", 32, 32), (q, 32, "FOUND", 40, 8),
                                                   (q, 40, "NO_NEW_MSG", 40, 0)]]
    assert sorted(g["id"] for g in got) == sorted(found)
    for g in got:
        check_against_store(g, found[g["id"]], topic)

    steps, got = pulls("TagZ")
    assert steps == [row for q in full for row in [(q, 0, "NO_MATCHED_MSG", 40, 0), (q, 40, "NO_NEW_MSG", 40, 0)]]
    assert got == []

    steps, got = pulls("TagB", "--max", "5", "--from", "0")
    assert steps == [row for q in full for row in [(q, k, "FOUND", k + 10, 5) for k in (0, 10, 20, 30)]
                     + [(q, 40, "NO_NEW_MSG", 40, 0)]]
    assert sorted(g["body"] for g in got) == sorted(body_of(i) for i in range(80) if i % 2)


# --- the admin asking the consumer through the broker ----------------------------------------------------------

def test_cpp2_orderly_consumer_seen_by_the_admin_through_the_broker(cpp2_lib: Cpp2Lib, cluster: LocalCluster,
                                                                    tmp_path: Path) -> None:
    """mqadmin consumerConnection / consumerStatus / consumerProgress against a 2.x client: the broker lists
    it from its heartbeat (language CPP, version V4_6_0 = 333), forwards GET_CONSUMER_RUNNING_INFO to it and
    passes its answer back (its subscriptions, orderly, the queues it holds with their offsets), and, once it
    has shut down, reports the group's progress from the offsets it committed."""
    topic, group, count = "Cpp2AdminTopic", "cpp2-admin-group", 12
    produce(cpp2_lib, cluster, tmp_path, topic, count)
    wait_stored(cluster, topic, count, "the sends")
    consumer = start_consumer(cpp2_lib, cluster, tmp_path / "c", topic, group, "TagA || TagB", "--orderly")
    try:
        consumer.collect_until(lambda seen: len(deliveries(seen)) >= count, 30, f"{count} deliveries")
        ends = max_offsets(cluster, topic)

        async def ask() -> tuple[list[ConsumerConnection], ConsumerRunningInfo]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                _, clients = await admin.consumer_connections(group)
                deadline = time.monotonic() + 10
                while True:  # the offsets the client holds follow its consume callbacks
                    info = await admin.consumer_running_info(group, clients[0].client_id)
                    held = {k[2]: v.commit_offset for k, v in info.mq_table.items() if k[0] == topic}
                    if held == ends:
                        return clients, info
                    assert time.monotonic() < deadline, f"timed out after 10 s: the client reports {held}"
                    await asyncio.sleep(0.1)

        clients, info = run(ask())
    finally:
        stop_consumer(consumer)  # commits its offsets to the broker (otherwise done every 5 s)

    async def progress_of_group() -> ConsumeProgress:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.consume_progress(group, topic)

    progress = run(progress_of_group())
    assert [(c.language, c.version) for c in clients] == [("CPP", 333)], clients
    subscriptions = {s.topic: s for s in info.subscriptions}
    assert sorted(subscriptions) == sorted([topic, f"%RETRY%{group}"])
    assert subscriptions[topic].sub_string == "TagA || TagB" and set(subscriptions[topic].tags_set) == {"TagA", "TagB"}
    assert info.properties[ConsumerRunningInfo.PROP_CONSUME_ORDERLY] == "true", info.properties
    assert info.properties[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == cluster.namesrv_addr
    assert [(q.queue_id, q.broker_offset, q.consumer_offset) for q in progress.queues if q.topic == topic] == \
        [(q, end, end) for q, end in ends.items()] and progress.total_lag == 0
