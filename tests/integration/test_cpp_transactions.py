"""Transactional messages from the official RocketMQ C++ client 2.x (core "2.1.0_cvs", its C API driven with
ctypes by cpp2_tx_runner.py) against our name server and broker.

The producer sends half messages with SendMessageTransaction; its local transaction executor answers commit,
rollback or unknown, and the library ends the transaction with END_TRANSACTION.  The broker runs its check
service every 500 ms and asks about half messages older than 1 s (CHECK_TRANSACTION_STATE); the library hands
the question to the checker callback and sends its answer back.  What the broker stored is read from its
store on the cluster's loop: the real topic, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC and
TRANS_CHECK_MAX_TIME_TOPIC, with RocketMQ 4.9.3's layout (sysFlag, preparedTransactionOffset, op bodies).

The library sends its heartbeat (which tells the broker which connection belongs to the producer group, so
that checks can reach it) 10 ms after start and then every 30 s; the runner's first send normally fetches the
route before that first heartbeat, so the broker knows the producer at once.  Should it lose that race, the
producer is known only 30 s later: the check tests allow for it (a high check maximum, 60 s deadlines).

Skipped (with the reason) only when pip cannot fetch the sdist or the library does not load here.
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cpp2_driver import Cpp2Lib, Runner, checks, sends
from local_cluster import LocalCluster, acl_home, pull_all, stored_messages, wait_stored

from rocketstore.message.record import StoredMessage

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
TX_MASK, COMMIT = 0xC, 0x8
#: the check service's period and the age from which a half message is checked (short, for the tests)
SHORT_CHECKS: dict[str, Any] = {"transaction_check_interval_ms": 500, "transaction_timeout_ms": 1000}
#: generous: should the producer's first heartbeat come only after 30 s, its messages are still open then
MANY_CHECKS = 1000


def body_of(i: int) -> str:
    return f"body-{i} ünï"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", transaction_check_max=MANY_CHECKS, **SHORT_CHECKS) as c:
        yield c


def start(cpp2_lib: Cpp2Lib, cluster: LocalCluster, home: Path, topic: str, group: str, count: int,
          *flags: str) -> Runner:
    """A tx-produce runner that has made all its sends (it stays up to answer checks)."""
    runner = cpp2_lib.runner(["tx-produce", cluster.namesrv_addr, topic, group, str(count), *flags], home)
    try:
        runner.collect_until(lambda seen: any(s.get("sent") for s in seen), 60, f"{count} transactional sends")
    except BaseException:
        runner.kill()
        raise
    return runner


def wait_checked_through(cluster: LocalCluster, runner: Runner | None, timeout_s: float, what: str) -> None:
    """Wait until the check service's progress (the half queue offset of CID_RMQ_SYS_TRANS) has reached the
    end of the half queue: every half message has been passed over, answered or given up.  The end is read
    once the dispatcher has every record (a copy just written is not in the half queue before)."""
    def done() -> bool:
        end = cluster.broker.store.max_offset(HALF_TOPIC, 0)
        return (cluster.broker.store.dispatch_behind_bytes == 0 and end > 0
                and cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0) == end)

    deadline = time.monotonic() + timeout_s
    while not cluster.call(done):
        if runner is not None:
            runner.drain()
        if time.monotonic() > deadline:
            progress = cluster.call(lambda: (cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0),
                                             cluster.broker.store.max_offset(HALF_TOPIC, 0)))
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: check offset / half queue "
                                 f"end {progress}")
        time.sleep(0.05)
    if runner is not None:
        runner.drain()


def index_of(message: StoredMessage) -> int:
    return int(message.body.decode().split()[0].split("-")[1])


def assert_sent_ok(sent: list[dict[str, Any]], count: int, local: str) -> dict[int, dict[str, Any]]:
    assert [s["status"] for s in sent] == ["SEND_OK"] * count, sent
    assert all(s["local"] == local and s["executed"] for s in sent), "the executor ran for every send"
    ids = [s["msg_id"] for s in sent]
    assert len(set(ids)) == count and all(len(i) == 32 for i in ids), ids
    # the executor saw the message with the unique key the client set, which is the id it returned
    assert [s["uniq_key"] for s in sent] == ids
    return {s["i"]: s for s in sent}


def assert_half(cluster: LocalCluster, offset: int, topic: str, message_body: bytes) -> StoredMessage:
    """The record at commitlog *offset* is a half message of *topic* with *message_body*."""
    half = cluster.call(lambda: cluster.broker.store.message_at(offset))
    assert half is not None, f"no record at commitlog offset {offset}"
    assert half.topic == HALF_TOPIC and half.queue_id == 0
    assert half.sys_flag & TX_MASK == 0, "a half message is stored with its transaction bits cleared"
    assert half.properties["REAL_TOPIC"] == topic and half.properties["TRAN_MSG"] == "true"
    assert half.body == message_body
    return half


def assert_ops(cluster: LocalCluster, half_offsets: set[int], what: str) -> None:
    ops = wait_stored(cluster, OP_TOPIC, len(half_offsets), timeout_s=15, what=what)
    assert all(op.tags == "d" and op.queue_id == 0 for op in ops), [(op.tags, op.queue_id) for op in ops]
    assert {int(op.body) for op in ops} == half_offsets, "each op record's body is its half message's queue offset"


def assert_committed(cluster: LocalCluster, topic: str, group: str, by_index: dict[int, dict[str, Any]],
                     tags: list[str], found: list[StoredMessage]) -> None:
    assert sorted(index_of(m) for m in found) == sorted(by_index)
    for m in found:
        i = index_of(m)
        assert m.body.decode() == body_of(i) and m.keys == f"key-{i}" and m.tags == tags[i % len(tags)]
        assert m.properties["order"] == str(i), "the user property travels through the half message"
        assert m.uniq_key == by_index[i]["msg_id"], "the committed message keeps the id the client returned"
        assert m.properties["PGROUP"] == group
        assert m.sys_flag & TX_MASK == COMMIT, f"sysFlag {m.sys_flag:#x}: TRANSACTION_COMMIT_TYPE expected"
        half = assert_half(cluster, m.prepared_transaction_offset, topic, m.body)
        assert half.properties["REAL_QID"] == str(m.queue_id) and half.uniq_key == m.uniq_key
        assert half.born_timestamp == m.born_timestamp


def consume_with_cpp_1x(cluster: LocalCluster, home: Path, topic: str, count: int) -> list[str] | None:
    """The committed messages as the C++ 1.x PushConsumer (PyPI rocketmq 0.4.4) receives them; None when that
    client cannot be imported here."""
    import cpp_driver

    if cpp_driver.SKIP_REASON is not None:
        return None
    consumer = cpp_driver.Runner(["consume", cluster.namesrv_addr, topic, "tx-cpp1-consumer"], home)
    try:
        consumer.collect_until(lambda seen: len(cpp_driver.messages(seen)) >= count, 60,
                               f"{count} committed messages pushed to the C++ 1.x consumer")
        consumer.stop()
    finally:
        consumer.kill()
    return sorted(m["body"] for m in cpp_driver.messages(consumer.seen))


def test_local_commit_stores_the_messages_in_their_topic(cpp2_lib: Cpp2Lib, cluster: LocalCluster,
                                                         tmp_path: Path) -> None:
    """Executor says commit: END_TRANSACTION right after each half message puts it into the real topic as
    sent (body, tags, keys, user property, UNIQ_KEY = the id SendMessageTransaction returned, sysFlag COMMIT,
    preparedTransactionOffset -> the half record) and writes an op record; nothing is ever checked back."""
    topic, group, count, tags = "CppTxCommit", "cpp-tx-commit", 6, ["TagA", "TagB", "TagC"]
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "commit", "--tags", ",".join(tags),
                   "--prop", "order={i}")
    try:
        by_index = assert_sent_ok(sends(runner.seen), count, "commit")
        found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} committed messages")
        assert_committed(cluster, topic, group, by_index, tags, found)
        # the offset SendMessageTransaction returned is the half message's queue offset
        halves = {m.uniq_key: assert_half(cluster, m.prepared_transaction_offset, topic, m.body) for m in found}
        assert {by_index[index_of(m)]["offset"] for m in found} == {h.queue_offset for h in halves.values()}
        assert_ops(cluster, {h.queue_offset for h in halves.values()}, "an op record per committed half message")
        assert len(stored_messages(cluster, HALF_TOPIC)) == count, "no half message was checked (and so written again)"
        wait_checked_through(cluster, runner, 30, "the check service to pass the committed half messages")
        assert checks(runner.seen) == [], "a committed transaction is not checked"
    finally:
        runner.stop()
    assert runner.seen[-1].get("shutdown"), runner.seen[-3:]

    pulled = pull_all(cluster.namesrv_addr, topic, "tx-inspector-group")
    assert sorted(m.body.decode() for m in pulled) == sorted(body_of(i) for i in range(count))
    cpp1 = consume_with_cpp_1x(cluster, tmp_path, topic, count)
    assert cpp1 is None or cpp1 == sorted(body_of(i) for i in range(count))


def test_a_delay_level_on_a_transactional_message_is_ignored_as_the_java_client_does(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """The C++ client keeps SetDelayTimeLevel on a transactional message (the Java client clears it); a
    4.9.3 broker would file the half message under SCHEDULE_TOPIC_XXXX and lose it.  Ours stores the half
    message without DELAY, so the commit puts it into its topic at once."""
    topic, group, count = "CppTxDelay", "cpp-tx-delay", 3
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "commit", "--delay", "3")
    try:
        assert_sent_ok(sends(runner.seen), count, "commit")
        found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} committed messages")
        assert sorted(m.body.decode() for m in found) == sorted(body_of(i) for i in range(count))
        assert all("DELAY" not in m.properties for m in found)
        assert cluster.call(lambda: cluster.broker.store.max_offset("SCHEDULE_TOPIC_XXXX", 2)) == 0
    finally:
        runner.stop()


def test_local_rollback_stores_nothing_in_the_topic(cpp2_lib: Cpp2Lib, cluster: LocalCluster,
                                                    tmp_path: Path) -> None:
    """Executor says rollback: only op records (tag d, body = the half queue offset) follow the half
    messages.  The checker would commit if asked, so a wrong check would show up as messages."""
    topic, group, count = "CppTxRollback", "cpp-tx-rollback", 4
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "rollback", "--check", "commit")
    try:
        by_index = assert_sent_ok(sends(runner.seen), count, "rollback")
        assert_ops(cluster, {s["offset"] for s in by_index.values()}, "an op record per rolled back half message")
        halves = stored_messages(cluster, HALF_TOPIC)
        assert sorted(h.uniq_key for h in halves) == sorted(s["msg_id"] for s in by_index.values())
        wait_checked_through(cluster, runner, 30, "the check service to pass the rolled back half messages")
        assert checks(runner.seen) == [], "a rolled back transaction is not checked"
        assert stored_messages(cluster, topic) == []
    finally:
        runner.stop()


@pytest.mark.parametrize("unknown_first", [0, 1], ids=["first-check-commits", "second-check-commits"])
def test_unknown_transaction_is_committed_by_the_check(cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path,
                                                       unknown_first: int) -> None:
    """Executor says unknown: the broker's check reaches the C++ checker callback with the message (real
    topic and queue, body, keys, tags, UNIQ_KEY, PGROUP, TRANSACTION_CHECK_TIMES) at the offsets of the copy
    the check service wrote; the checker's commit (after answering unknown *unknown_first* times) puts the
    messages into the topic, preparedTransactionOffset naming the checked copy."""
    topic, group, count, tags = "CppTxCheckCommit", "cpp-tx-check-commit", 4, ["TagA", "TagB"]
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "unknown", "--check", "commit",
                   "--prop", "order={i}", "--check-unknown-first", str(unknown_first))
    try:
        by_index = assert_sent_ok(sends(runner.seen), count, "unknown")
        runner.collect_until(lambda seen: len({c["i"] for c in checks(seen) if c["answer"] == "commit"}) >= count,
                             60, f"the broker's checks of {count} half messages to reach the C++ checker")
        found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} messages committed by the checker")
        runner.drain()
    finally:
        runner.stop()
    seen = checks(runner.seen)
    commits = {c["i"]: c for c in seen if c["answer"] == "commit"}
    assert sorted(commits) == list(range(count)), "each message committed exactly once"
    for c in seen:
        i = c["i"]
        assert c["topic"] == topic and c["body"] == body_of(i) and c["keys"] == f"key-{i}"
        assert c["tags"] == tags[i % 2] and c["props"]["order"] == str(i)
        assert c["msg_id"] == c["props"]["UNIQ_KEY"] == by_index[i]["msg_id"]
        assert c["props"]["PGROUP"] == group and c["props"]["TRAN_MSG"] == "true"
        assert c["props"]["REAL_TOPIC"] == topic and c["props"]["REAL_QID"] == str(c["queue_id"])
        # the broker counts its checks in the copy it writes for each (all of them reached the producer unless
        # its first heartbeat came late)
        assert int(c["props"]["TRANSACTION_CHECK_TIMES"]) >= c["n"]
        # the offsets are those of the copy written for this check, in the half queue
        copy = assert_half(cluster, c["commit_log_offset"], topic, body_of(i).encode())
        assert copy.queue_offset == c["queue_offset"]
        assert copy.properties["TRANSACTION_CHECK_TIMES"] == c["props"]["TRANSACTION_CHECK_TIMES"]
    assert all(c["n"] == unknown_first + 1 for c in commits.values())
    assert_committed(cluster, topic, group, by_index, tags, found)
    for m in found:
        check = commits[index_of(m)]
        assert m.prepared_transaction_offset == check["commit_log_offset"], "committed from the checked copy"
        assert m.queue_id == check["queue_id"]
    assert_ops(cluster, {c["queue_offset"] for c in commits.values()}, "an op record per committed copy")

    pulled = pull_all(cluster.namesrv_addr, topic, "tx-inspector-group")
    assert sorted(m.body.decode() for m in pulled) == sorted(body_of(i) for i in range(count))
    cpp1 = consume_with_cpp_1x(cluster, tmp_path, topic, count)
    assert cpp1 is None or cpp1 == sorted(body_of(i) for i in range(count))


def test_unknown_transaction_rolled_back_by_the_check_never_appears(cpp2_lib: Cpp2Lib, cluster: LocalCluster,
                                                                   tmp_path: Path) -> None:
    """Executor says unknown, checker says rollback: op records for the checked copies, nothing in the
    topic, and no further checks once the check service has passed them."""
    topic, group, count = "CppTxCheckRollback", "cpp-tx-check-rollback", 3
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "unknown", "--check", "rollback")
    try:
        by_index = assert_sent_ok(sends(runner.seen), count, "unknown")
        runner.collect_until(lambda seen: len(checks(seen)) >= count, 60,
                             f"the broker's checks of {count} half messages to reach the C++ checker")
        rollbacks = {c["i"]: c for c in checks(runner.seen)}
        assert sorted(rollbacks) == list(range(count))
        assert all(c["msg_id"] == by_index[i]["msg_id"] for i, c in rollbacks.items())
        assert_ops(cluster, {c["queue_offset"] for c in rollbacks.values()}, "an op record per rolled back copy")
        wait_checked_through(cluster, runner, 30, "the check service to pass the rolled back copies")
    finally:
        runner.stop()
    assert [c["n"] for c in checks(runner.seen)] == [1] * count, "no check after the rollback"
    assert stored_messages(cluster, topic) == []
    assert stored_messages(cluster, CHECK_MAX_TOPIC, 1) == []


def test_transaction_left_unknown_is_moved_to_the_check_max_topic(cpp2_lib: Cpp2Lib, tmp_path: Path) -> None:
    """Executor and checker both say unknown, transaction_check_max=2: after two checks the half messages are
    given up and moved to TRANS_CHECK_MAX_TIME_TOPIC; they never reach the topic and are not checked again."""
    topic, group, count = "CppTxCheckMax", "cpp-tx-check-max", 2
    with LocalCluster(tmp_path / "store", transaction_check_max=2, **SHORT_CHECKS) as cluster:
        runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "unknown", "--check", "unknown")
        try:
            by_index = assert_sent_ok(sends(runner.seen), count, "unknown")
            moved = wait_stored(cluster, CHECK_MAX_TOPIC, count, timeout_s=60, what=f"{count} half messages given up")
            wait_checked_through(cluster, runner, 30, "the check service to pass the given-up messages")
        finally:
            runner.stop()
        in_topic, ops = stored_messages(cluster, topic), stored_messages(cluster, OP_TOPIC)
    assert sorted(m.uniq_key for m in moved) == sorted(s["msg_id"] for s in by_index.values())
    for m in moved:
        i = index_of(m)
        assert m.body.decode() == body_of(i) and m.keys == f"key-{i}" and m.queue_id == 0
        assert m.properties["REAL_TOPIC"] == topic and m.properties["TRANSACTION_CHECK_TIMES"] == "2"
    seen = checks(runner.seen)
    # the checks that reached the producer: at most two per message, numbered as the broker counted them
    # (none reach it if its first heartbeat came late, after the messages were given up)
    assert all(c["answer"] == "unknown" and c["n"] == int(c["props"]["TRANSACTION_CHECK_TIMES"]) <= 2 for c in seen)
    assert max(Counter(c["msg_id"] for c in seen).values(), default=0) <= 2
    assert in_topic == [] and ops == [], "a given-up transaction is neither committed nor rolled back"


def test_check_immunity_time_holds_the_check_back(cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """CHECK_IMMUNITY_TIME_IN_SECONDS=3 on the messages (a user property the C++ client just passes on): no
    check before they are 3 s old, although the check service runs every 500 ms and the broker's
    transaction_timeout is 1 s.  Meanwhile the service copies them back into the half queue with
    TRAN_PREPARED_QUEUE_OFFSET naming the original; the checker's commit then puts each into the topic once."""
    topic, group, count = "CppTxImmunity", "cpp-tx-immunity", 2
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "unknown", "--check", "commit",
                   "--prop", "CHECK_IMMUNITY_TIME_IN_SECONDS=3", "--prop", "order={i}")
    try:
        by_index = assert_sent_ok(sends(runner.seen), count, "unknown")
        runner.collect_until(lambda seen: len(checks(seen)) >= count, 60, "the checks after the immunity time")
        found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} messages committed after the immunity time")
        wait_checked_through(cluster, runner, 30, "the check service to pass every copy")
    finally:
        runner.stop()
    first: dict[int, dict[str, Any]] = {}
    for c in checks(runner.seen):
        first.setdefault(c["i"], c)
    for i, c in first.items():
        waited = c["t"] - by_index[i]["t"]
        assert waited >= 2.5, f"message {i} was checked {waited:.2f} s after its send, within its immunity time"
        # the checked copy remembers the original half message, and so does the committed message
        assert c["props"]["TRAN_PREPARED_QUEUE_OFFSET"] == str(by_index[i]["offset"])
        # as 4.9.3's needDiscard, every round that met the message while it was immune counted as a check
        assert int(c["props"]["TRANSACTION_CHECK_TIMES"]) >= 2, c["props"]
    assert all(c["answer"] == "commit" and c["n"] == 1 for c in checks(runner.seen)), "one check each"
    assert sorted(index_of(m) for m in found) == list(range(count)), "each committed once"
    for m in found:
        assert m.properties["TRAN_PREPARED_QUEUE_OFFSET"] == str(by_index[index_of(m)]["offset"])
        assert m.prepared_transaction_offset == first[index_of(m)]["commit_log_offset"]
    copies = [h for h in stored_messages(cluster, HALF_TOPIC) if "TRAN_PREPARED_QUEUE_OFFSET" in h.properties]
    assert len(copies) > count, "the immune messages were copied back while they waited"


def test_compressed_bodies_keep_their_flag_through_the_half_message_and_the_check(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """The library compresses bodies over 4 KiB (sysFlag COMPRESSED): the half message, the copy a check is
    about and the committed message keep the flag and the compressed body, so the checker reads the text and
    a consumer gets it back."""
    topic, group, count, pad = "CppTxCompressed", "cpp-tx-compressed", 2, 6000
    text = {i: f"{body_of(i)} {'x' * pad}" for i in range(count)}
    runner = start(cpp2_lib, cluster, tmp_path, topic, group, count, "--local", "commit,unknown", "--check",
                   "commit", "--pad", str(pad))
    try:
        assert [s["status"] for s in sends(runner.seen)] == ["SEND_OK"] * count
        runner.collect_until(lambda seen: len(checks(seen)) >= 1, 60, "the check of the message left unknown")
        found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} compressed messages committed")
    finally:
        runner.stop()
    [check] = checks(runner.seen)
    assert check["i"] == 1 and check["body"] == text[1], "the checker reads the decompressed body"
    for m in found:
        assert m.sys_flag & 0x1 and m.sys_flag & TX_MASK == COMMIT, f"sysFlag {m.sys_flag:#x}"
        assert zlib.decompress(m.body).decode() == text[index_of_compressed(m)]
        half = assert_half(cluster, m.prepared_transaction_offset, topic, m.body)
        assert half.sys_flag & 0x1, f"half sysFlag {half.sys_flag:#x}"
    assert sorted(m.body.decode() for m in pull_all(cluster.namesrv_addr, topic, "tx-inspector-group")) == sorted(text.values())
    cpp1 = consume_with_cpp_1x(cluster, tmp_path, topic, count)
    assert cpp1 is None or cpp1 == sorted(text.values())


def index_of_compressed(message: StoredMessage) -> int:
    return int(zlib.decompress(message.body).decode().split()[0].split("-")[1])


def test_transaction_left_open_by_a_producer_that_went_away_is_resolved_by_another_of_its_group(
        cpp2_lib: Cpp2Lib, cluster: LocalCluster, tmp_path: Path) -> None:
    """Producer A leaves its transactions unknown and shuts down; producer B of the same group (another
    process) is the one connected when the broker checks, so B's checker commits A's messages."""
    topic, group = "CppTxHandOver", "cpp-tx-hand-over"
    first = start(cpp2_lib, cluster, tmp_path, topic, group, 3, "--local", "unknown", "--prop", "run=A")
    first.stop()
    assert first.seen[-1].get("shutdown"), first.seen[-3:]
    by_index = assert_sent_ok(sends(first.seen), 3, "unknown")
    second = start(cpp2_lib, cluster, tmp_path, topic, group, 1, "--local", "commit", "--check", "commit",
                   "--prop", "run=B")
    try:
        found = wait_stored(cluster, topic, 4, timeout_s=60, what="A's three messages committed by B's checker, and B's own")
        second.drain()
    finally:
        second.stop()
    assert checks(first.seen) == []
    asked = checks(second.seen)
    assert sorted(c["msg_id"] for c in asked) == sorted(s["msg_id"] for s in by_index.values())
    assert all(c["props"]["run"] == "A" and c["answer"] == "commit" for c in asked)
    assert sorted((m.properties["run"], index_of(m)) for m in found) == [("A", 0), ("A", 1), ("A", 2), ("B", 0)]


ACL_FILE = """\
accounts:
  - accessKey: cpp2-tx-app
    secretKey: cpp2-s3cret
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - CppTxAcl=PUB|SUB
      - TBW102=PUB|SUB
"""


def test_signed_transactions_with_acl_and_a_wrong_secret_refused(cpp2_lib: Cpp2Lib, tmp_path: Path) -> None:
    """A broker with aclEnable: the producer signs with SetProducerSessionCredentials; its half messages, its
    END_TRANSACTION (after the executor, and after a check) are accepted, so local commits and check commits
    both reach the topic.  The same producer with a wrong secret has its send refused: no half message."""
    topic, group, count = "CppTxAcl", "cpp-tx-acl", 4
    home = acl_home(tmp_path / "home", ACL_FILE)
    good = {"RMQ_ACCESS_KEY": "cpp2-tx-app", "RMQ_SECRET_KEY": "cpp2-s3cret"}
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home),
                      transaction_check_max=MANY_CHECKS, **SHORT_CHECKS) as cluster:
        runner = cpp2_lib.runner(["tx-produce", cluster.namesrv_addr, topic, group, str(count), "--local",
                                  "commit,unknown", "--check", "commit"], tmp_path, good)
        try:
            runner.collect_until(lambda seen: any(s.get("sent") for s in seen), 60, f"{count} signed sends")
            assert [s["status"] for s in sends(runner.seen)] == ["SEND_OK"] * count, sends(runner.seen)
            runner.collect_until(lambda seen: len(checks(seen)) >= count // 2, 60,
                                 "the checks of the messages left unknown")
            found = wait_stored(cluster, topic, count, timeout_s=15, what=f"{count} messages committed (locally or by a check)")
        finally:
            runner.stop()
        assert sorted(m.body.decode() for m in found) == sorted(body_of(i) for i in range(count))
        assert sorted(c["i"] for c in checks(runner.seen)) == [1, 3], "only the unknown ones were checked"

        bad = {**good, "RMQ_SECRET_KEY": "not-the-secret"}
        refused = cpp2_lib.runner(["tx-produce", cluster.namesrv_addr, topic, "cpp-tx-acl-bad", "1", "--local",
                                   "commit"], tmp_path, bad)
        try:
            refused.collect_until(lambda seen: any(s.get("sent") for s in seen), 60, "the refused send")
        finally:
            refused.stop()
        [line] = sends(refused.seen)
        assert line["status"] == "FAILED" and not line.get("executed"), line
        assert {h.properties["PGROUP"] for h in stored_messages(cluster, HALF_TOPIC)} == {group}, "none from the wrong secret"
        assert len(stored_messages(cluster, topic)) == count
