"""Compressed message bodies from the wire inflate within a bound (rocketstore.message.inflate): a body
flagged COMPRESSED that would inflate past MAX_INFLATED_BODY_BYTES (a zip bomb a broker or a replier hands
over) is treated as a body that does not inflate, never inflated whole; a normal compressed body gives what
zlib.decompress gives.  Real name server and broker; the bodies go in as raw SEND_MESSAGE_V2 /
SEND_REPLY_MESSAGE_V2 frames, as a misbehaving client would send them."""

from __future__ import annotations

import asyncio
import time
import zlib
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, stored_request_reply_properties
from test_request_reply import CLUSTER, REPLY_TOPIC

from rocketstore.client import PullConsumer, PullResult, ReplyMessage, RequestProducer
from rocketstore.client.route import MessageQueue
from rocketstore.message.inflate import MAX_INFLATED_BODY_BYTES, inflate_body
from rocketstore.message.properties import encode_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0
#: one byte more than a body may inflate to, deflated: about 64 KiB on the wire
BOMB = zlib.compress(bytes(MAX_INFLATED_BODY_BYTES + 1), 9)


def test_inflate_body_gives_what_zlib_gives_and_refuses_what_inflates_too_far() -> None:
    for raw in (b"", b"x", bytes(range(256)) * 40, b"a" * 4096 + b"tail"):
        packed = zlib.compress(raw)
        assert inflate_body(packed) == zlib.decompress(packed) == raw
        assert inflate_body(packed + b"after the stream") == raw  # trailing bytes ignored, as zlib.decompress
        assert inflate_body(packed, max_bytes=len(raw)) == raw  # exactly the bound is fine
    with pytest.raises(zlib.error, match="inflates past 4096"):
        inflate_body(zlib.compress(b"a" * 4097), max_bytes=4096)
    with pytest.raises(zlib.error, match=f"inflates past {MAX_INFLATED_BODY_BYTES}"):
        inflate_body(BOMB)
    assert inflate_body(b"") == b""  # hunt 22: zero bytes are zero bytes, as 4.9.3's UtilAll.uncompress
    for broken in (b"not zlib at all", zlib.compress(b"a" * 1000)[:-5]):
        with pytest.raises(zlib.error):
            zlib.decompress(broken)
        with pytest.raises(zlib.error):
            inflate_body(broken)


def _raw_send(topic: str, body: bytes, properties: dict[str, str], *, reply: bool = False) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="hunt19-raw", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=SysFlag.COMPRESSED, born_timestamp=int(time.time() * 1000), flag=0,
        properties=encode_properties(properties), reconsume_times=0, unit_mode=False, batch=False)
    code = RequestCode.SEND_REPLY_MESSAGE_V2 if reply else RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, header.to_ext_fields_v2(), body)


def test_a_pulled_compressed_body_inflating_past_the_bound_is_undecodable(cluster: LocalCluster) -> None:
    topic = "Hunt19BombPull"
    cluster.create_topic(topic, queues=1)
    fine = zlib.compress(b"hello " * 2000)

    async def go() -> tuple[list[bytes], PullResult]:
        pool = ConnectionPool()
        try:
            for body in (fine, BOMB):
                answer = await pool.request(cluster.broker_addr, _raw_send(topic, body, {"WAIT": "true"}), 10)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
        finally:
            await pool.close()
        cluster.wait_dispatched()
        consumer = PullConsumer(cluster.namesrv_addr, "hunt19-bomb-pull")
        try:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            first = await consumer.pull(mq, 0, 1)
            return [m.body for m in first.messages], await consumer.pull(mq, 1, 1)
        finally:
            await consumer.close()

    bodies, bomb = run_within(go, TEST_TIMEOUT_S)
    assert bodies == [b"hello " * 2000]  # a normal compressed body comes inflated, as before
    # held apart as a body that does not inflate (hunt 20: the pull goes on past it), never inflated whole
    assert bomb.messages == [], "the bomb was inflated"
    assert [u.message.body for u in bomb.undecodable] == [BOMB]
    assert f"inflates past {MAX_INFLATED_BODY_BYTES}" in bomb.undecodable[0].reason


def test_a_reply_whose_body_inflates_past_the_bound_is_delivered_as_it_came(tmp_path: Path) -> None:
    topic = "Hunt19BombReply"
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as cluster:
        cluster.create_topic(topic, queues=1)

        async def go() -> tuple[ReplyMessage, RemotingCommand]:
            async with RequestProducer(cluster.namesrv_addr, "hunt19-rpc-client") as requester:
                waiting = asyncio.ensure_future(requester.request(topic, b"bomb?", timeout_s=30.0))
                props = await stored_request_reply_properties(cluster, topic)
                pool = ConnectionPool()
                try:
                    answer = await pool.request(cluster.broker_addr,
                                                _raw_send(REPLY_TOPIC, BOMB, props, reply=True), 10)
                finally:
                    await pool.close()
                return await waiting, answer

        reply, answer = run_within(go, TEST_TIMEOUT_S)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert reply.body == BOMB  # as a body that does not uncompress: logged and delivered as it came
