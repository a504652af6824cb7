"""The ``rocketmq`` sink's UNIQ_KEYs as 4.9.3's tools read them.

* 4.9.3 looks a message up by its client message id (``viewMessage(topic, msgId)``, the dashboard's search by
  message id) in the index from the time the id's bytes 10-13 tell on (``getNearlyTimeFromID``, minus 1 s).
  The sink's keys were a plain MD5, whose "time" was random: a message stored before it was not found.  A
  batch write's keys now carry the driver's time when the write began, a streaming write's the month's start
  (a replayed micro-batch must carry the same keys whenever it runs).
* A row whose ``properties`` hold a UNIQ_KEY keeps it, as Java's producer keeps one set on a message
  (``MessageClientIDSetter.setUniqID``); the sink used to replace it.

No SparkSession: the writers' ``write`` is called as an executor calls it (outside a task: partition 0).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, wait_stored

from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import parse_properties
from rocketstore.spark.sink import BrokerBatchWriter, BrokerStreamWriter, SinkOptions

pytestmark = pytest.mark.spark


def nearly_time_ms(msg_id: str, now_ms: int, tz: tzinfo | None = None) -> int:
    """MessageClientIDSetter.getNearlyTimeFromID of 4.9.3: the id's unsigned 32-bit field after the IP (4 or
    16 bytes), the pid (2) and the class loader's hash (4), added to the start of the month of *now_ms* (local
    time), or of the month before when that sum is not before now."""
    raw = bytes.fromhex(msg_id)
    ip_length = 16 if len(raw) == 28 else 4
    span = int.from_bytes(raw[ip_length + 6:ip_length + 10], "big")
    now = datetime.fromtimestamp(now_ms / 1000, UTC).astimezone(tz)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if int(start.timestamp() * 1000) + span >= now_ms:
        start = (start.replace(year=start.year - 1, month=12) if start.month == 1
                 else start.replace(month=start.month - 1))
    return int(start.timestamp() * 1000) + span


def test_the_nearly_time_reading_is_4_9_3s() -> None:
    # captured from 4.9.3 (MessageClientIDSetter.getNearlyTimeFromID in a JVM on UTC, on 2026-11-29 about
    # 00:27 UTC): a Java producer's key (IPv6 host: 56 digits) and one of the sink's old MD5 keys
    now = int(datetime(2026, 11, 29, 0, 27, tzinfo=UTC).timestamp() * 1000)
    java = nearly_time_ms("FD000000000000000000000000000002049A5FFD2B279047C66D0000", now, UTC)
    assert java == int(datetime(2026, 11, 29, 0, 23, 42, 957000, tzinfo=UTC).timestamp() * 1000)
    md5 = nearly_time_ms("C7753414F37A1D43A5D2D22EC3A5DE92", now, UTC)
    assert md5 == int(datetime(2026, 11, 10, 19, 31, 20, 101000, tzinfo=UTC).timestamp() * 1000)


def _found_as_4_9_3_looks(cluster: LocalCluster, topic: str, uniq_key: str, now_ms: int) -> bool:
    """queryMessageByUniqKey(topic, id) as viewMessage(topic, id) calls it: from the id's nearly time - 1 s"""
    async def go() -> bool:
        async with AdminClient(cluster.namesrv_addr) as admin:
            # the index is built after the consume queue wait_stored watched: wait until it holds the key
            for _ in range(600):
                if await admin.query_by_uniq_key(topic, uniq_key):
                    break
                await asyncio.sleep(0.05)
            begin = nearly_time_ms(uniq_key, now_ms) - 1000
            hits = await admin.query_by_uniq_key(topic, uniq_key, begin_ms=begin)
        return any(parse_properties(m.properties_string).get("UNIQ_KEY") == uniq_key for m in hits)

    return asyncio.run(go())


def test_a_batch_writes_keys_name_a_time_before_their_messages_were_stored(cluster: LocalCluster) -> None:
    topic = "Hunt30SinkKeysBatch"
    cluster.create_topic(topic, 1)
    writer = BrokerBatchWriter(SinkOptions(cluster.namesrv_addr, topic), None)  # type: ignore[arg-type]
    writer.write(iter([pa.record_batch({"body": [f"m{i}" for i in range(6)]})]))
    stored = wait_stored(cluster, topic, 6, "the batch write's rows", queues=1)
    for m in stored:
        key = parse_properties(m.properties_string)["UNIQ_KEY"]
        nearly = nearly_time_ms(key, m.store_timestamp)
        # the write's start: at most a little before the message was stored, never after it
        assert m.store_timestamp - 600_000 < nearly <= m.store_timestamp, (key, nearly, m.store_timestamp)
        assert _found_as_4_9_3_looks(cluster, topic, key, m.store_timestamp)
    assert len({parse_properties(m.properties_string)["UNIQ_KEY"] for m in stored}) == 6


def test_a_streaming_writes_keys_name_the_months_start(cluster: LocalCluster) -> None:
    topic = "Hunt30SinkKeysStream"
    cluster.create_topic(topic, 1)
    writer = BrokerStreamWriter(SinkOptions(cluster.namesrv_addr, topic), None)  # type: ignore[arg-type]
    writer.write(iter([pa.record_batch({"body": ["a", "b"]})]))
    for m in wait_stored(cluster, topic, 2, "the streaming write's rows", queues=1):
        key = parse_properties(m.properties_string)["UNIQ_KEY"]
        start = datetime.fromtimestamp(m.store_timestamp / 1000, UTC).astimezone()
        month_start = int(start.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)
        assert nearly_time_ms(key, m.store_timestamp) == month_start
        assert _found_as_4_9_3_looks(cluster, topic, key, m.store_timestamp)


def test_a_rows_own_uniq_key_is_kept(cluster: LocalCluster) -> None:
    topic = "Hunt30SinkOwnKey"
    cluster.create_topic(topic, 1)
    own = "7F00000100002A9F0000000000000ABC"
    props = pa.array([[("UNIQ_KEY", own), ("color", "red")], None], pa.map_(pa.string(), pa.string()))
    writer = BrokerBatchWriter(SinkOptions(cluster.namesrv_addr, topic), None)  # type: ignore[arg-type]
    writer.write(iter([pa.record_batch({"body": ["copied", "new"], "properties": props})]))
    keys: dict[bytes, Any] = {m.body: parse_properties(m.properties_string)["UNIQ_KEY"]
                              for m in wait_stored(cluster, topic, 2, "both rows", queues=1)}
    assert keys[b"copied"] == own
    assert keys[b"new"] != own and len(keys[b"new"]) == 32
