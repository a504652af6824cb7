"""A reply (SEND_REPLY_MESSAGE_V2) is stored as a plain message whatever sysFlag its header carries, as
4.9.3's ReplyMessageProcessor stores it: it never copies the header's sysFlag into the record (stored 0), so
a reply flagged as a transaction's half or rollback is stored visible in the reply topic, its DELAY is read
and honoured, and a DELAY that is no Java int fails the reply.  Ours stored such a reply as a half (in no
consume queue, so no consumer of the reply topic ever saw it) and skipped its DELAY.  The compressed bit is
kept on purpose (see broker/reply.py).  The same raw frames went to the real 4.9.3 broker; real name server
and broker here."""

from __future__ import annotations

import zlib
from pathlib import Path

from local_cluster import LocalCluster, run_within, stored_messages
from test_request_reply import CLUSTER, REPLY_TOPIC

from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
GONE = "CORRELATION_ID\x01c-1\x02REPLY_TO_CLIENT\x0110.0.0.9@gone\x02MSG_TYPE\x01reply\x02"

# captured from 4.9.3 (its broker answering these frames; the requester is gone, so each answer is
# SYSTEM_ERROR "push reply message fail, ..." and what counts is what was stored):
#   sysFlag 4 (half), body "txprep"   -> stored in the reply topic, record sysFlag 0, store size 187
#   sysFlag 12 (rollback), DELAY=2    -> stored in SCHEDULE_TOPIC_XXXX queue 1, REAL_TOPIC the reply topic,
#                                        record sysFlag 0
#   sysFlag 4, DELAY=abc              -> SYSTEM_ERROR 'java.lang.NumberFormatException: For input string:
#                                        "abc", java.base/...' (ours leaves the stack frame out), none stored
#   sysFlag 2 (multi tags)            -> record sysFlag 0
#   sysFlag 1 (compressed)            -> record sysFlag 0 (ours keeps the bit: a deliberate difference)
JAVA_HALF_STORE_SIZE = 187
DEFLATED = zlib.compress(b"z" * 5000)


def _reply(sys_flag: int, body: bytes, extra: str = "") -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="pg1", topic=REPLY_TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=sys_flag, born_timestamp=1700000000123, flag=0, properties=extra + GONE,
        reconsume_times=0, unit_mode=False, batch=False)
    return RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext_fields_v2(), body)


def test_a_reply_is_stored_as_a_plain_message_whatever_its_sys_flag(tmp_path: Path) -> None:
    # delay level 2 made 2 h (5 s by default): the delayed reply must still be in SCHEDULE_TOPIC_XXXX, not
    # delivered to the reply topic, when the stores are read, however slow the machine
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER,
                      store_overrides={"message_delay_level": "1s 2h"}) as cluster:
        frames = [_reply(SysFlag.TRANSACTION_PREPARED_TYPE, b"txprep"),
                  _reply(SysFlag.TRANSACTION_ROLLBACK_TYPE, b"txrb-delay", "DELAY\x012\x02"),
                  _reply(SysFlag.TRANSACTION_PREPARED_TYPE, b"txprep-badd", "DELAY\x01abc\x02"),
                  _reply(SysFlag.MULTI_TAGS, b"multi"),
                  _reply(SysFlag.COMPRESSED, DEFLATED)]

        async def go() -> list[RemotingCommand]:
            pool = ConnectionPool()
            try:
                return [await pool.request(cluster.broker_addr, frame, 10) for frame in frames]
            finally:
                await pool.close()

        answers = run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        replies = {m.body: m for m in stored_messages(cluster, REPLY_TOPIC, 1)}
        delayed = stored_messages(cluster, SCHEDULE_TOPIC, 2)

    half, rollback, bad_delay, multi, compressed = answers
    assert half.code == rollback.code == multi.code == compressed.code == ResponseCode.SYSTEM_ERROR
    assert half.remark == "push reply message fail, channel of <10.0.0.9@gone> not found."
    # the half-flagged reply: stored visible, as a plain record
    stored = replies[b"txprep"]
    assert stored.sys_flag == 0
    assert stored.store_size == JAVA_HALF_STORE_SIZE
    assert half.ext_fields["msgId"] == stored.msg_id
    assert replies[b"multi"].sys_flag == 0
    # the rollback-flagged one with DELAY=2: delayed, as any message with a delay level
    [later] = [m for m in delayed if m.body == b"txrb-delay"]
    assert later.queue_id == 1 and later.sys_flag == 0
    assert later.properties["REAL_TOPIC"] == REPLY_TOPIC
    assert b"txrb-delay" not in replies
    # a DELAY no Java int: the store's parseInt fails the reply, half-flagged or not
    assert bad_delay.code == ResponseCode.SYSTEM_ERROR
    assert bad_delay.remark.startswith('java.lang.NumberFormatException: For input string: "abc"')
    assert b"txprep-badd" not in replies
    # (deliberate) the compressed bit stays, so the stored body reads back whole
    assert replies[DEFLATED].sys_flag & SysFlag.COMPRESSED
