"""The ``rocketmq`` source's offsets as users hand them back, and queues whose offsets moved back.

An ``endOffset`` copied from a streaming query's progress holds the source's own keys (``@marks``, ``@from``)
beside the queue offsets: passed back as ``startingOffsets`` it is read as its queue offsets.  A queue whose
broker max offset went below the checkpoint's (its topic deleted and created again with fewer messages) is,
with failOnDataLoss=false, read from its MIN offset, as Kafka's source reads from the earliest available
offset after a reported loss (and as a new queue found through its mark is read)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, recreate_topic, send_bodies

from rocketstore.spark.stream_options import SourceOptions, SparkOptionError
from rocketstore.spark.stream_source import FROM_KEY, MARKS_KEY

pytestmark = pytest.mark.spark


def _parse(starting: str) -> SourceOptions:
    return SourceOptions.parse({"nameServer": "127.0.0.1:9876", "subscribe": "TopicA",
                                "startingOffsets": starting}, streaming=True)


def test_an_end_offset_with_the_sources_own_keys_is_taken_as_starting_offsets() -> None:
    end = {"TopicA": {"broker-a:0": 7, "broker-a:1": 3},
           MARKS_KEY: {"TopicA": {"broker-a:0": [6, 4242, 1700000000000]}},
           FROM_KEY: {"TopicA": {"broker-a:1": 0}}}
    assert _parse(json.dumps(end)).starting_offsets == {"TopicA": {"broker-a:0": 7, "broker-a:1": 3}}
    # still refused: JSON that is not offsets, a key that is neither a topic nor the source's own
    with pytest.raises(SparkOptionError, match="neither earliest nor latest nor group nor JSON"):
        _parse('{"TopicA": {"broker-a:0": 7}')
    with pytest.raises(SparkOptionError, match=r"offset \[6\] of TopicA/broker-a:0 is not an integer"):
        _parse('{"TopicA": {"broker-a:0": [6]}}')
    with pytest.raises(SparkOptionError, match=r"'@mark' is no topic name, nor one of the source's own keys"):
        _parse('{"TopicA": {"broker-a:0": 7}, "@mark": {}}')


def test_a_streams_end_offset_copied_into_a_batch_read_starts_there(spark: Any, cluster: LocalCluster) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    topic = "Hunt17EndOffset"
    cluster.create_topic(topic, 1)
    send_bodies(cluster, topic, [f"m{i}" for i in range(5)])
    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": topic,
                                   "startingOffsets": "earliest"}, streaming=True)
    reader = BrokerStreamReader(options, source_schema())
    try:
        end = reader.latestOffset(reader.initialOffset(), ReadMaxRows(3))
    finally:
        reader.stop()
    assert end[topic] == {"broker-a:0": 3} and MARKS_KEY in end  # what the query's progress shows
    df = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("subscribe", topic)
          .option("startingOffsets", json.dumps(end)).load())
    assert sorted(r["body"] for r in df.selectExpr("CAST(body AS STRING) AS body").collect()) == ["m3", "m4"]


def test_a_queue_that_moved_back_is_read_from_its_min_offset(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt17Shrunk", 1)
        send_bodies(cluster, "Hunt17Shrunk", [f"old{i}" for i in range(6)])
        options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Hunt17Shrunk",
                                       "startingOffsets": "earliest", "failOnDataLoss": "false",
                                       "fetchOffset.numRetries": "0"}, streaming=True)
        reader = BrokerStreamReader(options, source_schema())
        try:
            first = reader.initialOffset()
            end = reader.latestOffset(first, ReadAllAvailable())
            assert end["Hunt17Shrunk"] == {"broker-a:0": 6}
            old_mark = end[MARKS_KEY]["Hunt17Shrunk"]["broker-a:0"]
            recreate_topic(cluster, "Hunt17Shrunk")
            send_bodies(cluster, "Hunt17Shrunk", [f"new{i}" for i in range(4)])  # 4 < 6: the offsets moved back
            capfd.readouterr()
            moved = reader.latestOffset(end, ReadAllAvailable())
            err = capfd.readouterr().err
            assert "Hunt17Shrunk broker-a:0: from 6 to 4" in err and "from their min offsets" in err
            assert moved["Hunt17Shrunk"] == {"broker-a:0": 4}
            assert moved[FROM_KEY] == {"Hunt17Shrunk": {"broker-a:0": 0}}
            # the batch reads the new queue from its min offset 0, not from its max offset 4 (nothing)
            assert [(r.start, r.end) for p in reader.partitions(end, moved) for r in p.ranges] == [(0, 4)]
            # and marks the new queue's message at 3, not the old queue's
            new_mark = moved[MARKS_KEY]["Hunt17Shrunk"]["broker-a:0"]
            assert new_mark[0] == 3 and new_mark[1:] != old_mark[1:]
            send_bodies(cluster, "Hunt17Shrunk", ["new4"])
            following = reader.latestOffset(moved, ReadAllAvailable())
            assert following["Hunt17Shrunk"] == {"broker-a:0": 5} and FROM_KEY not in following
            assert following[MARKS_KEY]["Hunt17Shrunk"]["broker-a:0"] == new_mark  # the same queue, read on
            assert [(r.start, r.end) for p in reader.partitions(moved, following) for r in p.ranges] == [(4, 5)]
        finally:
            reader.stop()


def test_a_recreated_topic_resumed_with_failondataloss_false_loses_none_of_the_new_queue(
        spark: Any, archive_stream: Callable[..., None], tmp_path: Path) -> None:
    """test_hunt13b_stream_offsets' query, with the corrected expectation: new0..new2 are read too."""
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt17Recreated", 1)
        send_bodies(cluster, "Hunt17Recreated", [f"old{i}" for i in range(10)])
        archive_stream(cluster, tmp_path, "Hunt17Recreated")
        recreate_topic(cluster, "Hunt17Recreated")
        send_bodies(cluster, "Hunt17Recreated", [f"new{i}" for i in range(3)])
        with pytest.raises(Exception, match=r"offsets moved back.*Hunt17Recreated broker-a:0: from 10 to 3"):
            archive_stream(cluster, tmp_path, "Hunt17Recreated")
        archive_stream(cluster, tmp_path, "Hunt17Recreated", failOnDataLoss="false")  # from offset 0 of the new one
        send_bodies(cluster, "Hunt17Recreated", [f"new{i}" for i in range(3, 12)])
        archive_stream(cluster, tmp_path, "Hunt17Recreated")
        got = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == sorted([f"old{i}" for i in range(10)] + [f"new{i}" for i in range(12)])


def test_an_end_offset_given_as_starting_offsets_keeps_checking_its_marks(tmp_path: Path) -> None:
    """A query started from another query's endOffset checks the marks it holds, as a checkpoint's: a topic
    created again since (with more messages, so no offset moved back) is data loss, not silently skipped."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_source import BrokerStreamReader, DataLossError, source_schema

    def reader(cluster: LocalCluster, starting: str, **extra: str) -> BrokerStreamReader:
        options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Hunt17Copied",
                                       "startingOffsets": starting, "fetchOffset.numRetries": "0", **extra},
                                      streaming=True)
        return BrokerStreamReader(options, source_schema())

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt17Copied", 1)
        send_bodies(cluster, "Hunt17Copied", [f"old{i}" for i in range(5)])
        first = reader(cluster, "earliest")
        try:
            end = first.latestOffset(first.initialOffset(), ReadAllAvailable())
        finally:
            first.stop()
        assert end["Hunt17Copied"] == {"broker-a:0": 5} and end[MARKS_KEY]["Hunt17Copied"]["broker-a:0"][0] == 4
        copied = json.dumps(end)
        same = reader(cluster, copied)
        try:
            start = same.initialOffset()
            assert start == {"Hunt17Copied": {"broker-a:0": 5}, MARKS_KEY: end[MARKS_KEY]}
            send_bodies(cluster, "Hunt17Copied", ["old5"])
            assert same.latestOffset(start, ReadAllAvailable())["Hunt17Copied"] == {"broker-a:0": 6}
        finally:
            same.stop()

        recreate_topic(cluster, "Hunt17Copied")
        send_bodies(cluster, "Hunt17Copied", [f"new{i}" for i in range(8)])
        strict, lenient = reader(cluster, copied), reader(cluster, copied, failOnDataLoss="false")
        try:
            with pytest.raises(DataLossError, match=r"Hunt17Copied broker-a:0: the message read at queue offset 4"):
                strict.latestOffset(strict.initialOffset(), ReadAllAvailable())
            start = lenient.initialOffset()
            moved = lenient.latestOffset(start, ReadAllAvailable())
            assert moved["Hunt17Copied"] == {"broker-a:0": 8} and moved[FROM_KEY] == {"Hunt17Copied": {"broker-a:0": 0}}
            assert [(r.start, r.end) for p in lenient.partitions(start, moved) for r in p.ranges] == [(0, 8)]
        finally:
            strict.stop()
            lenient.stop()
