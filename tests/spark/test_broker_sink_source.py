"""The ``rocketmq`` sink and source against an in-process name server + broker (tests/integration's
LocalCluster): a DataFrame written to the broker comes back through the source with body, tags, keys and
properties intact; a refused send fails the write naming the status; consumer offsets are committed."""

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

from rocketstore.client import MessageQueue, PullConsumer
from rocketstore.spark.sink import uniq_key_for

pytestmark = pytest.mark.spark


def _rows(spark: Any) -> Any:
    from pyspark.sql.types import BinaryType, IntegerType, MapType, StringType, StructField, StructType

    schema = StructType([
        StructField("body", BinaryType()), StructField("tags", StringType()), StructField("keys", StringType()),
        StructField("properties", MapType(StringType(), StringType())), StructField("queueId", IntegerType()),
    ])
    data = [(f"body-{i}".encode() + bytes([0, 255, i]), f"Tag{i % 3}" if i % 4 else None, f"k{i} common",
             {"color": ["red", "blue"][i % 2], "n": str(i)} if i % 5 else None, i % 2) for i in range(40)]
    return spark.createDataFrame(data, schema).repartition(3)


def test_sink_then_source_round_trip_keeps_body_tags_keys_and_properties(spark: Any, cluster: LocalCluster,
                                                                         tmp_path: Path) -> None:
    df = _rows(spark)
    (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SparkRoundTrip")
     .mode("append").save())

    # the streaming source, Trigger.AvailableNow, into the memory sink
    stream = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
              .option("subscribe", "SparkRoundTrip").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "15").option("consumerGroup", "spark-rt").load())
    query = (stream.writeStream.format("memory").queryName("round_trip").trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    query.awaitTermination(120)
    assert query.exception() is None
    got = spark.sql("select * from round_trip").collect()
    progress = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert max(progress) <= 15 and sum(progress) == 40, progress

    sent = {(bytes(r["body"]), r["tags"], r["keys"], tuple(sorted((r["properties"] or {}).items())), r["queueId"])
            for r in df.collect()}
    back = set()
    for r in got:
        props = dict(r["properties"])
        assert props.pop("UNIQ_KEY") == r["uniqKey"] and len(r["uniqKey"]) == 32
        user = {k: v for k, v in props.items() if k in ("color", "n")}
        back.add((bytes(r["body"]), r["tags"], r["keys"], tuple(sorted(user.items())), r["queueId"]))
        assert r["topic"] == "SparkRoundTrip" and r["brokerName"] == cluster.broker_name
    assert back == sent and len(got) == 40
    assert len({r["uniqKey"] for r in got}) == 40

    # the batch source reads the same messages; tags filter like a subscription
    batch = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
             .option("subscribe", "SparkRoundTrip").option("tags", "Tag1 || Tag2").load())
    tagged = batch.select("tags").collect()
    assert sorted(r["tags"] for r in tagged) == sorted(s[1] for s in sent if s[1] in ("Tag1", "Tag2"))

    # Spark commits a batch to the source when it plans the next one, so the broker holds the group's
    # offsets as of the second-to-last batch: 30 of the 40 messages, never past a queue's max offset
    async def committed() -> dict[int, tuple[int, int]]:
        async with PullConsumer(cluster.namesrv_addr, "spark-rt") as consumer:
            out = {}
            for mq in await consumer.queues("SparkRoundTrip"):
                out[mq.queue_id] = (await consumer.committed_offset(mq), await consumer.max_offset(mq))
            return out

    offsets = asyncio.run(committed())
    assert sum(c for c, _ in offsets.values()) == sum(progress[:-1]), (offsets, progress)
    assert all(0 <= c <= m for c, m in offsets.values()), offsets


def test_sink_fails_naming_why_a_topic_is_refused(spark: Any, cluster: LocalCluster) -> None:
    # refused before sending, in the words of Java's Validators.isNotAllowedSendTopic, as Producer.send does
    df = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(Exception, match=r"Sending message to topic\[SCHEDULE_TOPIC_XXXX\] is forbidden\."):
        (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr)
         .option("topic", "SCHEDULE_TOPIC_XXXX").mode("append").save())


def test_sink_refuses_a_dataframe_without_body_or_topic(spark: Any, cluster: LocalCluster) -> None:
    with pytest.raises(Exception, match="body"):
        (spark.createDataFrame([("x",)], "payload string").write.format("rocketmq")
         .option("nameServer", cluster.namesrv_addr).option("topic", "T").mode("append").save())
    with pytest.raises(Exception, match="topic"):
        (spark.createDataFrame([("x",)], "body string").write.format("rocketmq")
         .option("nameServer", cluster.namesrv_addr).mode("append").save())


def test_uniq_keys_are_a_function_of_write_batch_partition_and_row() -> None:
    a = uniq_key_for("q", 3, 1, 7)
    assert a == uniq_key_for("q", 3, 1, 7) and len(a) == 32 and a == a.upper()
    assert len({a, uniq_key_for("q", 4, 1, 7), uniq_key_for("q", 3, 0, 7), uniq_key_for("q", 3, 1, 8)}) == 4
    assert MessageQueue("t", "b", 0) < MessageQueue("t", "b", 1)
