"""A send to a queue id the topic does not have, as 4.9.3's broker answers it (AbstractSendMessageProcessor.
msgCheck): a queue id at or past max(writeQueueNums, readQueueNums) is SYSTEM_ERROR with the remark
``request queueId[n] is illegal, <TopicConfig.toString()> Producer: <ip:port>``; one below readQueueNums but
at or past writeQueueNums is stored in that queue; a negative one goes to a random writable queue.  Java's
send(msg, mq) does not check the queue against the route, so that answer is what a Java producer sees.
Raw SEND_MESSAGE_V2 frames on a real broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, stored_messages
from raw_frames import RawConnection

from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.remoting.codes import RequestCode, ResponseCode

TOPIC = "Hunt16QueueIds"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        async def create() -> None:
            async with AdminClient(c.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, broker_addr=c.broker_addr, read_queue_nums=4, write_queue_nums=2)

        c.run(create())
        yield c


def send_frame(conn: RawConnection, queue_id: int, body: bytes) -> Any:
    props = encode_properties({PropertyName.UNIQ_KEY: f"HUNT16QUEUE{queue_id & 0xFF:02X}", PropertyName.WAIT: "true"})
    ext = {"a": "hunt16-queue-raw", "b": TOPIC, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
           "g": str(int(time.time() * 1000)), "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}
    return conn.request(RequestCode.SEND_MESSAGE_V2, ext, body)


def test_the_broker_answers_a_queue_id_past_the_topic_as_4_9_3(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        host, port = conn.sock.getsockname()[:2]
        answers = {queue_id: send_frame(conn, queue_id, f"q{queue_id}".encode()) for queue_id in (4, 9, 3, -1)}
    finally:
        conn.close()
    config = (f"TopicConfig [topicName={TOPIC}, readQueueNums=4, writeQueueNums=2, perm=RW-, "
              "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]")
    for queue_id in (4, 9):
        assert (answers[queue_id].code, answers[queue_id].remark) == (
            ResponseCode.SYSTEM_ERROR, f"request queueId[{queue_id}] is illegal, {config} Producer: {host}:{port}")
    # below readQueueNums: taken, into that very queue
    assert answers[3].code == ResponseCode.SUCCESS and answers[3].ext_fields["queueId"] == "3"
    # negative: a writable queue picked by the broker
    assert answers[-1].code == ResponseCode.SUCCESS and answers[-1].ext_fields["queueId"] in ("0", "1")
    cluster.wait_dispatched()
    stored = {m.body: m.queue_id for m in stored_messages(cluster, TOPIC, 4)}
    assert stored == {b"q3": 3, b"q-1": int(answers[-1].ext_fields["queueId"])}
