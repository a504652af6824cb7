"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answer (and CONSUME_MESSAGE_DIRECTLY forwards) with the record's stored bytes, as 4.9.3's broker does.

They answered with the record laid out again from its decoded message: the same bytes while topic and
properties are UTF-8, but a record whose properties are not (a byte flipped on disk, or a batch a 4.9.3
master stored and replicated) came back with each malformed sequence re-encoded as U+FFFD, three bytes
(the 4.9.3 broker sent 148 bytes where ours sent 154 for one such record).  Real name server and broker;
the byte is flipped in the segment file while the broker runs.
"""

from __future__ import annotations

from commitlog_bytes import read_commitlog, xor_commitlog_byte
from local_cluster import LocalCluster, send_bodies
from raw_frames import RawConnection
from test_python_push_consumer import FAST, arun, create_topic, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.consumer_bodies import CMResult

TOPIC = "Hunt25StoredBytes"
#: where a record's body starts (an IPv4 born and store host): the 88 bytes of fixed fields before it
BODY_AT = 88


def _flip_last_property_byte(cluster: LocalCluster) -> tuple[int, str, bytes]:
    """(commitlog offset, uniq key, stored bytes) of a record whose properties' last byte now has its top
    bit set: no longer UTF-8."""
    cluster.create_topic(TOPIC, queues=1)
    send_bodies(cluster, TOPIC, ["before", "flipped", "after"])
    cluster.wait_dispatched()
    stored = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, 1, 1).messages[0])
    assert xor_commitlog_byte(cluster, stored.commit_log_offset + stored.store_size - 1, 0x80) < 0x80
    record = read_commitlog(cluster, stored.commit_log_offset, stored.store_size)
    assert stored.uniq_key is not None
    return stored.commit_log_offset, stored.uniq_key, record


def test_view_and_query_send_the_stored_record(cluster: LocalCluster, conn: RawConnection) -> None:
    offset, uniq_key, record = _flip_last_property_byte(cluster)
    viewed = conn.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
    assert viewed.code == ResponseCode.SUCCESS, viewed.remark
    assert viewed.body == record
    queried = conn.request(RequestCode.QUERY_MESSAGE, {
        "topic": TOPIC, "key": uniq_key, "maxNum": "32", "beginTimestamp": "0",
        "endTimestamp": str(2**62), "_UNIQUE_KEY_QUERY": "true"})
    assert queried.code == ResponseCode.SUCCESS, queried.remark
    assert queried.body == record


def test_consume_directly_forwards_the_stored_record(cluster: LocalCluster) -> None:
    """CONSUME_MESSAGE_DIRECTLY forwarded the record laid out again too (found in the session's review): with
    a topic byte that is no longer UTF-8 the re-encode failed (InvalidTopicError, SYSTEM_ERROR to the admin);
    the stored bytes go to the consumer, which reads the topic as 4.9.3's client does."""
    topic, group = "Hunt25DirectT", "hunt25-direct-group"
    handled: list[str] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend(m.topic for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, 1)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST) as consumer, \
                AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment(topic)) == 1, 20, "the queue assigned")
            async with Producer(cluster.namesrv_addr, "hunt25-direct-producer") as producer:
                sent = await producer.send(topic, b"direct")
            await eventually(lambda: handled == [topic], 20, "the message consumed")
            stored = cluster.broker.store.get(topic, 0, 0, 1).messages[0]
            # the topic's last byte ('T', 0x54) with its top bit set: a lead byte with no continuation
            xor_commitlog_byte(cluster, stored.commit_log_offset + BODY_AT + len(stored.body) + 1 + len(topic) - 1,
                               0x80)
            result = await admin.consume_message_directly(group, consumer.client_id, sent.offset_msg_id)
            assert result.consume_result == CMResult.SUCCESS, result.remark
            assert handled[-1] == topic[:-1] + "\ufffd"

    arun(go)
