"""A SEND_MESSAGE whose properties carry a lone surrogate (a JSON header may escape one as ``\\ud800``) is
stored by 4.9.3: String.getBytes(UTF_8) writes ``?`` for each unpaired surrogate.  Ours refused it with
MESSAGE_ILLEGAL (13).  Real name server and broker; the send goes in as a raw frame."""

from __future__ import annotations

import json
import socket
import struct

from local_cluster import LocalCluster, run_within

from rocketstore.client import PullConsumer, PullResult
from rocketstore.client.route import MessageQueue
from rocketstore.remoting import FrameDecoder, RemotingCommand, RequestCode, ResponseCode

TEST_TIMEOUT_S = 60.0
# the properties sent (names and values with unpaired surrogates, a real pair kept) and what 4.9.3 stored,
# captured from a 4.9.3 broker's commitlog for this very header
SENT = "k\udc00\x01a\ud800b\x02k2\x01\ud83d\ude00\x02"
JAVA_STORED = b"k?\x01a?b\x02k2\x01\xf0\x9f\x98\x80\x02CLUSTER\x01DefaultCluster"


def _send(address: str, topic: str) -> RemotingCommand:
    ext = {"producerGroup": "pg1", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
           "queueId": "0", "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0", "properties": SENT,
           "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}
    header = json.dumps({"code": RequestCode.SEND_MESSAGE, "extFields": ext, "flag": 0, "language": "JAVA",
                         "opaque": 1, "version": 395}).encode("ascii")
    body = b"surr"
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TEST_TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">iI", 4 + len(header) + len(body), len(header)) + header + body)
        decoder = FrameDecoder()
        while True:
            answer = decoder.next_command()
            if answer is not None:
                return answer
            data = sock.recv(65536)
            assert data, "the broker closed the connection instead of answering"
            decoder.feed(data)


def test_a_lone_surrogate_in_properties_is_stored_as_a_question_mark(cluster: LocalCluster) -> None:
    topic = "Hunt24LoneSurrogate"
    cluster.create_topic(topic, queues=1)
    answer = _send(cluster.broker_addr, topic)
    # 4.9.3 answered SUCCESS (code 0, no remark)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    cluster.wait_dispatched()

    async def pull() -> PullResult:
        consumer = PullConsumer(cluster.namesrv_addr, "hunt24-lone-surrogate")
        try:
            return await consumer.pull(MessageQueue(topic, cluster.broker_name, 0), 0, 32)
        finally:
            await consumer.close()

    result = run_within(pull, TEST_TIMEOUT_S)
    [message] = result.messages
    assert message.body == b"surr"
    expected = dict(pair.split("\x01") for pair in JAVA_STORED.decode().split("\x02"))
    assert {k: v for k, v in message.properties.items() if k in expected} == expected
