"""The streaming ``rocketmq`` source and a topic deleted and created again with MORE messages than the checkpoint
had read: the queue offsets did not move back, so only the marks the offsets keep (one read message per queue,
MARKS_KEY) tell the new queue from the old one.  failOnDataLoss fails naming the queue; failOnDataLoss=false
warns and reads the new queue from its min offset; checkpoints without marks (written before them) still load."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient

pytestmark = pytest.mark.spark


def _send(cluster: LocalCluster, topic: str, bodies: list[str]) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "streamloss-producer") as producer:
            for body in bodies:
                await producer.send(topic, body.encode())

    asyncio.run(go())
    cluster.wait_dispatched()


def _recreate(cluster: LocalCluster, topic: str) -> None:
    async def delete() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.delete_topic(topic)

    asyncio.run(delete())
    cluster.create_topic(topic, 1)


def _archive(spark: Any, cluster: LocalCluster, tmp_path: Path, topic: str, **options: str) -> None:
    stream = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for name, value in options.items():
        stream = stream.option(name, value)
    query = (stream.load().selectExpr("CAST(body AS STRING) AS body").writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()


def test_a_topic_created_again_with_more_messages_fails_the_resumed_query(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Regrown", 1)
        _send(cluster, "Regrown", [f"old{i}" for i in range(10)])
        _archive(spark, cluster, tmp_path, "Regrown")
        _recreate(cluster, "Regrown")
        _send(cluster, "Regrown", [f"new{i}" for i in range(20)])
        # the new queue holds 20 > 10 messages: its offsets did not move back, yet offsets 0..9 are new messages
        with pytest.raises(Exception, match=r"new ones that reused the checkpoint's offsets.*Regrown broker-a:0: "
                                            r"the message read at queue offset 9 .* offsets \[0, 10\) of the new "
                                            r"queue were never read"):
            _archive(spark, cluster, tmp_path, "Regrown")
        _archive(spark, cluster, tmp_path, "Regrown", failOnDataLoss="false")  # the new queue from offset 0
        _send(cluster, "Regrown", [f"new{i}" for i in range(20, 25)])
        _archive(spark, cluster, tmp_path, "Regrown")  # the same queue, continued: no data loss
        got = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == sorted([f"old{i}" for i in range(10)] + [f"new{i}" for i in range(25)])


def test_a_running_reader_sees_a_recreated_topic_and_old_checkpoints_skip_the_check(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_options import SourceOptions
    from rocketstore.spark.stream_source import (
        FROM_KEY,
        MARKS_KEY,
        BrokerStreamReader,
        DataLossError,
        source_schema,
    )

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Rerun", 1)
        _send(cluster, "Rerun", [f"old{i}" for i in range(4)])

        def reader(**extra: str) -> BrokerStreamReader:
            options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Rerun",
                                           "startingOffsets": "earliest", "fetchOffset.numRetries": "0", **extra},
                                          streaming=True)
            return BrokerStreamReader(options, source_schema())

        failing, lenient = reader(consumerGroup="streamloss-group"), reader(failOnDataLoss="false")
        try:
            first = failing.initialOffset()
            assert first == {"Rerun": {"broker-a:0": 0}}
            end = failing.latestOffset(first, ReadAllAvailable())
            assert end["Rerun"] == {"broker-a:0": 4}
            assert end[MARKS_KEY]["Rerun"]["broker-a:0"][0] == 3  # the message at end - 1
            _send(cluster, "Rerun", ["old4"])
            second = failing.latestOffset(end, ReadAllAvailable())  # the same queue, continued
            assert second["Rerun"] == {"broker-a:0": 5}
            assert second[MARKS_KEY] == end[MARKS_KEY]  # the mark stands: no new pull to make one
            failing.commit(second)

            _recreate(cluster, "Rerun")
            _send(cluster, "Rerun", [f"new{i}" for i in range(8)])
            # a checkpoint written before the marks has nothing to compare: read on as before (and marked now)
            legacy = failing.latestOffset({"Rerun": {"broker-a:0": 5}}, ReadAllAvailable())
            assert legacy["Rerun"] == {"broker-a:0": 8} and FROM_KEY not in legacy
            assert legacy[MARKS_KEY]["Rerun"]["broker-a:0"][0] == 7
            # the running query's next trigger (same reader, no restart) sees the new queue
            with pytest.raises(DataLossError, match=r"Rerun broker-a:0: the message read at queue offset 3"):
                failing.latestOffset(second, ReadAllAvailable())
            capfd.readouterr()
            moved = lenient.latestOffset(second, ReadAllAvailable())
            assert "Rerun broker-a:0" in (err := capfd.readouterr().err)
            assert "reading the new queues from their min offsets" in err
            assert moved["Rerun"] == {"broker-a:0": 8} and moved[FROM_KEY] == {"Rerun": {"broker-a:0": 0}}
            # the batch second -> moved reads the new queue from 0, not from the checkpoint's 5
            ranges = [r for p in lenient.partitions(second, moved) for r in p.ranges]
            assert [(r.start, r.end) for r in ranges] == [(0, 8)]
            following = lenient.latestOffset(moved, ReadAllAvailable())
            assert following["Rerun"] == {"broker-a:0": 8} and FROM_KEY not in following
            assert lenient.partitions(moved, following) == []
        finally:
            failing.stop()
            lenient.stop()


def test_a_queue_that_moved_back_is_not_reported_again_through_its_old_mark(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_options import SourceOptions
    from rocketstore.spark.stream_source import MARKS_KEY, BrokerStreamReader, source_schema

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Shrunk", 1)
        _send(cluster, "Shrunk", [f"old{i}" for i in range(6)])

        def reader(**extra: str) -> BrokerStreamReader:
            options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Shrunk",
                                           "startingOffsets": "earliest", "fetchOffset.numRetries": "0", **extra},
                                          streaming=True)
            return BrokerStreamReader(options, source_schema())

        failing, lenient = reader(), reader(failOnDataLoss="false")
        try:
            end = failing.latestOffset(failing.initialOffset(), ReadAllAvailable())
            _send(cluster, "Shrunk", ["old6"])
            second = failing.latestOffset(end, ReadAllAvailable())
            assert second["Shrunk"] == {"broker-a:0": 7} and second[MARKS_KEY]["Shrunk"]["broker-a:0"][0] == 5

            _recreate(cluster, "Shrunk")
            _send(cluster, "Shrunk", [f"new{i}" for i in range(6)])  # 6 < 7: the offsets moved back
            capfd.readouterr()
            moved = lenient.latestOffset(second, ReadAllAvailable())
            assert "offsets moved back" in capfd.readouterr().err
            assert moved["Shrunk"] == {"broker-a:0": 6}
            # the mark at 5 was of the old queue: the loss was reported once, going on from 6 is not a new one
            assert "Shrunk" not in moved.get(MARKS_KEY, {})
            _send(cluster, "Shrunk", ["new6", "new7"])
            following = failing.latestOffset(moved, ReadAllAvailable())
            assert following["Shrunk"] == {"broker-a:0": 8}
            assert following[MARKS_KEY]["Shrunk"]["broker-a:0"][0] == 7
        finally:
            failing.stop()
            lenient.stop()
