"""Replies as 4.9.3 passes them on.  The broker's answer to a reply it could neither push nor store
(ReplyMessageProcessor: handlePushReplyResult fills msgId / queueId / queueOffset ("0", the queue, 0)
only when the push succeeded, handlePutMessageResult only when the store took the reply; with neither the
header has none of them).  The requester's handling of a pushed reply whose body is flagged compressed but
does not uncompress (ClientRemotingProcessor.receiveReplyMessage logs it and delivers the body as it came).
Real name server and broker, raw reply frames."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from local_cluster import LocalCluster, run_within, stored_messages, stored_request_reply_properties
from test_request_reply import CLUSTER, REPLY_TOPIC, _raw_reply

from rocketstore.client import Producer, ReplyMessage, RequestProducer
from rocketstore.message.properties import encode_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0


def test_a_reply_neither_pushed_nor_stored_is_answered_without_a_message_id(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER,
                      store_reply_message_enable=False) as cluster:
        async def go() -> RemotingCommand:
            async with Producer(cluster.namesrv_addr, "rpc-replier") as replier:
                pool = ConnectionPool()
                try:
                    return await pool.request(cluster.broker_addr, _raw_reply(
                        replier, {"CORRELATION_ID": "c-1", "REPLY_TO_CLIENT": "10.0.0.9@gone", "TTL": "3000"},
                        b"to a requester that left"), 10)
                finally:
                    await pool.close()

        answer = run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        assert stored_messages(cluster, REPLY_TOPIC, 1) == []
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "push reply message fail, channel of <10.0.0.9@gone> not found."
    assert not {"msgId", "queueId", "queueOffset"} & answer.ext_fields.keys(), answer.ext_fields
    assert answer.ext_fields["MSG_REGION"] == "DefaultRegion" and answer.ext_fields["TRACE_ON"] == "true"


def test_a_reply_whose_compressed_body_does_not_uncompress_is_delivered_as_it_came(tmp_path: Path) -> None:
    topic = "RpcBadZipTopic"
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as cluster:
        cluster.create_topic(topic, queues=1)

        async def go() -> tuple[ReplyMessage, RemotingCommand]:
            async with RequestProducer(cluster.namesrv_addr, "rpc-client") as requester, \
                    Producer(cluster.namesrv_addr, "rpc-replier") as replier:
                waiting = asyncio.ensure_future(requester.request(topic, b"zip?", timeout_s=30.0))
                props = await stored_request_reply_properties(cluster, topic)
                header = SendMessageRequestHeader(
                    producer_group=replier.group, topic=REPLY_TOPIC, default_topic="TBW102",
                    default_topic_queue_nums=4, queue_id=0, sys_flag=SysFlag.COMPRESSED,
                    born_timestamp=int(time.time() * 1000), flag=0, properties=encode_properties(props),
                    reconsume_times=0, unit_mode=False, batch=False)
                pool = ConnectionPool()
                try:
                    answer = await pool.request(cluster.broker_addr, RemotingCommand.request(
                        RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext_fields_v2(), b"not zlib at all"), 10)
                finally:
                    await pool.close()
                return await waiting, answer

        reply, answer = run_within(go, TEST_TIMEOUT_S)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert reply.body == b"not zlib at all"
