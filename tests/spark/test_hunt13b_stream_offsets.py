"""The streaming ``rocketmq`` source resumed from a checkpoint after its topic's offsets moved back on the
broker (the topic deleted and created again while the query was stopped): failOnDataLoss fails the query
with a message naming the queue, failOnDataLoss=false reads the queue from its min offset, and in neither case
does the query wait silently and then skip the new topic's messages."""

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


def test_a_recreated_topic_fails_the_resumed_query_instead_of_skipping_its_messages(
        spark: Any, archive_stream: Callable[..., None], tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Recreated", 1)
        send_bodies(cluster, "Recreated", [f"old{i}" for i in range(10)])
        archive_stream(cluster, tmp_path, "Recreated")
        recreate_topic(cluster, "Recreated")
        send_bodies(cluster, "Recreated", [f"new{i}" for i in range(3)])
        with pytest.raises(Exception, match=r"offsets moved back.*Recreated broker-a:0: from 10 to 3"):
            archive_stream(cluster, tmp_path, "Recreated")
        # reads the new queue from its min offset (0): nothing of it is skipped
        archive_stream(cluster, tmp_path, "Recreated", failOnDataLoss="false")
        send_bodies(cluster, "Recreated", [f"new{i}" for i in range(3, 12)])
        archive_stream(cluster, tmp_path, "Recreated")
        got = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == sorted([f"old{i}" for i in range(10)] + [f"new{i}" for i in range(12)])


def test_group_offsets_past_a_recreated_queue_start_it_from_the_beginning(tmp_path: Path) -> None:
    from rocketstore.client import MessageQueue
    from rocketstore.spark.stream_options import SourceOptions
    from rocketstore.spark.stream_source import _Planner

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Regrouped", 1)
        send_bodies(cluster, "Regrouped", [f"old{i}" for i in range(10)])
        options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Regrouped",
                                       "startingOffsets": "group", "consumerGroup": "regrouped"}, streaming=True)
        planner = _Planner(options)
        try:
            planner.session.commit_offsets({MessageQueue("Regrouped", "broker-a", 0): 10})
            assert planner.resolve(options.starting_offsets, default=-2) == {"Regrouped": {"broker-a:0": 10}}
            recreate_topic(cluster, "Regrouped")
            send_bodies(cluster, "Regrouped", [f"new{i}" for i in range(3)])
            # the group's offset 10 is past the new queue's end: start where a RocketMQ consumer of the group
            # would be moved to (the queue still has its first message: offset 0), not at 10
            assert planner.resolve(options.starting_offsets, default=-2) == {"Regrouped": {"broker-a:0": 0}}
        finally:
            planner.close()


def test_a_fresh_broker_session_commits_offsets_before_any_other_call(tmp_path: Path) -> None:
    from rocketstore.client import MessageQueue
    from rocketstore.spark.broker_io import BrokerSession

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("FirstCommit", 1)
        mq = MessageQueue("FirstCommit", "broker-a", 0)
        with BrokerSession(cluster.namesrv_addr, "first-commit") as session:
            session.commit_offsets({mq: 0})  # a restarted query's first call can be commit(): no consumer yet
        assert cluster.call(lambda: cluster.broker.offsets.offsets("first-commit", "FirstCommit")) == {0: 0}


def test_offsets_naming_a_queue_the_topic_does_not_have_are_refused(spark: Any, cluster: LocalCluster) -> None:
    cluster.create_topic("NamedQueues", 2)
    send_bodies(cluster, "NamedQueues", [f"m{i}" for i in range(8)])

    def read(starting: str) -> Any:
        return (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("subscribe", "NamedQueues").option("startingOffsets", starting).load())

    # a typo in the broker name used to read every queue from its start, silently
    with pytest.raises(Exception, match=r"offsets name broker_a:0 of topic 'NamedQueues': not among the queues "
                                        r"read \(broker-a:0, broker-a:1\)"):
        read('{"NamedQueues": {"broker_a:0": 3}}').count()
    assert read('{"NamedQueues": {"broker-a:0": 3, "1": 4}, "OtherTopic": {"0": 1}}').count() == 8 - 3 - 4
