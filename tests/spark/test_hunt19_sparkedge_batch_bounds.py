"""Batch reads that could only ever be empty are refused, as Spark's Kafka source refuses them: the
``rocketmq-store`` source's startingOffsets=latest / endingOffsets=earliest, and a topic named in
``topics`` (store) or ``subscribe`` / ``assign`` (broker) that does not exist, instead of reading a misspelt
name as an empty topic.  A topic created but never written to, and a pattern matching nothing, still read
as empty."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A broker whose store holds topic Full (3 messages) and topic Made (created, never written to)."""
    with LocalCluster(tmp_path_factory.mktemp("bounds") / "store") as cluster:
        cluster.create_topic("Made", queues=2)
        send_bodies(cluster, "Full", ["a", "b", "c"])
        cluster.run(cluster.broker.config_written())  # config/topics.json holds Made
        yield cluster


def _planned(path: str, **options: str) -> list[Any]:
    opts = StoreReadOptions.parse({"path": path, **options})
    with MessageStore.open(opts.path, opts.config, read_only=True) as store:
        return plan_ranges(store, opts)


@pytest.mark.parametrize(("option", "value"), [("startingOffsets", "latest"), ("endingOffsets", "earliest"),
                                               ("startingOffsets", " LATEST ")])
def test_store_source_refuses_offsets_that_read_nothing(made: LocalCluster, option: str, value: str) -> None:
    with pytest.raises(StoreConfigError, match=f"{option}={value.strip().lower()} would read nothing"):
        StoreReadOptions.parse({"path": made.store_dir, option: value})


def test_store_source_fails_on_a_named_topic_the_store_does_not_have(made: LocalCluster) -> None:
    with pytest.raises(StoreConfigError, match=r"option topics names 'Ful', which the store .* does not have "
                                               r"\(its topics: .*Full"):
        _planned(made.store_dir, topics="Full,Ful")
    assert sum(r.record_count for r in _planned(made.store_dir, topics="Full")) == 3
    assert _planned(made.store_dir, topics="Made") == []  # created, empty: in config/topics.json
    assert _planned(made.store_dir, topicPattern="Nothing.*") == []


def test_store_source_missing_topic_fails_the_spark_read(spark: Any, load: Any, made: LocalCluster) -> None:
    with pytest.raises(Exception, match="option topics names 'NoSuchTopic'"):
        load(made.store_dir, topics="NoSuchTopic").count()
    with pytest.raises(Exception, match="startingOffsets=latest would read nothing"):
        load(made.store_dir, topics="Full", startingOffsets="latest").count()


def _partitions(cluster: LocalCluster, **options: str) -> list[Any]:
    parsed = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "fetchOffset.numRetries": "0", **options},
                                 streaming=False)
    return list(BrokerBatchReader(parsed, source_schema()).partitions())


@pytest.mark.parametrize(("option", "value"), [("subscribe", "Full,NoSuchTopic"),
                                               ("assign", '{"NoSuchTopic": [0], "Full": [0]}')])
def test_broker_batch_read_fails_on_a_topic_the_name_servers_do_not_know(made: LocalCluster, option: str,
                                                                         value: str) -> None:
    with pytest.raises(SparkOptionError, match=f"option {option} names 'NoSuchTopic', which the name servers "
                                               r".* do not know"):
        _partitions(made, **{option: value})


def test_broker_batch_read_of_an_empty_topic_or_unmatched_pattern_is_empty(made: LocalCluster) -> None:
    assert [p.value for p in _partitions(made, subscribe="Made")] == [None]
    assert [p.value for p in _partitions(made, subscribePattern="Nothing.*")] == [None]
    assert len(_partitions(made, subscribe="Full")) >= 1


def test_store_source_reads_a_system_topic_without_queues_as_empty(made: LocalCluster) -> None:
    assert _planned(made.store_dir, topics="Full,RMQ_SYS_TRACE_TOPIC") != []
