"""Batch reads of the ``rocketmq`` source from a stream's offsets, and starts after the end.

A streaming query's ``endOffset`` (from its progress) carries ``@marks``: one message it read per queue.  Copied
into a *batch* read's ``startingOffsets`` the marks are checked as the stream checks them: a topic deleted and
created again since is data loss (failOnDataLoss) or, with failOnDataLoss=false, the new queue is read from its
min offset, instead of reading the new queue's messages from the old offset on.  A start after the queue's end
(a hand-typed JSON past the max offset, or startingOffsets after endingOffsets) fails naming both options, as
Spark's Kafka source fails such a batch, instead of reading nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, recreate_topic, send_bodies

from rocketstore.spark.stream_options import SourceOptions, SparkOptionError

pytestmark = pytest.mark.spark


def _stream_end(cluster: LocalCluster, topic: str) -> dict:
    """What a stream from the earliest offsets shows as its first batch's endOffset."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": topic,
                                   "startingOffsets": "earliest"}, streaming=True)
    reader = BrokerStreamReader(options, source_schema())
    try:
        return reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    finally:
        reader.stop()


def _ranges(cluster: LocalCluster, topic: str, **extra: str) -> list[tuple[int, int]]:
    """The queue ranges a batch read of *topic* with *extra* options plans."""
    from rocketstore.spark.stream_source import BrokerBatchReader, source_schema

    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": topic,
                                   "fetchOffset.numRetries": "0", **extra}, streaming=False)
    parts = BrokerBatchReader(options, source_schema()).partitions()
    return [(r.start, r.end) for p in parts for r in getattr(p, "ranges", [])]


def test_a_streams_offsets_in_a_batch_read_are_checked_against_a_recreated_topic(
        spark: Any, cluster: LocalCluster) -> None:
    from rocketstore.spark.stream_source import MARKS_KEY, DataLossError

    topic = "Hunt18BatchRegrown"
    cluster.create_topic(topic, 1)
    send_bodies(cluster, topic, [f"old{i}" for i in range(5)])
    end = _stream_end(cluster, topic)
    assert end[topic] == {"broker-a:0": 5} and end[MARKS_KEY][topic]["broker-a:0"][0] == 4
    copied = json.dumps(end)
    send_bodies(cluster, topic, ["old5"])
    assert _ranges(cluster, topic, startingOffsets=copied) == [(5, 6)]  # the same queue: read on

    recreate_topic(cluster, topic)
    send_bodies(cluster, topic, [f"new{i}" for i in range(8)])  # 8 > 5: no offset moved back
    with pytest.raises(DataLossError, match=rf"{topic} broker-a:0: the message read at queue offset 4 .* "
                                            r"offsets \[0, 5\) of the new queue were never read"):
        _ranges(cluster, topic, startingOffsets=copied)
    df = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("subscribe", topic)
          .option("startingOffsets", copied).option("failOnDataLoss", "false").load())
    got = sorted(r["body"] for r in df.selectExpr("CAST(body AS STRING) AS body").collect())
    assert got == sorted(f"new{i}" for i in range(8))  # not new5..new7 only (the warning is the planner worker's)


def test_a_streams_offsets_past_a_recreated_queues_end_are_data_loss(cluster: LocalCluster) -> None:
    from rocketstore.spark.stream_source import DataLossError

    topic = "Hunt18BatchShrunk"
    cluster.create_topic(topic, 1)
    send_bodies(cluster, topic, [f"old{i}" for i in range(6)])
    copied = json.dumps(_stream_end(cluster, topic))
    recreate_topic(cluster, topic)
    send_bodies(cluster, topic, [f"new{i}" for i in range(3)])  # 3 < 6: the offsets moved back
    with pytest.raises(DataLossError, match=rf"offsets moved back.*{topic} broker-a:0: from 6 to 3"):
        _ranges(cluster, topic, startingOffsets=copied)
    assert _ranges(cluster, topic, startingOffsets=copied, failOnDataLoss="false") == [(0, 3)]


def test_a_start_after_the_end_is_refused_naming_both_options(cluster: LocalCluster) -> None:
    topic = "Hunt18BatchOrder"
    cluster.create_topic(topic, 2)
    send_bodies(cluster, topic, [f"m{i}" for i in range(8)])  # 4 a queue
    with pytest.raises(SparkOptionError, match=rf"startingOffsets after endingOffsets .*for {topic} "
                                               r"broker-a:0: 3 > 2$"):
        _ranges(cluster, topic, startingOffsets=json.dumps({topic: {"0": 3}}),
                endingOffsets=json.dumps({topic: {"0": 2}}))
    with pytest.raises(SparkOptionError, match=rf"past the queue's max offset\) for {topic} broker-a:1: 40 > 4$"):
        _ranges(cluster, topic, startingOffsets=json.dumps({topic: {"broker-a:1": 40}}), failOnDataLoss="false")
    # equal offsets, and a start at the end, read nothing of that queue without an error
    assert _ranges(cluster, topic, startingOffsets=json.dumps({topic: {"0": 2, "1": 4}}),
                   endingOffsets=json.dumps({topic: {"0": 2}})) == []


def test_a_streams_offsets_as_ending_offsets_are_checked_against_a_recreated_topic(cluster: LocalCluster) -> None:
    from rocketstore.spark.stream_source import DataLossError

    topic = "Hunt18BatchEnd"
    cluster.create_topic(topic, 1)
    send_bodies(cluster, topic, [f"old{i}" for i in range(5)])
    copied = json.dumps(_stream_end(cluster, topic))
    send_bodies(cluster, topic, ["old5"])
    assert _ranges(cluster, topic, endingOffsets=copied) == [(0, 5)]  # up to where the stream got

    recreate_topic(cluster, topic)
    send_bodies(cluster, topic, [f"new{i}" for i in range(8)])  # offsets 0..4 are other messages now
    with pytest.raises(DataLossError, match=rf"endingOffsets name queues that are new ones .*{topic} broker-a:0: "
                                            r"the message read at queue offset 4 .* is now another one"):
        _ranges(cluster, topic, endingOffsets=copied)
    assert _ranges(cluster, topic, endingOffsets=copied, failOnDataLoss="false") == [(0, 8)]

    recreate_topic(cluster, topic)
    send_bodies(cluster, topic, [f"newer{i}" for i in range(3)])  # shorter than the stream's end
    with pytest.raises(DataLossError, match=rf"{topic} broker-a:0: endingOffsets 5 is past the queue's end 3"):
        _ranges(cluster, topic, endingOffsets=copied)
    assert _ranges(cluster, topic, endingOffsets=copied, failOnDataLoss="false") == [(0, 3)]


def test_starting_offsets_latest_is_refused_for_a_batch_read() -> None:
    base = {"nameServer": "127.0.0.1:9876", "subscribe": "TopicA", "startingOffsets": "latest"}
    with pytest.raises(SparkOptionError, match="startingOffsets=latest is for streaming queries only"):
        SourceOptions.parse(base, streaming=False)
    assert SourceOptions.parse(base, streaming=True).starting_offsets == "latest"


def test_the_store_source_refuses_a_start_after_the_end(golden_dir: Path) -> None:
    from rocketstore.errors import StoreConfigError
    from rocketstore.spark.store_options import StoreReadOptions, plan_ranges
    from rocketstore.store.message_store import MessageStore

    def plan(**offsets: str) -> list[tuple[int, int, int]]:
        options = StoreReadOptions.parse({"path": str(golden_dir / "stores" / "clean"), "topics": "TopicA",
                                          **offsets})
        with MessageStore.open(options.path, options.config, read_only=True) as store:
            return [(r.queue_id, r.start, r.end) for r in plan_ranges(store, options)]

    with pytest.raises(StoreConfigError, match=r"startingOffsets after endingOffsets for TopicA queue 1: 9 > 4 "):
        plan(startingOffsets='{"TopicA": {"1": 9}}', endingOffsets='{"TopicA": {"1": 4}}')
    # equal offsets, and a start past the queue's end (clamped there, as documented), read nothing of it
    assert plan(startingOffsets='{"TopicA": {"0": 4, "1": 900}}', endingOffsets='{"TopicA": {"0": 4}}') == [
        (2, 0, 25), (3, 0, 25)]


def test_ending_timestamp_is_refused_by_the_broker_source_not_ignored() -> None:
    base = {"nameServer": "127.0.0.1:9876", "subscribe": "TopicA", "endingTimestamp": "1700000000000"}
    with pytest.raises(SparkOptionError, match="option endingTimestamp is not supported by the rocketmq source"):
        SourceOptions.parse(base, streaming=False)
