"""A message flagged COMPRESSED whose body is empty (a raw client's send: no RocketMQ producer compresses an
empty body) reaches its consumer with no body, as 4.9.3's clients deliver it: MessageDecoder inflates only
a body of one byte or more and UtilAll.uncompress of zero bytes is zero bytes.  It was held apart as a body
that does not inflate (skipped by the pull loops, a failed Spark read).  Real name server and broker; the
message goes in as a raw SEND_MESSAGE_V2 frame."""

from __future__ import annotations

import zlib

from local_cluster import LocalCluster, run_within
from test_hunt19_clientlimits_inflate import _raw_send

from rocketstore.client import PullConsumer, PullResult
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0


def test_a_pulled_empty_body_flagged_compressed_is_delivered_empty(cluster: LocalCluster) -> None:
    topic = "Hunt22EmptyCompressed"
    cluster.create_topic(topic, queues=1)
    after = zlib.compress(b"after " * 1000)

    async def go() -> PullResult:
        pool = ConnectionPool()
        try:
            for body in (b"", after):
                answer = await pool.request(cluster.broker_addr, _raw_send(topic, body, {"WAIT": "true"}), 10)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
        finally:
            await pool.close()
        cluster.wait_dispatched()
        consumer = PullConsumer(cluster.namesrv_addr, "hunt22-empty-compressed")
        try:
            return await consumer.pull(MessageQueue(topic, cluster.broker_name, 0), 0, 32)
        finally:
            await consumer.close()

    result = run_within(go, TEST_TIMEOUT_S)
    assert [u.describe() for u in result.undecodable] == []
    assert [(m.queue_offset, m.body) for m in result.messages] == [(0, b""), (1, b"after " * 1000)]
