"""The ``rocketmq`` sink refuses a row whose properties set TRAN_MSG=true: the broker keeps such a message as a
transaction's half message (in RMQ_SYS_TRANS_HALF_TOPIC), which no consumer of the topic ever sees and no
producer of the sink commits, so the write used to succeed while the row was never delivered."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.message.properties import parse_properties

pytestmark = pytest.mark.spark


def _write(spark: Any, cluster: LocalCluster, rows: list[tuple[object, ...]], topic: str) -> None:
    (spark.createDataFrame(rows, "body string, properties map<string,string>").coalesce(1).write
     .format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic).mode("append").save())


def test_a_row_marked_as_a_transaction_half_message_fails_the_write_naming_it(spark: Any,
                                                                               cluster: LocalCluster) -> None:
    topic = "Hunt19SinkTran"
    cluster.create_topic(topic, 1)
    with pytest.raises(Exception, match=r"row 1 of partition 0 sets property TRAN_MSG=true"):
        _write(spark, cluster, [("a", None), ("half", {"TRAN_MSG": "TRUE", "PGROUP": "g"}), ("b", None)], topic)
    # a TRAN_MSG that Boolean.parseBoolean reads as false makes no half message: sent as it is
    _write(spark, cluster, [("plain", {"TRAN_MSG": "false"})], topic)
    [stored] = wait_stored(cluster, topic, 1, "the row with TRAN_MSG=false", queues=1)
    assert stored.body == b"plain" and parse_properties(stored.properties_string)["TRAN_MSG"] == "false"
    assert stored_messages(cluster, "RMQ_SYS_TRANS_HALF_TOPIC", 1) == []


def test_the_topic_option_overrides_a_topic_column(spark: Any, cluster: LocalCluster) -> None:
    """As Kafka's sink: a DataFrame read from topic A (its ``topic`` column says A) written with option topic=B
    goes to B, not back into A."""
    source, target = "Hunt19SinkFrom", "Hunt19SinkTo"
    cluster.create_topic(source, 1)
    cluster.create_topic(target, 1)
    df = spark.createDataFrame([("x", source), ("y", None)], "body string, topic string").coalesce(1)
    df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", target) \
        .mode("append").save()
    assert sorted(m.body for m in wait_stored(cluster, target, 2, "both rows in the option's topic", queues=1)) \
        == [b"x", b"y"]
    assert stored_messages(cluster, source, 1) == []
