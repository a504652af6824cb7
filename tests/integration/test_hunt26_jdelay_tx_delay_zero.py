"""A transactional message with DELAY=0: the Java client's setDelayTimeLevel(0) puts the property and its
sendMessageInTransaction clears DELAY only for a level other than 0, so the send carries DELAY=0.  4.9.3
keeps it in the half record and in the committed one (a level of 0 or less schedules nothing), and the
consumer sees DELAY=0 among the properties.  We dropped every DELAY from a half message.  A level above 0
(the C++ client sends one) is still dropped: 4.9.3 would park that half message in SCHEDULE_TOPIC_XXXX and
lose it.  Raw SEND_MESSAGE_V2 / END_TRANSACTION frames on a real broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, wait_stored
from raw_frames import RawConnection

from rocketstore.client.admin import AdminClient
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode

TOPIC = "Hunt26TxDelay"
GROUP = "tpg-hunt26"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
UNIQ = "FD00000000000000000000000000000237DC5FFD2B278D91A6870002"

# The properties of the half record and of the committed record a 4.9.3 broker wrote for a Java 4.9.3
# TransactionMQProducer's message with setDelayTimeLevel(0), committed at once (captured from 4.9.3's
# commitlog; CLUSTER and the queue id are this test's):
JAVA_RECORD_PROPERTIES = [
    ("REAL_TOPIC", TOPIC), ("KEYS", "L0"), ("TRAN_MSG", "true"), ("UNIQ_KEY", UNIQ),
    ("CLUSTER", "DefaultCluster"), ("DELAY", "0"), ("PGROUP", GROUP), ("WAIT", "true"), ("TAGS", "T"),
    ("REAL_QID", "0"),
]


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        async def create() -> None:
            async with AdminClient(c.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, broker_addr=c.broker_addr, read_queue_nums=1, write_queue_nums=1)

        c.run(create())
        yield c


def _send_half(conn: RawConnection, delay: str) -> Any:
    # the properties as the Java client sends them (its own order; the broker rebuilds the half record's)
    props = {PropertyName.KEYS: "L0", PropertyName.TRAN_MSG: "true", PropertyName.UNIQ_KEY: UNIQ,
             PropertyName.DELAY: delay, PropertyName.WAIT: "true", PropertyName.PGROUP: GROUP,
             PropertyName.TAGS: "T"}
    ext = {"a": GROUP, "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": str(SysFlag.TRANSACTION_PREPARED_TYPE),
           "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0", "k": "false",
           "m": "false"}
    return conn.request(RequestCode.SEND_MESSAGE_V2, ext, b"b0")


def _commit(conn: RawConnection, answer: Any) -> Any:
    _, commit_log_offset = decode_offset_message_id(answer.ext_fields["msgId"])
    ext = {"producerGroup": GROUP, "tranStateTableOffset": answer.ext_fields["queueOffset"],
           "commitLogOffset": str(commit_log_offset), "commitOrRollback": str(SysFlag.TRANSACTION_COMMIT_TYPE),
           "fromTransactionCheck": "false", "msgId": UNIQ, "transactionId": UNIQ}
    return conn.request(RequestCode.END_TRANSACTION, ext)


def _send_half_and_commit(cluster: LocalCluster, delay: str) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        half = _send_half(conn, delay)
        assert half.code == ResponseCode.SUCCESS, half.remark
        committed = _commit(conn, half)
        assert committed.code == ResponseCode.SUCCESS, committed.remark
    finally:
        conn.close()


def test_delay_zero_stays_in_the_half_and_the_committed_record(cluster: LocalCluster) -> None:
    _send_half_and_commit(cluster, "0")
    (stored_half,) = wait_stored(cluster, HALF_TOPIC, 1, "the half message", queues=1)
    (final,) = wait_stored(cluster, TOPIC, 1, "the committed message", queues=1)
    assert list(stored_half.properties.items()) == JAVA_RECORD_PROPERTIES
    assert list(final.properties.items()) == JAVA_RECORD_PROPERTIES


def test_a_delay_level_above_zero_is_still_dropped(cluster: LocalCluster) -> None:
    _send_half_and_commit(cluster, "2")
    (final,) = wait_stored(cluster, TOPIC, 1, "the committed message", queues=1)
    assert PropertyName.DELAY not in final.properties
    assert final.body == b"b0"
