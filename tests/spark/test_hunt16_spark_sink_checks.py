"""The ``rocketmq`` sink against a broker that does not create topics on a send: a topic name the Java client
refuses is refused as such (not reported as a topic without a route), and rows with null columns."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.cli.pipeline_cmds import spark_error_line
from rocketstore.message.properties import PropertyName, parse_properties

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def strict_cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("strict") / "store", auto_create_topic_enable=False) as c:
        c.create_topic("Hunt16Sink", queues=2)
        yield c


def _write(df: Any, cluster: Any, **options: str) -> None:
    writer = df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


@pytest.mark.parametrize(("topic", "said"), [
    ("bad topic!", "The specified topic[bad topic!] contains illegal characters"),
    ("T" * 128, "The specified topic is longer than topic max length 127."),
])
def test_a_topic_the_client_refuses_is_named_as_such(spark: Any, strict_cluster: Any, topic: str,
                                                     said: str) -> None:
    df = spark.createDataFrame([("a",), ("b",)], "body string").coalesce(1)  # one task: a batch of two rows
    with pytest.raises(Exception) as info:
        _write(df, strict_cluster, topic=topic)
    line = spark_error_line(info.value)
    assert line.startswith("MessageIllegalError") and said in line, line


def test_null_columns_fall_back_and_a_null_body_names_its_row(spark: Any, strict_cluster: Any) -> None:
    df = spark.sql("SELECT 'x' AS body, CAST(NULL AS STRING) AS topic, CAST(NULL AS STRING) AS tags, "
                   "CAST(NULL AS STRING) AS keys, map('a', CAST(NULL AS STRING), 'b', 'v') AS properties, "
                   "CAST(NULL AS INT) AS queueId")
    _write(df, strict_cluster, topic="Hunt16Sink")
    [stored] = wait_stored(strict_cluster, "Hunt16Sink", 1, "the row with null columns")
    props = parse_properties(stored.properties_string)
    assert stored.body == b"x" and props.get("b") == "v" and "a" not in props
    assert PropertyName.TAGS not in props and PropertyName.KEYS not in props
    with pytest.raises(Exception) as info:
        _write(spark.sql("SELECT CAST(NULL AS BINARY) AS body"), strict_cluster, topic="Hunt16Sink")
    assert "SparkOptionError: row 0 of partition 0 has a null body" in spark_error_line(info.value)
    assert len(stored_messages(strict_cluster, "Hunt16Sink", 2)) == 1
