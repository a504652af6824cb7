"""The streaming ``rocketmq`` source and a topic deleted and created again with MORE messages than the checkpoint
had read: the queue offsets did not move back, so only the marks the offsets keep (one read message per queue,
MARKS_KEY) tell the new queue from the old one.  failOnDataLoss fails naming the queue; failOnDataLoss=false
warns and reads the new queue from its min offset; checkpoints without marks (written before them) still load."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, recreate_topic, send_bodies

pytestmark = pytest.mark.spark


def test_a_topic_created_again_with_more_messages_fails_the_resumed_query(
        spark: Any, archive_stream: Callable[..., None], tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Regrown", 1)
        send_bodies(cluster, "Regrown", [f"old{i}" for i in range(10)])
        archive_stream(cluster, tmp_path, "Regrown")
        recreate_topic(cluster, "Regrown")
        send_bodies(cluster, "Regrown", [f"new{i}" for i in range(20)])
        # the new queue holds 20 > 10 messages: its offsets did not move back, yet offsets 0..9 are new messages
        with pytest.raises(Exception, match=r"new ones that reused the checkpoint's offsets.*Regrown broker-a:0: "
                                            r"the message read at queue offset 9 .* offsets \[0, 10\) of the new "
                                            r"queue were never read"):
            archive_stream(cluster, tmp_path, "Regrown")
        archive_stream(cluster, tmp_path, "Regrown", failOnDataLoss="false")  # the new queue from offset 0
        send_bodies(cluster, "Regrown", [f"new{i}" for i in range(20, 25)])
        archive_stream(cluster, tmp_path, "Regrown")  # the same queue, continued: no data loss
        got = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == sorted([f"old{i}" for i in range(10)] + [f"new{i}" for i in range(25)])


def _reader(cluster: LocalCluster, topic: str, **extra: str) -> Any:
    """A BrokerStreamReader of *topic* from the earliest offsets, no offset-fetch retries, *extra* options."""
    from rocketstore.spark.stream_options import SourceOptions
    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": topic,
                                   "startingOffsets": "earliest", "fetchOffset.numRetries": "0", **extra},
                                  streaming=True)
    return BrokerStreamReader(options, source_schema())


def test_a_running_reader_sees_a_recreated_topic_and_old_checkpoints_skip_the_check(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.spark.stream_source import FROM_KEY, MARKS_KEY, DataLossError

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Rerun", 1)
        send_bodies(cluster, "Rerun", [f"old{i}" for i in range(4)])
        failing = _reader(cluster, "Rerun", consumerGroup="streamloss-group")
        lenient = _reader(cluster, "Rerun", failOnDataLoss="false")
        try:
            first = failing.initialOffset()
            assert first == {"Rerun": {"broker-a:0": 0}}
            end = failing.latestOffset(first, ReadAllAvailable())
            assert end["Rerun"] == {"broker-a:0": 4}
            assert end[MARKS_KEY]["Rerun"]["broker-a:0"][0] == 3  # the message at end - 1
            send_bodies(cluster, "Rerun", ["old4"])
            second = failing.latestOffset(end, ReadAllAvailable())  # the same queue, continued
            assert second["Rerun"] == {"broker-a:0": 5}
            assert second[MARKS_KEY] == end[MARKS_KEY]  # the mark stands: no new pull to make one
            failing.commit(second)

            recreate_topic(cluster, "Rerun")
            send_bodies(cluster, "Rerun", [f"new{i}" for i in range(8)])
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

    from rocketstore.spark.stream_source import FROM_KEY, MARKS_KEY

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Shrunk", 1)
        send_bodies(cluster, "Shrunk", [f"old{i}" for i in range(6)])
        failing, lenient = _reader(cluster, "Shrunk"), _reader(cluster, "Shrunk", failOnDataLoss="false")
        try:
            end = failing.latestOffset(failing.initialOffset(), ReadAllAvailable())
            send_bodies(cluster, "Shrunk", ["old6"])
            second = failing.latestOffset(end, ReadAllAvailable())
            assert second["Shrunk"] == {"broker-a:0": 7} and second[MARKS_KEY]["Shrunk"]["broker-a:0"][0] == 5

            recreate_topic(cluster, "Shrunk")
            send_bodies(cluster, "Shrunk", [f"new{i}" for i in range(6)])  # 6 < 7: the offsets moved back
            capfd.readouterr()
            moved = lenient.latestOffset(second, ReadAllAvailable())
            assert "offsets moved back" in capfd.readouterr().err
            assert moved["Shrunk"] == {"broker-a:0": 6}
            # the mark at 5 was of the old queue: the loss was reported once and the new queue is read from its
            # min offset (FROM_KEY); the mark now is the new queue's message at 5, not the old one's
            assert moved[FROM_KEY] == {"Shrunk": {"broker-a:0": 0}}
            assert moved[MARKS_KEY]["Shrunk"]["broker-a:0"][0] == 5
            assert moved[MARKS_KEY]["Shrunk"]["broker-a:0"] != second[MARKS_KEY]["Shrunk"]["broker-a:0"]
            send_bodies(cluster, "Shrunk", ["new6", "new7"])
            following = failing.latestOffset(moved, ReadAllAvailable())
            assert following["Shrunk"] == {"broker-a:0": 8}
            assert following[MARKS_KEY]["Shrunk"]["broker-a:0"] == moved[MARKS_KEY]["Shrunk"]["broker-a:0"]
        finally:
            failing.stop()
            lenient.stop()
