"""A send to SCHEDULE_TOPIC_XXXX, the one topic 4.9.3 lets no producer send to, is refused by the broker as
4.9.3's msgCheck refuses it: NO_PERMISSION with TopicValidator.isNotAllowedSendTopic's remark, word for
word ("Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.", the text the 4.9.3 client's
Validators gives too), for a single send, a batch and a reply, and nothing reaches the store: the commit
log does not grow, and a message sent next on the same connection is stored and readable.  Raw frames
(raw_frames.RawConnection), as a client that skips its own check would send them."""

from __future__ import annotations

import pytest
from local_cluster import LocalCluster, stored_messages
from raw_frames import RawConnection
from test_bad_input import send_ext

from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.remoting import RequestCode, ResponseCode

SCHEDULE = "SCHEDULE_TOPIC_XXXX"
NEIGHBOUR = "EdgesNeighbour"


@pytest.mark.parametrize("code, batch", [
    pytest.param(RequestCode.SEND_MESSAGE_V2, False, id="send"),
    pytest.param(RequestCode.SEND_BATCH_MESSAGE, True, id="batch"),
    pytest.param(RequestCode.SEND_REPLY_MESSAGE_V2, False, id="reply"),
])
def test_a_send_to_the_schedule_topic_is_refused_with_4_9_3s_remark_and_stores_nothing(
        cluster: LocalCluster, conn: RawConnection, code: int, batch: bool) -> None:
    cluster.create_topic(NEIGHBOUR, queues=1)
    before = cluster.call(lambda: cluster.broker.store.max_commit_log_offset)
    if batch:
        body = encode_batch([BatchEntry(b"one", "TAGS\x01t"), BatchEntry(b"two", "")])
        answer = conn.request(code, send_ext(SCHEDULE, m="true"), body)
    else:
        answer = conn.request(code, send_ext(SCHEDULE), b"delayed?")
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION,
                                            f"Sending message to topic[{SCHEDULE}] is forbidden.")
    assert cluster.call(lambda: cluster.broker.store.max_commit_log_offset) == before

    sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(NEIGHBOUR), b"neighbour")
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, NEIGHBOUR, queues=1)] == [b"neighbour"]
