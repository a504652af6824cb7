"""The ``rocketmq`` sink's optional ``flag`` column: each row's message goes out with that flag.

4.9.3's producer sends a message's flag (Message.getFlag) in SendMessageRequestHeader's ``flag`` field, and a
batch carries each message's own flag in its body; the broker stores it with the message.  The sink sent
every message with flag 0, so a topic copied through it (store source, whose ``flag`` column is an int, ->
sink) lost its messages' flags.  A null flag is 0, as a message that never set one.

No SparkSession: the writer's ``write`` is called as an executor calls it (outside a task: partition 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from pyspark.sql.types import IntegerType, StringType, StructField, StructType  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, wait_stored  # noqa: E402

from rocketstore.spark.sink import BrokerBatchWriter, SinkOptions, check_sink_schema  # noqa: E402
from rocketstore.spark.stream_options import SparkOptionError  # noqa: E402

pytestmark = pytest.mark.spark

#: Java ints, a negative one and the extremes included; None: the row sets no flag
FLAGS = [7, None, -3, 0x7FFFFFFF, -0x80000000, 1]


@pytest.mark.parametrize("batch_messages", [64, 1], ids=["batched", "single-sends"])
def test_each_rows_flag_is_stored_with_its_message(cluster: LocalCluster, batch_messages: int) -> None:
    topic = f"Hunt30SinkFlag{batch_messages}"
    cluster.create_topic(topic, 1)
    options = SinkOptions(cluster.namesrv_addr, topic, batch_messages=batch_messages)
    writer = BrokerBatchWriter(options, None)  # type: ignore[arg-type]
    bodies = [f"m{i}" for i in range(len(FLAGS))]
    writer.write(iter([pa.record_batch({"body": bodies, "flag": pa.array(FLAGS, pa.int32())})]))
    stored = {m.body.decode(): m.flag for m in wait_stored(cluster, topic, len(FLAGS), "the rows", queues=1)}
    assert stored == {b: (f or 0) for b, f in zip(bodies, FLAGS, strict=True)}


def test_the_flag_column_must_be_an_int() -> None:
    schema = StructType([StructField("body", StringType()), StructField("flag", IntegerType())])
    assert check_sink_schema(schema, {"topic": "T"}) is schema
    wrong = StructType([StructField("body", StringType()), StructField("flag", StringType())])
    with pytest.raises(SparkOptionError, match="column flag is string"):
        check_sink_schema(wrong, {"topic": "T"})
