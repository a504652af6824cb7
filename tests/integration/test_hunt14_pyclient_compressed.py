"""A message whose body a Java or C++ producer compressed (sysFlag bit 0, zlib, as they do for bodies over
4 KiB) reaches a push consumer's handler inflated, both by pulling and by CONSUME_MESSAGE_DIRECTLY (as
4.9.3's ClientRemotingProcessor decodes it with MessageDecoder.decode, which inflates)."""

from __future__ import annotations

import time
import zlib

from local_cluster import LocalCluster
from test_python_push_consumer import FAST, arun, create_topic, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.producer import new_uniq_key
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import CMResult
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TOPIC = "Hunt14CompressedT"
BODY = b"a compressible body " * 1000  # 20 000 bytes, over the 4 KiB a Java / C++ producer compresses from


async def send_compressed(broker_addr: str) -> str:
    """SEND_MESSAGE_V2 as a Java / C++ producer sends a large body: zlib-compressed, sysFlag 1."""
    header = SendMessageRequestHeader(
        producer_group="hunt14-java-like", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=1, born_timestamp=int(time.time() * 1000), flag=0,
        properties=encode_properties({PropertyName.UNIQ_KEY: new_uniq_key(), PropertyName.WAIT: "true"}),
        reconsume_times=0, unit_mode=False, batch=False)
    pool = ConnectionPool()
    try:
        response = await pool.request(broker_addr, RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, header.to_ext_fields_v2(), zlib.compress(BODY, 5)), 5)
    finally:
        await pool.close()
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.ext_fields["msgId"]


def test_a_compressed_body_reaches_the_handler_inflated_pulled_and_consumed_directly(cluster: LocalCluster) -> None:
    seen: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, TOPIC, 1)
        async with PushConsumer(cluster.namesrv_addr, "hunt14-compressed-group", {TOPIC: "*"}, handle,
                                **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment(TOPIC)) == 1, 20, "the queue assigned")
            offset_msg_id = await send_compressed(cluster.broker_addr)
            await eventually(lambda: len(seen) == 1, 20, "the message pulled")
            assert seen == [BODY]
            result = await admin.consume_message_directly("hunt14-compressed-group", consumer.client_id,
                                                          offset_msg_id)
            assert result.consume_result == CMResult.SUCCESS
            assert seen == [BODY, BODY]

    arun(go)
