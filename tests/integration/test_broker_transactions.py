"""The broker's side of transactional messages on raw remoting frames (no client library between): half
messages, END_TRANSACTION's checks and writes, the check service's rounds, its offsets across a restart.

Half messages here are sent with a born time in the past, so the check service (every 200 ms in these
tests) finds them old enough at once instead of after transactionTimeOut.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from serve_process import cli, wait_for

from rocketstore.broker.transactions import CHECK_GROUP, CHECK_MAX_TIME_TOPIC, HALF_TOPIC, OP_TOPIC
from rocketstore.client import BrokerError
from rocketstore.client.admin import AdminClient
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import PropertyName, encode_properties, parse_properties
from rocketstore.message.record import StoredMessage, SysFlag, decode_record
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.bodies import HeartbeatData
from rocketstore.remoting.headers import CheckTransactionStateRequestHeader
from rocketstore.remoting.transport import Connection, connect, run

TOPIC, GROUP = "TxTopic", "tx-producer-group"
DEADLINE_S = 20.0
FAST_CHECKS: dict[str, Any] = {"transaction_check_interval_ms": 200}


def stored(cluster: LocalCluster, topic: str, queue_id: int = 0) -> list[StoredMessage]:
    return cluster.call(lambda: cluster.broker.store.get(topic, queue_id, 0, 1000).messages)


def half_send(body: bytes, uniq: str, *, queue_id: int = 1, born_ms: int | None = None, group: str = GROUP,
              extra: dict[str, str] | None = None) -> RemotingCommand:
    """SEND_MESSAGE_V2 of a half message as a 4.9.3 Java producer sends it (TRAN_MSG, PGROUP, sysFlag 4)."""
    props = {PropertyName.TAGS: "TagA", PropertyName.KEYS: f"key-{uniq}", PropertyName.UNIQ_KEY: uniq,
             PropertyName.WAIT: "true", PropertyName.TRAN_MSG: "true", PropertyName.PGROUP: group, **(extra or {})}
    born = born_ms if born_ms is not None else int(time.time() * 1000)
    ext = {"a": group, "b": TOPIC, "c": "TBW102", "d": "4", "e": str(queue_id), "f": str(SysFlag.TRANSACTION_PREPARED_TYPE),
           "g": str(born), "h": "7", "i": encode_properties(props), "j": "0", "k": "false", "m": "false"}
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


def end_tx(answer: RemotingCommand, uniq: str, kind: int, *, group: str = GROUP, from_check: bool = False,
           oneway: bool = False, **override: str) -> RemotingCommand:
    """END_TRANSACTION for the half message *answer* (a send's answer) names."""
    _, commit_log_offset = decode_offset_message_id(answer.ext_fields["msgId"])
    ext = {"producerGroup": group, "tranStateTableOffset": answer.ext_fields["queueOffset"],
           "commitLogOffset": str(commit_log_offset), "commitOrRollback": str(kind),
           "fromTransactionCheck": "true" if from_check else "false", "msgId": uniq, "transactionId": uniq}
    ext.update(override)
    return RemotingCommand.request(RequestCode.END_TRANSACTION, ext, oneway=oneway)


def commit_on_check(check: RemotingCommand) -> RemotingCommand:
    """The END_TRANSACTION a producer answers a check with when its transaction committed."""
    h = CheckTransactionStateRequestHeader.from_ext_fields(check.ext_fields)
    return RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": GROUP, "tranStateTableOffset": str(h.tran_state_table_offset),
        "commitLogOffset": str(h.commit_log_offset), "commitOrRollback": str(SysFlag.TRANSACTION_COMMIT_TYPE),
        "fromTransactionCheck": "true", "msgId": h.msg_id or "", "transactionId": h.transaction_id or ""},
        oneway=True)


class Producer:
    """A raw connection that sends requests and records the CHECK_TRANSACTION_STATE requests it gets."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.checks: list[RemotingCommand] = []
        self.answer: Callable[[RemotingCommand], RemotingCommand | None] = lambda check: None
        self.conn: Connection

    async def _serve(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            assert request.is_oneway
            self.checks.append(request)
            reply = self.answer(request)
            if reply is not None:
                await conn.oneway(reply)
        return None

    async def open(self, heartbeat: bool = True) -> None:
        self.conn = await connect(self.cluster.broker_addr, handler=self._serve)
        if heartbeat:
            beat = HeartbeatData("127.0.0.1@tx-test", (GROUP,), ()).encode()
            assert (await self.conn.request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, beat), 5)).code == 0

    async def request(self, command: RemotingCommand) -> RemotingCommand:
        return await self.conn.request(command, 5)


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as c:
        yield c


def test_a_half_message_is_stored_in_the_half_topic_and_answered_as_a_send(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:  # no check rounds during this test
        async def go() -> RemotingCommand:
            p = Producer(cluster)
            await p.open(heartbeat=False)
            return await p.request(half_send(b"half body", "UNIQ1", queue_id=2))

        answer = run(go())
        assert answer.code == ResponseCode.SUCCESS
        assert answer.ext_fields["queueId"] == "2", "the answer names the queue asked for"
        assert answer.ext_fields["queueOffset"] == "0", "and the half message's offset in the half queue"
        [half] = wait_for(lambda: stored(cluster, HALF_TOPIC), DEADLINE_S, "the half message")
        assert half.msg_id == answer.ext_fields["msgId"]
        assert half.body == b"half body" and half.flag == 7 and half.queue_id == 0
        assert half.sys_flag & SysFlag.TRANSACTION_MASK == 0, "stored as a normal message of the half topic"
        props = half.properties
        assert props[PropertyName.REAL_TOPIC] == TOPIC and props[PropertyName.REAL_QID] == "2"
        assert props[PropertyName.TRAN_MSG] == "true" and props[PropertyName.PGROUP] == GROUP
        assert props[PropertyName.WAIT] == "true", "4.9.3 puts WAIT back before the half's properties string"
        assert props[PropertyName.CLUSTER] == "DefaultCluster"
        assert cluster.call(lambda: cluster.broker.store.max_offset(TOPIC, 2)) == 0, "nothing in the real topic"


def test_commit_writes_the_final_message_and_an_op_record(cluster: LocalCluster) -> None:
    async def go() -> tuple[RemotingCommand, RemotingCommand]:
        p = Producer(cluster)
        await p.open()
        answer = await p.request(half_send(b"committed", "UNIQ-C", queue_id=1))
        return answer, await p.request(end_tx(answer, "UNIQ-C", SysFlag.TRANSACTION_COMMIT_TYPE))

    answer, ended = run(go())
    assert ended.code == ResponseCode.SUCCESS, ended.remark
    [half] = wait_for(lambda: stored(cluster, HALF_TOPIC), DEADLINE_S, "the half message")
    [final] = wait_for(lambda: stored(cluster, TOPIC, 1), DEADLINE_S, "the committed message")
    assert final.body == b"committed" and final.flag == 7 and final.queue_offset == 0
    assert final.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT_TYPE
    assert final.prepared_transaction_offset == half.commit_log_offset
    assert final.born_timestamp == half.born_timestamp and final.born_host == half.born_host
    assert final.properties_string == half.properties_string, "the half's properties string, unchanged"
    assert final.uniq_key == "UNIQ-C" and final.tags == "TagA"
    [op] = wait_for(lambda: stored(cluster, OP_TOPIC), DEADLINE_S, "the op record")
    assert op.body == answer.ext_fields["queueOffset"].encode()
    assert parse_properties(op.properties_string) == {"TAGS": "d", "WAIT": "true"}
    # the check service sees the op record: no check, and its offsets move past both
    wait_for(lambda: cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0)) == 1,
             DEADLINE_S, "the op queue's check offset to pass the op record")
    assert cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0)) == 1
    assert cluster.call(lambda: cluster.broker.transactions.checks_sent) == 0


def test_rollback_writes_only_the_op_record_and_bad_requests_are_refused(cluster: LocalCluster) -> None:
    async def go() -> list[RemotingCommand]:
        p = Producer(cluster)
        await p.open()
        answer = await p.request(half_send(b"rolled back", "UNIQ-R"))
        commit = SysFlag.TRANSACTION_COMMIT_TYPE
        return [
            await p.request(end_tx(answer, "UNIQ-R", commit, group="another-group")),
            await p.request(end_tx(answer, "UNIQ-R", commit, tranStateTableOffset="5")),
            await p.request(end_tx(answer, "UNIQ-R", commit, commitLogOffset="1")),
            await p.request(end_tx(answer, "UNIQ-R", SysFlag.TRANSACTION_ROLLBACK_TYPE)),
        ]

    wrong_group, wrong_offset, wrong_record, rollback = run(go())
    assert (wrong_group.code, wrong_group.remark) == (ResponseCode.SYSTEM_ERROR, "The producer group wrong")
    assert (wrong_offset.code, wrong_offset.remark) == (ResponseCode.SYSTEM_ERROR,
                                                        "The transaction state table offset wrong")
    assert (wrong_record.code, wrong_record.remark) == (ResponseCode.SYSTEM_ERROR,
                                                        "Find prepared transaction message failed")
    assert rollback.code == ResponseCode.SUCCESS
    [op] = wait_for(lambda: stored(cluster, OP_TOPIC), DEADLINE_S, "the op record")
    assert op.body == b"0"
    time.sleep(0.3)  # let a check round pass over the rolled back half
    cluster.wait_dispatched()  # anything written by then is in the consume queues
    for q in range(4):
        assert stored(cluster, TOPIC, q) == [], "a rolled back or refused transaction writes nothing there"


def test_an_open_half_message_is_checked_and_the_answer_commits_it(cluster: LocalCluster) -> None:
    p = Producer(cluster)

    async def go() -> None:
        await p.open()
        answer = await p.request(half_send(b"asked about", "UNIQ-K", born_ms=int(time.time() * 1000) - 60_000))
        assert answer.code == ResponseCode.SUCCESS
        p.answer = commit_on_check
        await asyncio.to_thread(wait_for, lambda: stored(cluster, TOPIC, 1), DEADLINE_S,
                                "the message committed on check")

    run(go())
    [check] = p.checks
    h = CheckTransactionStateRequestHeader.from_ext_fields(check.ext_fields)
    halves = stored(cluster, HALF_TOPIC)
    assert len(halves) == 2, "the checked half message was written again, with its check count"
    original, copy = halves
    assert (h.tran_state_table_offset, h.commit_log_offset) == (1, copy.commit_log_offset)
    assert h.msg_id == h.transaction_id == "UNIQ-K" and h.offset_msg_id == copy.msg_id
    assert copy.properties[PropertyName.TRANSACTION_CHECK_TIMES] == "1"
    assert copy.flag == 0 and original.flag == 7, "as 4.9.3's put-back, the copy loses the flag"
    body = decode_record(check.body)
    assert (body.topic, body.queue_id, body.body) == (TOPIC, 1, b"asked about")
    assert (body.queue_offset, body.commit_log_offset) == (1, copy.commit_log_offset)
    assert body.properties[PropertyName.TRANSACTION_CHECK_TIMES] == "1"
    [final] = stored(cluster, TOPIC, 1)
    assert final.prepared_transaction_offset == copy.commit_log_offset
    [op] = wait_for(lambda: stored(cluster, OP_TOPIC), DEADLINE_S, "the op record")
    assert op.body == b"1", "the op record names the copy's queue offset"
    wait_for(lambda: cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0)) == 2,
             DEADLINE_S, "the check offset to pass both half records")
    time.sleep(0.5)
    assert len(p.checks) == 1, "a committed transaction is not checked again"


def test_a_transaction_nobody_answers_goes_to_the_check_max_time_topic(tmp_path: Path) -> None:
    """transactionCheckMax unanswered checks move the half message to TRANS_CHECK_MAX_TIME_TOPIC; mqadmin
    resumeCheckHalfMessage puts it back with its count at 0, and the next check's answer commits it."""
    with LocalCluster(tmp_path / "store", transaction_check_max=2, **FAST_CHECKS) as cluster:
        p = Producer(cluster)

        async def go() -> StoredMessage:
            await p.open()
            old = int(time.time() * 1000) - 60_000
            assert (await p.request(half_send(b"forgotten", "UNIQ-F", born_ms=old))).code == ResponseCode.SUCCESS
            [dead] = await asyncio.to_thread(wait_for, lambda: stored(cluster, CHECK_MAX_TIME_TOPIC),
                                             DEADLINE_S, "the half message given up")
            assert len(p.checks) == 2, "asked transactionCheckMax times"
            assert dead.body == b"forgotten" and dead.properties[PropertyName.TRANSACTION_CHECK_TIMES] == "2"
            assert dead.properties[PropertyName.REAL_TOPIC] == TOPIC
            assert cluster.call(lambda: cluster.broker.topics.get(CHECK_MAX_TIME_TOPIC)) is not None
            assert all(stored(cluster, TOPIC, q) == [] for q in range(4))
            p.answer = commit_on_check
            # the CLI (mqadmin resumeCheckHalfMessage's counterpart), then a bad id through AdminClient
            out = await asyncio.to_thread(cli, "message", "resume-check", "-n", cluster.namesrv_addr,
                                          "-i", dead.msg_id, "--json")
            assert out.returncode == 0, out.stderr
            assert json.loads(out.stdout) == {"msgId": dead.msg_id, "resumed": True}
            async with AdminClient(cluster.namesrv_addr) as admin:
                with pytest.raises(BrokerError, match="Exception was thrown"):
                    await admin.resume_check_half_message(dead.msg_id[:-8] + "7FFFFFFF")
            [final] = await asyncio.to_thread(wait_for, lambda: stored(cluster, TOPIC, 1),
                                              DEADLINE_S, "the resumed message committed")
            return final

        final = run(go())
        assert len(p.checks) == 3
        assert final.body == b"forgotten" and final.properties[PropertyName.TRANSACTION_CHECK_TIMES] == "1"


def test_no_producer_connected_means_no_check_until_one_comes_back(tmp_path: Path) -> None:
    """A half message whose producer group has no connection is passed over (a copy is written with its
    count, as 4.9.3 does) and checked once a producer of the group heartbeats again; the check service's
    offsets survive a restart."""
    store = tmp_path / "store"
    with LocalCluster(store, **FAST_CHECKS) as cluster:
        async def send_and_leave() -> None:
            p = Producer(cluster)
            await p.open(heartbeat=False)
            old = int(time.time() * 1000) - 60_000
            assert (await p.request(half_send(b"orphan", "UNIQ-O", born_ms=old))).code == ResponseCode.SUCCESS
            p.conn.close()

        run(send_and_leave())
        wait_for(lambda: len(stored(cluster, HALF_TOPIC)) >= 2, DEADLINE_S, "a check round over the orphan")
        half_offset = cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0))
        assert half_offset >= 1
    with LocalCluster(store, **FAST_CHECKS) as cluster:
        assert cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0)) >= half_offset
        p = Producer(cluster)

        async def come_back() -> None:
            await p.open()
            await asyncio.to_thread(wait_for, lambda: p.checks, DEADLINE_S, "a check once the producer is back")

        run(come_back())
        h = CheckTransactionStateRequestHeader.from_ext_fields(p.checks[0].ext_fields)
        assert h.msg_id == "UNIQ-O"


def test_a_broker_that_rejects_transactions_stores_nothing(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", reject_transaction_message=True) as cluster:
        async def go() -> RemotingCommand:
            p = Producer(cluster)
            await p.open(heartbeat=False)
            return await p.request(half_send(b"x", "UNIQ-X"))

        answer = run(go())
        assert answer.code == ResponseCode.NO_PERMISSION
        assert answer.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
        cluster.wait_dispatched()
        assert cluster.call(lambda: cluster.broker.store.max_offset(HALF_TOPIC, 0)) == 0


def test_a_producer_set_immunity_does_not_hold_up_the_queue(cluster: LocalCluster) -> None:
    """CHECK_IMMUNITY_TIME_IN_SECONDS: the immune half message is passed over (written again at the end,
    remembering its first queue offset in TRAN_PREPARED_QUEUE_OFFSET) while the one after it is checked;
    once its transaction ends (the op record names the first offset) the copies stop."""
    p = Producer(cluster)
    old = int(time.time() * 1000) - 60_000

    p.answer = commit_on_check  # the plain one's check is answered

    async def go() -> RemotingCommand:
        await p.open()
        immune = await p.request(half_send(b"immune", "UNIQ-I", born_ms=old,
                                           extra={PropertyName.CHECK_IMMUNITY_TIME_IN_SECONDS: "3600"}))
        assert (await p.request(half_send(b"plain", "UNIQ-P", born_ms=old))).code == ResponseCode.SUCCESS
        await asyncio.to_thread(wait_for, lambda: p.checks, DEADLINE_S,
                                "the check of the message after the immune one")
        return immune

    immune = run(go())
    assert [CheckTransactionStateRequestHeader.from_ext_fields(c.ext_fields).msg_id for c in p.checks] == ["UNIQ-P"]
    # the round wrote the immune one's copy before it sent the check, but the half queue is built by dispatch
    def immune_copies() -> list[StoredMessage]:
        found = [m for m in stored(cluster, HALF_TOPIC) if m.uniq_key == "UNIQ-I"]
        return found if len(found) >= 2 else []

    copies = wait_for(immune_copies, DEADLINE_S, "the immune message's copy in the half queue")
    assert copies[1].properties[PropertyName.TRAN_PREPARED_QUEUE_OFFSET] == "0"

    async def commit() -> RemotingCommand:
        await p.open()
        return await p.request(end_tx(immune, "UNIQ-I", SysFlag.TRANSACTION_COMMIT_TYPE))

    assert run(commit()).code == ResponseCode.SUCCESS
    wait_for(lambda: [m for m in stored(cluster, TOPIC, 1) if m.uniq_key == "UNIQ-I"], DEADLINE_S,
             "the immune message committed")
    # a round that ran before the op record was dispatched may still have copied it: count once the check
    # service has read the op record (its op queue offset is past it) and every copy written until then is
    # dispatched
    [op] = wait_for(lambda: [m for m in stored(cluster, OP_TOPIC) if m.body == b"0"], DEADLINE_S,
                    "the immune message's op record")
    wait_for(lambda: cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0)) > op.queue_offset,
             DEADLINE_S, "the check service to read the immune message's op record")
    cluster.wait_dispatched()
    settled = len(stored(cluster, HALF_TOPIC))
    time.sleep(0.6)  # three more rounds
    assert len(stored(cluster, HALF_TOPIC)) == settled, "no copy once the op record names its first offset"


def test_check_offsets_past_the_queue_end_restart_at_the_end(tmp_path: Path) -> None:
    """Check offsets saved past their queue's end (the commitlog's tail lost in a crash after they were
    saved, so the consume queues were cut back) are moved to the end when the broker starts: the half
    message written next is checked, instead of waiting until the queue grows back past the saved offset."""
    store = tmp_path / "store"
    with LocalCluster(store, **FAST_CHECKS) as cluster:
        def save_offsets_past_the_end() -> None:
            cluster.broker.offsets.commit(CHECK_GROUP, HALF_TOPIC, 0, 50)
            cluster.broker.offsets.commit(CHECK_GROUP, OP_TOPIC, 0, 40)

        cluster.call(save_offsets_past_the_end)
    with LocalCluster(store, **FAST_CHECKS) as cluster:
        assert cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0)) == 0
        assert cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0)) == 0
        p = Producer(cluster)

        async def go() -> None:
            await p.open()
            old = int(time.time() * 1000) - 60_000
            answer = await p.request(half_send(b"after the loss", "UNIQ-L", born_ms=old))
            assert answer.code == ResponseCode.SUCCESS
            p.answer = commit_on_check
            await asyncio.to_thread(wait_for, lambda: stored(cluster, TOPIC, 1), DEADLINE_S,
                                    "the half message written after the loss checked and committed")

        run(go())
        assert [m.body for m in stored(cluster, TOPIC, 1)] == [b"after the loss"]
        wait_for(lambda: cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0)) == 2,
                 DEADLINE_S, "the half offset to pass the checked message and its copy")
        wait_for(lambda: cluster.call(lambda: cluster.broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0)) == 1,
                 DEADLINE_S, "the op offset to pass the commit's op record")
