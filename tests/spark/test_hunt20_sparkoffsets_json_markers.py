"""-2 and -1 in the JSON form of startingOffsets / endingOffsets, as Spark's Kafka source takes them.

-2 is the queue's min offset (earliest), -1 its max offset (latest) when the query resolves its offsets.  A
batch read refuses -1 in startingOffsets and -2 in endingOffsets when the query is defined (that queue would
always read nothing, as startingOffsets=latest / endingOffsets=earliest, which are refused too); a streaming
query's startingOffsets takes both.  Any other negative number is refused.  Both sources: ``rocketmq-store``
(a store directory, batch only) and ``rocketmq`` (a broker, batch and streaming)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, send_bodies

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import StoreReadOptions, plan_ranges
from rocketstore.spark.stream_options import SourceOptions, SparkOptionError
from rocketstore.spark.stream_source import BrokerBatchReader, source_schema
from rocketstore.store.message_store import MessageStore

pytestmark = pytest.mark.spark

TOPIC = "Hunt20Markers"


@pytest.fixture(scope="module")
def two_queues(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A broker whose store holds TOPIC with 2 queues of 3 messages each (queue offsets 0..2)."""
    with LocalCluster(tmp_path_factory.mktemp("markers") / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)
        send_bodies(cluster, TOPIC, [f"m{i}" for i in range(6)])
        yield cluster


def _store_ranges(path: str, **options: str) -> list[tuple[int, int, int]]:
    opts = StoreReadOptions.parse({"path": path, "topics": TOPIC, **options})
    with MessageStore.open(opts.path, opts.config, read_only=True) as store:
        return [(r.queue_id, r.start, r.end) for r in plan_ranges(store, opts)]


def _broker_ranges(cluster: LocalCluster, **options: str) -> list[tuple[int, int, int]]:
    parsed = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": TOPIC,
                                  "fetchOffset.numRetries": "0", **options}, streaming=False)
    return [(r.queue_id, r.start, r.end) for p in BrokerBatchReader(parsed, source_schema()).partitions()
            for r in p.ranges]


_REFUSED = [("startingOffsets", {"0": -2, "1": -1}, "-1 \\(latest\\) for Hunt20Markers/1"),
            ("endingOffsets", {"0": -2, "1": -1}, "-2 \\(earliest\\) for Hunt20Markers/0")]


@pytest.mark.parametrize(("option", "queues", "match"), _REFUSED, ids=["start-latest", "end-earliest"])
def test_store_batch_refuses_latest_start_and_earliest_end_in_json(two_queues: LocalCluster, option: str,
                                                                   queues: dict[str, int], match: str) -> None:
    with pytest.raises(StoreConfigError, match=f"option {option} gives {match}: a batch read would read nothing"):
        StoreReadOptions.parse({"path": two_queues.store_dir, option: json.dumps({TOPIC: queues})})


@pytest.mark.parametrize(("option", "queues", "match"), _REFUSED, ids=["start-latest", "end-earliest"])
def test_broker_batch_refuses_latest_start_and_earliest_end_in_json(two_queues: LocalCluster, option: str,
                                                                    queues: dict[str, int], match: str) -> None:
    keyed = {f"broker-a:{q}" if q == "1" else q: o for q, o in queues.items()}  # both key forms are checked
    match = match.replace("Markers/1", "Markers/broker-a:1")
    with pytest.raises(SparkOptionError, match=f"option {option} gives {match}: a batch read would read nothing"):
        SourceOptions.parse({"nameServer": two_queues.namesrv_addr, "subscribe": TOPIC,
                             option: json.dumps({TOPIC: keyed})}, streaming=False)


def test_the_refusal_reaches_a_spark_read_of_either_source(spark: Any, load: Any, two_queues: LocalCluster) -> None:
    """Before, each read below counted only the other queue's 3 messages, silently."""
    start = json.dumps({TOPIC: {"0": -2, "1": -1}})
    with pytest.raises(Exception, match="option startingOffsets gives -1"):
        load(two_queues.store_dir, topics=TOPIC, startingOffsets=start).count()
    end = json.dumps({TOPIC: {"0": -2, "1": -1}})
    with pytest.raises(Exception, match="option endingOffsets gives -2"):
        (spark.read.format("rocketmq").option("nameServer", two_queues.namesrv_addr).option("subscribe", TOPIC)
         .option("endingOffsets", end).load().count())


def test_earliest_and_latest_markers_resolve_to_the_queues_min_and_max(two_queues: LocalCluster) -> None:
    options = {"startingOffsets": json.dumps({TOPIC: {"0": -2, "1": 1}}),
               "endingOffsets": json.dumps({TOPIC: {"0": 2, "1": -1}})}
    assert _store_ranges(two_queues.store_dir, **options) == [(0, 0, 2), (1, 1, 3)]
    assert sorted(_broker_ranges(two_queues, **options)) == [(0, 0, 2), (1, 1, 3)]
    both = {"startingOffsets": json.dumps({TOPIC: {"0": -2, "1": -2}}),
            "endingOffsets": json.dumps({TOPIC: {"0": -1, "1": -1}})}
    assert _store_ranges(two_queues.store_dir, **both) == [(0, 0, 3), (1, 0, 3)]
    assert sorted(_broker_ranges(two_queues, **both)) == [(0, 0, 3), (1, 0, 3)]


@pytest.mark.parametrize("option", ["startingOffsets", "endingOffsets"])
def test_other_negative_offsets_are_refused(two_queues: LocalCluster, option: str) -> None:
    given = json.dumps({TOPIC: {"0": -3}})
    with pytest.raises(StoreConfigError, match=r"offset -3 of 'Hunt20Markers'/0 is not an integer >= -2 "
                                               r"\(-2 earliest, -1 latest\)"):
        StoreReadOptions.parse({"path": two_queues.store_dir, option: given})
    for streaming in (False, True):
        if streaming and option == "endingOffsets":
            continue
        with pytest.raises(SparkOptionError, match=r"offset -3 of Hunt20Markers/0 is not an integer >= -2 "
                                                   r"\(a queue offset, or -2 earliest, -1 latest\)"):
            SourceOptions.parse({"nameServer": two_queues.namesrv_addr, "subscribe": TOPIC, option: given},
                                streaming=streaming)


def test_a_stream_starts_at_min_for_minus_two_and_at_max_for_minus_one(tmp_path: Path, archive_stream: Any,
                                                                       spark: Any) -> None:
    """A streaming query's startingOffsets may hold both: queue 0 is read from its min offset, queue 1 from its
    max offset when the query started (so only what was sent to it afterwards)."""
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)
        send_bodies(cluster, TOPIC, [f"old{i}" for i in range(6)])  # 3 a queue
        start = json.dumps({TOPIC: {"0": -2, "broker-a:1": -1}})
        archive_stream(cluster, tmp_path, TOPIC, startingOffsets=start)
        assert spark.read.parquet(str(tmp_path / "out")).count() == 3
        send_bodies(cluster, TOPIC, [f"new{i}" for i in range(4)])  # 2 a queue
        archive_stream(cluster, tmp_path, TOPIC, startingOffsets=start)  # resumes from its checkpoint
        bodies = [r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect()]
        assert len(bodies) == 7 and sorted(b for b in bodies if b.startswith("new")) == [f"new{i}" for i in range(4)]
