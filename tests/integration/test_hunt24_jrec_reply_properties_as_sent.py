"""A stored reply keeps its properties string exactly as the replier sent it, as 4.9.3's ReplyMessageProcessor
writes it (setPropertiesString(requestHeader.getProperties()): the request's text, not the parsed map
serialised again in HashMap order as a plain send's is).  The same SEND_REPLY_MESSAGE_V2 request went to the
real 4.9.3 broker and to ours; ours wrote the parsed map in HashMap order without the trailing separator, so
the record was a byte shorter and its properties in another order.  Real name server and broker, raw frame."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within, stored_messages
from test_request_reply import CLUSTER, REPLY_TOPIC

from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0

# the properties header of the request: not in HashMap order, a name given twice, a trailing separator
SENT = ("TAGS\x01t1\x02k\x011\x02zz\x01\u00e9\x02k\x012\x02CORRELATION_ID\x01c-1\x02"
        "REPLY_TO_CLIENT\x0110.0.0.9@gone\x02")
# captured from 4.9.3 (the broker of RocketMQ 4.9.3 answering that request): the record's size, body CRC and
# PROPERTIES bytes
JAVA_RECORD_SIZE = 197
JAVA_BODY_CRC = 769682160
JAVA_PROPERTIES = bytes.fromhex(
    "54414753017431026b0131027a7a01c3a9026b013202434f5252454c4154494f4e5f494401632d31025245504c595f544f5f43"
    "4c49454e540131302e302e302e3940676f6e6502")


def test_a_stored_reply_keeps_the_properties_string_it_was_sent_with(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as cluster:
        header = SendMessageRequestHeader(
            producer_group="pg1", topic=REPLY_TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
            queue_id=0, sys_flag=0, born_timestamp=1700000000123, flag=0, properties=SENT,
            reconsume_times=0, unit_mode=False, batch=False)

        async def go() -> RemotingCommand:
            pool = ConnectionPool()
            try:
                return await pool.request(cluster.broker_addr, RemotingCommand.request(
                    RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext_fields_v2(), b"the reply"), 10)
            finally:
                await pool.close()

        answer = run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        stored = stored_messages(cluster, REPLY_TOPIC, 1)
    # as 4.9.3: nobody to push to, but stored
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "push reply message fail, channel of <10.0.0.9@gone> not found."
    assert answer.ext_fields["queueOffset"] == "0"
    [message] = stored
    assert message.properties_string.encode("utf-8") == JAVA_PROPERTIES
    assert message.store_size == JAVA_RECORD_SIZE
    assert message.body_crc == JAVA_BODY_CRC
    assert message.body == b"the reply" and message.born_timestamp == 1700000000123
    assert message.tags == "t1"  # indexed under its tag: the later k wins, as in Java's map
    assert message.properties["k"] == "2"
