"""A send-back's retry queue is one that consumers read, whatever an admin made of the %RETRY% topic.

Consumers pull a topic's read queues only.  A %RETRY% topic edited to more write than read queues (here 4
and 1) had send-backs spread over its 4 write queues (since session 27 the pick stays within the write
queues): 3 in 4 retries landed where no consumer pulls.  Now the pick is within min(write, read) queues; a
topic left no write queue takes retries in its read queues (nothing is lost, as in 4.9.3); a topic left no
read queue refuses a retry with SYSTEM_ERROR, so the client keeps the message, while a dead letter still
goes to %DLQ%.  Deliberately unlike 4.9.3, which picks among retryQueueNums queues whatever the topic has
and answers SUCCESS: checked against its broker with the same edits, retryQueueNums 4 and 1 read / 4 write
queues spread 12 retries 4/3/2/3 over queues 0-3, and 0 read queues took all 12 into a queue never read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection, send_ext

from rocketstore.remoting import RequestCode, ResponseCode


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_retries_go_to_queues_that_are_read(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("PlainTopic"), b"x")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        offset = str(int(sent.ext_fields["msgId"][-16:], 16))

        def group(name: str, retry_queue_nums: int, read: int, write: int) -> str:
            made = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json.dumps(
                {"groupName": name, "retryQueueNums": retry_queue_nums}).encode())
            assert made.code == ResponseCode.SUCCESS, made.remark
            edited = conn.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": f"%RETRY%{name}", "defaultTopic": "TBW102", "readQueueNums": str(read),
                "writeQueueNums": str(write), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                "order": "false"})
            assert edited.code == ResponseCode.SUCCESS, edited.remark
            return name

        def send_back(name: str, level: str = "1") -> tuple[int, str | None]:
            back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": offset, "group": name, "delayLevel": level, "originMsgId": "x",
                "originTopic": "PlainTopic", "maxReconsumeTimes": "16"})
            return back.code, back.remark

        more_write = group("more-write", 4, 1, 4)
        no_write = group("no-write", 2, 2, 0)
        no_read = group("no-read", 1, 0, 1)
        for _ in range(12):
            assert send_back(more_write) == (ResponseCode.SUCCESS, None)
            assert send_back(no_write) == (ResponseCode.SUCCESS, None)
        assert send_back(no_read) == (ResponseCode.SYSTEM_ERROR, "the topic[%RETRY%no-read] has no read queue: "
                                      "no consumer would ever get the retry")
        assert send_back(no_read, "-1") == (ResponseCode.SUCCESS, None)  # a dead letter: to %DLQ%

        # level 1: each comes out of SCHEDULE_TOPIC_XXXX into %RETRY% after 1 s
        store = cluster.broker.store

        def on_loop(name: str) -> list[int]:
            return [store.max_offset(f"%RETRY%{name}", q) for q in range(4)]

        def counts(name: str) -> list[int]:
            return cluster.call(lambda: on_loop(name))

        cluster.wait_until(lambda: sum(on_loop(more_write)) + sum(on_loop(no_write)) == 24, 15.0,
                           "every send-back delivered to its retry topic")
        assert counts(more_write) == [12, 0, 0, 0], "a retry went to a queue nobody pulls"
        assert sum(counts(no_write)[:2]) == 12
        cluster.wait_dispatched()
        assert counts(no_read) == [0, 0, 0, 0]
        assert cluster.call(lambda: store.max_offset("%DLQ%no-read", 0)) == 1
    finally:
        conn.close()


def test_retries_sent_to_the_retry_topic_go_to_queues_that_are_read(cluster: LocalCluster) -> None:
    """The same for a retry a consumer sends through its producer (its fallback when the send-back fails):
    the queue it names past the read queues is replaced by a read one (the answer names the queue and
    offset it is stored at), and with no read queue the send is refused.  4.9.3 stored such sends in
    the queue named, SUCCESS (checked: 1 read / 4 write queues, one send to each, left 3 unread; 0 read / 1
    write stored it unread)."""
    conn = RawConnection(cluster.broker_addr)
    try:
        for name, read, write in (("send-more-write", 1, 4), ("send-no-read", 0, 1)):
            edited = conn.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": f"%RETRY%{name}", "defaultTopic": "TBW102", "readQueueNums": str(read),
                "writeQueueNums": str(write), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                "order": "false"})
            assert edited.code == ResponseCode.SUCCESS, edited.remark
        for queue_id in range(4):
            sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("%RETRY%send-more-write", queue_id, j="1"),
                                b"retry")
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            # all in queue 0, the one read queue, at offsets 0..3: the answer names where each is
            assert (sent.ext_fields["queueId"], sent.ext_fields["queueOffset"]) == ("0", str(queue_id))
        refused = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("%RETRY%send-no-read", 0, j="1"), b"retry")
        assert (refused.code, refused.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "the topic[%RETRY%send-no-read] has no read queue: no consumer would ever get the retry")
        cluster.wait_dispatched()
        store = cluster.broker.store
        assert cluster.call(lambda: [store.max_offset("%RETRY%send-more-write", q) for q in range(4)]) == [4, 0, 0, 0]
        assert cluster.call(lambda: store.max_offset("%RETRY%send-no-read", 0)) == 0
    finally:
        conn.close()
