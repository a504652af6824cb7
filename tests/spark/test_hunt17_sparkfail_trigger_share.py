"""maxOffsetsPerTrigger shared between many queues: every queue with a backlog advances.

The share was ``backlog * limit // total`` with what the rounding left handed out in key order, so a queue
whose share rounded to 0 (a small backlog beside a busy queue, or more queues than the limit) got nothing
trigger after trigger while the first queues in key order took the remainder: it starved until those were
drained, for good on a busy topic.  Now each queue with a backlog gets at least one entry (in turn, when
there are more such queues than the limit), and the rest is shared in proportion to the backlogs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, send_bodies

from rocketstore.spark.stream_options import limit_offsets

pytestmark = pytest.mark.spark


def _taken(start: dict, end: dict) -> dict[str, int]:
    return {key: end["T"][key] - start["T"].get(key, 0) for key in end["T"]}


def test_a_small_queue_beside_a_busy_one_is_read_every_trigger() -> None:
    start = {"T": {"broker-a:0": 0, "broker-a:1": 0, "broker-a:2": 0}}
    latest = {"T": {"broker-a:0": 1000, "broker-a:1": 5, "broker-a:2": 5}}
    for _ in range(5):  # the busy queue keeps growing
        end = limit_offsets(start, latest, 10)
        taken = _taken(start, end)
        assert sum(taken.values()) == 10
        assert all(n >= 1 for n in taken.values()), taken
        assert taken["broker-a:0"] > taken["broker-a:1"]  # still in proportion to the backlogs
        start = end
        latest = {"T": {**latest["T"], "broker-a:0": latest["T"]["broker-a:0"] + 100}}
    assert start["T"]["broker-a:1"] == start["T"]["broker-a:2"] == 5


def test_more_queues_than_the_limit_take_turns() -> None:
    keys = [f"broker-a:{i}" for i in range(12)]
    start = {"T": {k: 0 for k in keys}}
    latest = {"T": {k: 50 for k in keys}}
    for _ in range(3):  # 12 queues, 5 entries a trigger: every queue within 3 triggers
        end = limit_offsets(start, latest, 5)
        assert sum(_taken(start, end).values()) == 5
        start = end
    assert all(start["T"][k] >= 1 for k in keys), start
    # and a limit the backlog does not reach takes everything
    assert limit_offsets(start, latest, 10_000) == latest


def test_a_stream_with_more_queues_than_its_limit_reads_every_queue_early(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("SparkfailShare", 4)
        send_bodies(cluster, "SparkfailShare", [f"m{i}" for i in range(12)])  # 3 on each queue
        seen: dict[int, set[int]] = {}

        def record(df: Any, batch_id: int) -> None:
            seen[batch_id] = {r["queueId"] for r in df.select("queueId").collect()}

        query = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                 .option("subscribe", "SparkfailShare").option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "2").load()
                 .writeStream.foreachBatch(record).option("checkpointLocation", str(tmp_path / "ckpt"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
    assert sorted(seen) == list(range(6))
    # two entries a trigger, four queues: the first two triggers read all four (before, queues 2 and 3
    # waited until 0 and 1 were drained)
    assert seen[0] | seen[1] == {0, 1, 2, 3}, seen
