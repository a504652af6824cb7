"""Edge cases of the ``rocketmq`` source and sink met by users: a name server that cannot be reached is an
error (not an empty topic), and rows carrying a DELAY level are sent one by one (a batch refuses them)."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

pytestmark = pytest.mark.spark


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_batch_read_from_an_unreachable_name_server_fails_instead_of_reading_nothing(spark: Any) -> None:
    df = (spark.read.format("rocketmq").option("nameServer", f"127.0.0.1:{_closed_port()}")
          .option("subscribe", "AnyTopic").option("timeoutMs", "1000").load())
    with pytest.raises(Exception, match="No route info of this topic: AnyTopic"):
        df.count()


def test_a_topic_the_name_server_does_not_know_fails_a_batch_read(spark: Any, cluster: LocalCluster) -> None:
    df = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
          .option("subscribe", "NoSuchTopicYet").load())
    with pytest.raises(Exception, match="option subscribe names 'NoSuchTopicYet', which the name servers"):
        df.count()


def test_rows_with_a_delay_level_are_sent_alone_and_delivered_later(spark: Any, cluster: LocalCluster) -> None:
    rows = [(f"plain-{i}", None) for i in range(3)] + [(f"late-{i}", {"DELAY": "1"}) for i in range(3)]
    df = spark.createDataFrame(rows, "body string, properties map<string,string>").coalesce(1)
    (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SparkDelayed")
     .mode("append").save())

    def bodies() -> list[bytes]:
        got = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
               .option("subscribe", "SparkDelayed").load().select("body").collect())
        return sorted(bytes(r["body"]) for r in got)

    want = sorted(body.encode() for body, _ in rows)
    deadline = time.monotonic() + 60  # delay level 1 is one second
    got = bodies()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.5)
        got = bodies()
    assert got == want


def test_a_stream_planner_rides_out_a_name_server_outage_with_the_queues_it_knows(tmp_path: Path) -> None:
    from rocketstore.client import Producer
    from rocketstore.client.errors import ClientError
    from rocketstore.spark.stream_options import SourceOptions
    from rocketstore.spark.stream_source import _Planner

    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "blip-producer") as producer:
                for i in range(8):
                    await producer.send("Blip", f"m{i}".encode())

        asyncio.run(send())
        cluster.wait_dispatched()
        options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Blip"}, streaming=True)
        running, fresh = _Planner(options), _Planner(options)
        try:
            before = running.latest()
            assert sum(before["Blip"].values()) == 8
            cluster.run(cluster.namesrv.close())
            # a trigger of a running stream: the queues it knows, their offsets from the broker itself
            assert running.latest() == before
            # nothing known yet (a new query, a batch read): an error, not an empty topic
            with pytest.raises(ClientError, match="No route info of this topic: Blip"):
                fresh.latest()
        finally:
            running.close()
            fresh.close()


def test_a_queue_id_the_topic_does_not_have_is_named_in_the_error(spark: Any, cluster: LocalCluster) -> None:
    first = spark.createDataFrame([("a", 0)], "body string, queueId int")
    (first.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SparkQueues")
     .mode("append").save())
    bad = spark.createDataFrame([("b", 42)], "body string, queueId int")
    with pytest.raises(Exception, match="queueId 42 is not a writeable queue of topic 'SparkQueues'"):
        (bad.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SparkQueues")
         .mode("append").save())


def test_overwrite_mode_is_refused_instead_of_quietly_appending(spark: Any, cluster: LocalCluster) -> None:
    cluster.create_topic("SparkOverwrite", 1)  # a batch read of a topic the name server does not know fails
    df = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(Exception, match=r"only appends messages to topics; write with mode\('append'\)"):
        (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SparkOverwrite")
         .mode("overwrite").save())
    got = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
           .option("subscribe", "SparkOverwrite").load())
    assert got.count() == 0
