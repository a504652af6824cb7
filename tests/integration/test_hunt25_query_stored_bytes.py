"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answer with the record's stored bytes, as 4.9.3's broker does.

They answered with the record laid out again from its decoded message: the same bytes while topic and
properties are UTF-8, but a record whose properties are not (a byte flipped on disk, or a batch a 4.9.3
master stored and replicated) came back with each malformed sequence re-encoded as U+FFFD, three bytes
(the 4.9.3 broker sent 148 bytes where ours sent 154 for one such record).  Real name server and broker;
the byte is flipped in the segment file while the broker runs.
"""

from __future__ import annotations

import os

from local_cluster import LocalCluster, send_bodies
from raw_frames import RawConnection

from rocketstore.remoting import RequestCode, ResponseCode

TOPIC = "Hunt25StoredBytes"


def _flip_last_property_byte(cluster: LocalCluster) -> tuple[int, str, bytes]:
    """(commitlog offset, uniq key, stored bytes) of a record whose properties' last byte now has its top
    bit set: no longer UTF-8."""
    cluster.create_topic(TOPIC, queues=1)
    send_bodies(cluster, TOPIC, ["before", "flipped", "after"])
    cluster.wait_dispatched()
    stored = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, 1, 1).messages[0])
    position = stored.commit_log_offset + stored.store_size - 1
    segment_bytes = cluster.broker.store.config.mapped_file_size_commit_log
    start = position - position % segment_bytes
    with open(os.path.join(cluster.store_dir, "commitlog", f"{start:020d}"), "r+b") as segment:
        segment.seek(position - start)
        byte = segment.read(1)[0]
        segment.seek(position - start)
        segment.write(bytes([byte | 0x80]))
        segment.seek(stored.commit_log_offset - start)
        record = segment.read(stored.store_size)
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
