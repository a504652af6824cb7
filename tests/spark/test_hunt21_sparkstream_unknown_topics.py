"""The streaming ``rocketmq`` source and topics the name servers do not route: a topic named by ``subscribe`` /
``assign`` that they do not know is a WARN naming it, once (the stream waits for it), and an error for a
Trigger.AvailableNow query that never read it (it would read nothing and succeed: ``pipeline archive
--available-now --topic Typo`` said "0 messages archived"); a topic deleted while streaming, one that comes back
and queues added are each told once on stderr; a bad option value fails when the query is defined."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, send_bodies

from rocketstore.spark.stream_options import SourceOptions

pytestmark = pytest.mark.spark


def _reader(cluster: LocalCluster, **extra: str) -> Any:
    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "startingOffsets": "earliest",
                                   "fetchOffset.numRetries": "0", **extra}, streaming=True)
    return BrokerStreamReader(options, source_schema())


def test_unknown_deleted_and_growing_topics_are_told_once(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Present", 1)
        send_bodies(cluster, "Present", ["a", "b"])
        reader = _reader(cluster, subscribe="Present,Typo")
        try:
            start = reader.initialOffset()
            end = reader.latestOffset(start, ReadAllAvailable())
            reader.latestOffset(end, ReadAllAvailable())
            err = capfd.readouterr().err
            assert err.count("WARN topic 'Typo' (option subscribe): the name servers") == 1, err
            assert "do not know it" in err and "Present" not in err
        finally:
            reader.stop()


def test_a_deleted_topic_and_added_queues_are_told(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rocketstore.client.admin import AdminClient

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Going", 1)
        cluster.create_topic("Growing", 1)
        reader = _reader(cluster, subscribe="Going,Growing")
        try:
            start = reader.initialOffset()
            assert capfd.readouterr().err == ""

            async def drop() -> None:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.delete_topic("Going")

            asyncio.run(drop())
            cluster.create_topic("Growing", 3)
            end = reader.latestOffset(start, ReadAllAvailable())
            end = reader.latestOffset(end, ReadAllAvailable())  # nothing changed: nothing more said
            err = capfd.readouterr().err
            assert err.count("WARN topic 'Going' is no longer routed") == 1, err
            assert err.count("topic 'Growing' has new queues broker-a:1, broker-a:2") == 1, err

            cluster.create_topic("Going", 1)
            reader.latestOffset(end, ReadAllAvailable())
            assert "topic 'Going' is routed by the name servers now (1 queue(s))" in capfd.readouterr().err
        finally:
            reader.stop()


def test_available_now_of_an_unknown_topic_fails_naming_it(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Real", 1)
        send_bodies(cluster, "Real", ["x"])
        query = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                 .option("subscribe", "Real,Typo").option("startingOffsets", "earliest")
                 .option("fetchOffset.numRetries", "0").load().selectExpr("CAST(body AS STRING) AS body")
                 .writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        try:
            with pytest.raises(Exception, match=r"option subscribe names 'Typo', which the name servers .* do not "
                                                r"know \(no route\): a query with Trigger.AvailableNow"):
                query.awaitTermination()
        finally:
            query.stop()

def test_assigned_queues_a_topic_does_not_have_are_told(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Two", 2)
        reader = _reader(cluster, assign='{"Two": [0, 7, "broker-b:1"]}')
        try:
            start = reader.initialOffset()
            assert list(start["Two"]) == ["broker-a:0"]
            err = capfd.readouterr().err
            assert "WARN option assign names queue(s) 7, broker-b:1 of topic 'Two', which it does not have " \
                   "(broker-a:0, broker-a:1)" in err, err
        finally:
            reader.stop()
