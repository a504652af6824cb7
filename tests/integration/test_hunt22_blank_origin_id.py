"""A send-back keeps a message's ORIGIN_MESSAGE_ID only when it is not blank, with Java's idea of blank
(4.9.3's consumerSendMsgBack: ``UtilAll.isBlank(originMsgId) ? msgExt.getMsgId() : originMsgId``): a value
of whitespace alone is replaced by the message's own id, one with a no-break space (not Java whitespace) kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import MessageQueue, PullConsumer
from rocketstore.message.java_text import java_is_blank
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.record import Message
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run

TOPIC, GROUP = "BlankOriginTopic", "blank-origin-group"


@pytest.mark.parametrize(("origin", "kept"), [(" \t\n", False), ("\x1f", False), ("\xa0", True),
                                              ("an-id", True)])
def test_send_back_replaces_a_blank_origin_message_id(tmp_path: Path, origin: str, kept: bool) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 1)
        broker = cluster.broker
        put = cluster.call(lambda: broker.store.put(Message(TOPIC, b"body", {"ORIGIN_MESSAGE_ID": origin})))
        assert put.status.name == "PUT_OK"
        own_id = encode_offset_message_id(broker.store.store_host, put.commit_log_offset)

        async def go() -> Message:
            pool = ConnectionPool()
            try:
                conn = await pool.get(cluster.broker_addr)
                back = await conn.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                    "offset": str(put.commit_log_offset), "group": GROUP, "delayLevel": "-1",
                    "originMsgId": own_id, "originTopic": TOPIC}), 5)
                assert back.code == ResponseCode.SUCCESS, back.remark
            finally:
                await pool.close()
            async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
                dlq = MessageQueue(f"%DLQ%{GROUP}", "broker-a", 0)
                [dead] = (await consumer.pull(dlq, 0, suspend_ms=5000)).messages
                return dead

        dead = run(go())
        assert dead.body == b"body"
        assert dead.properties["ORIGIN_MESSAGE_ID"] == (origin if kept else own_id)
        assert java_is_blank(origin) is not kept
