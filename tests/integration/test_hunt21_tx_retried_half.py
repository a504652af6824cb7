"""Which sends a broker stores as half messages: a single message whose properties say TRAN_MSG=true,
except a retried one (reconsumeTimes > 0) with a delay level (a committed message keeps TRAN_MSG in its
stored properties, and a Java client before 4.6.1 resends it so: it was parked in the half topic, where no
consumer would see it again).  The exception is 5.0's, and 4.9.3's unused sendMessage's: 4.9.3's live
asyncSendMessage has none, and such a resend was lost there (scheduled into the half topic, then dropped).
A batch's header properties are not looked at, as 4.9.3's asyncSendBatchMessage (it was refused).  Raw
SEND_MESSAGE_V2 frames on a real broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, stored_messages
from raw_frames import RawConnection

from rocketstore.client.admin import AdminClient
from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.message.system_topics import SCHEDULE_TOPIC
from rocketstore.remoting.codes import RequestCode, ResponseCode

TOPIC = "Hunt21RetriedHalf"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        async def create() -> None:
            async with AdminClient(c.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, broker_addr=c.broker_addr, read_queue_nums=1, write_queue_nums=1)

        c.run(create())
        yield c


def _send(conn: RawConnection, body: bytes, props: dict[str, str], *, reconsume_times: int = 0,
          batch: bool = False) -> Any:
    ext = {"a": "hunt21-retried-half", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
           "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": str(reconsume_times),
           "k": "false", "m": "true" if batch else "false"}
    return conn.request(RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2, ext, body)


def test_a_retried_transactional_message_with_a_delay_level_is_no_half_message(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        half = _send(conn, b"half", {PropertyName.TRAN_MSG: "true", PropertyName.PGROUP: "g"})
        retried = _send(conn, b"retried", {PropertyName.TRAN_MSG: "true", PropertyName.DELAY: "1"},
                        reconsume_times=1)
        # reconsumeTimes without a delay level: still a half message, as in 4.9.3
        undelayed = _send(conn, b"undelayed", {PropertyName.TRAN_MSG: "true", PropertyName.PGROUP: "g"},
                          reconsume_times=1)
        entry = BatchEntry(b"in-batch", encode_properties({PropertyName.UNIQ_KEY: "HUNT21BATCHENTRY"}))
        batch = _send(conn, encode_batch([entry]), {PropertyName.TRAN_MSG: "true"}, batch=True)
    finally:
        conn.close()
    assert [a.code for a in (half, retried, undelayed, batch)] == [ResponseCode.SUCCESS] * 4, \
        [(a.code, a.remark) for a in (half, retried, undelayed, batch)]
    cluster.wait_dispatched()
    assert sorted(m.body for m in stored_messages(cluster, HALF_TOPIC, 1)) == [b"half", b"undelayed"]
    scheduled = stored_messages(cluster, SCHEDULE_TOPIC, 1)  # delay level 1: queue 0
    assert [(m.body, m.properties[PropertyName.REAL_TOPIC]) for m in scheduled] == [(b"retried", TOPIC)]
    assert [m.body for m in stored_messages(cluster, TOPIC, 1)] == [b"in-batch"]
