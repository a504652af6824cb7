"""A stored record whose properties are no longer UTF-8 (one byte of them flipped on disk, which the body CRC
does not cover; or bytes a 4.9.3 master took in a batch and replicated) reaches consumers as 4.9.3's do.

4.9.3's broker hands the record's bytes out as they are and its client reads the properties with ``new
String(bytes, UTF_8)``: the message is delivered, each malformed sequence read as one U+FFFD (a lone byte
80..FF at the end of the properties: one U+FFFD in place of their last character).  Our client took the
record for damage: the push consumer skipped it with an ERROR and the pull consumer held it (and every record
after it in that pull) back as undecodable.

Real name server, broker and clients; the byte is flipped in the commitlog segment file while the broker
runs.
"""

from __future__ import annotations

from commitlog_bytes import xor_commitlog_byte
from local_cluster import LocalCluster, run_within, send_bodies
from test_hunt20_badbody_skip import TEST_TIMEOUT_S, _pushed_past

from rocketstore.client import PullConsumer, PullStatus
from rocketstore.client.route import MessageQueue

COUNT = 6
FLIPPED = 2  # the queue offset of the record whose properties' last byte is flipped
BODIES = {i: f"message {i}".encode() for i in range(COUNT)}


def _flip_last_property_byte(cluster: LocalCluster, topic: str) -> str:
    """Store COUNT messages in *topic* (one queue), set the top bit of the last byte of the one at queue
    offset FLIPPED; returns its properties string as 4.9.3 reads it afterwards."""
    cluster.create_topic(topic, queues=1)
    send_bodies(cluster, topic, [b.decode() for b in BODIES.values()])
    stored = cluster.call(lambda: cluster.broker.store.get(topic, 0, FLIPPED, 1).messages[0])
    assert stored.properties_string[-1] < "\x80"  # an ASCII character: one byte
    xor_commitlog_byte(cluster, stored.commit_log_offset + stored.store_size - 1, 0x80)
    return stored.properties_string[:-1] + "\ufffd"


def test_a_push_consumer_is_handed_the_message(cluster: LocalCluster) -> None:
    topic = "Hunt25Utf8Push"
    _flip_last_property_byte(cluster, topic)
    assert _pushed_past(cluster, topic, "hunt25-utf8-push", COUNT, COUNT) == BODIES


def test_a_pull_consumer_gets_the_message_with_java_s_reading(cluster: LocalCluster) -> None:
    topic = "Hunt25Utf8Pull"
    java_props = _flip_last_property_byte(cluster, topic)
    mq = MessageQueue(topic, cluster.broker_name, 0)

    async def go():  # type: ignore[no-untyped-def]
        async with PullConsumer(cluster.namesrv_addr, "hunt25-utf8-pull") as consumer:
            return await consumer.pull(mq, 0, 32)

    result = run_within(go, TEST_TIMEOUT_S)
    assert result.status == PullStatus.FOUND and not result.undecodable
    assert {m.queue_offset: m.body for m in result.messages} == BODIES
    assert result.messages[FLIPPED].properties_string == java_props
    assert result.next_begin_offset == COUNT
