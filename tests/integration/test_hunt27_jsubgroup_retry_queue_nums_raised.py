"""A send-back's %RETRY% queue lies within the queues the group's retry topic has.

Seen with the real 4.9.3 Java push consumer and broker: a group's %RETRY% topic is made with the group's
retryQueueNums (1) when its consumer first heartbeats; ``mqadmin updateSubGroup -q 3`` later leaves that
topic as it is, yet 4.9.3's send-back picks the queue from the group's count alone: of 12 messages the
listener failed once, 9 went to %RETRY% queues 1 and 2, which the topic's route does not list, so no
consumer ever pulled them (only 3 came back, on the Java broker as on ours).  Ours now keeps the queue
within the retry topic's write queues: every message sent back comes back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection, send_ext

from rocketstore.remoting import RequestCode, ResponseCode

GROUP = "hunt27-raised-group"
RETRY = f"%RETRY%{GROUP}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def set_retry_queue_nums(conn: RawConnection, queues: int) -> None:
    body = json.dumps({"groupName": GROUP, "retryQueueNums": queues}).encode()
    answer = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def test_send_backs_stay_within_the_retry_topic_after_retry_queue_nums_was_raised(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("PlainTopic"), b"x")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        offset = str(int(sent.ext_fields["msgId"][-16:], 16))

        def send_back() -> None:
            back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": offset, "group": GROUP, "delayLevel": "1", "originMsgId": "x",
                "originTopic": "PlainTopic", "maxReconsumeTimes": "16"})
            assert back.code == ResponseCode.SUCCESS, back.remark

        set_retry_queue_nums(conn, 1)
        send_back()  # makes the retry topic, with one queue
        made = cluster.call(lambda: cluster.broker.topics.get(RETRY))
        assert made is not None and made.write_queue_nums == made.read_queue_nums == 1

        set_retry_queue_nums(conn, 16)  # the topic keeps its one queue
        for _ in range(30):
            send_back()
        # level 1: each comes out of SCHEDULE_TOPIC_XXXX into %RETRY% after 1 s
        store = cluster.broker.store
        cluster.wait_until(lambda: sum(store.max_offset(RETRY, q) for q in range(16)) == 31, 15.0,
                           "every send-back delivered to the retry topic")
        assert cluster.call(lambda: store.max_offset(RETRY, 0)) == 31, "a retry went to a queue nobody pulls"
        tc = cluster.call(lambda: cluster.broker.topics.get(RETRY))
        assert tc is not None and tc.write_queue_nums == 1
    finally:
        conn.close()
