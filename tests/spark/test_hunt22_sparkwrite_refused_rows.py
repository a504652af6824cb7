"""A send the broker refuses names the row it refused: a row over the broker's maxMessageSize among small
ones fails the write with an error naming that row (its index in the partition and its UNIQ_KEY) besides
what the task sent before it; so is a row whose send fails for another reason."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, wait_stored

from rocketstore.client.errors import BrokerError
from rocketstore.spark.sink import SinkOptions, uniq_key_for, write_partition

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("sparkwrite") / "store",
                      store_overrides={"max_message_size": 64 << 10}) as cluster:
        yield cluster


def test_a_row_over_the_brokers_max_message_size_is_named_in_the_error(spark: Any, small: LocalCluster) -> None:
    topic = "Hunt22TooBig"
    small.create_topic(topic, 1)
    big = os.urandom(70 << 10)  # incompressible: the broker refuses it even compressed
    rows = [(b"a",), (b"b",), (big,), (b"c",)]
    df = spark.createDataFrame(rows, "body binary").coalesce(1)
    with pytest.raises(Exception) as failed:
        (df.write.format("rocketmq").option("nameServer", small.namesrv_addr).option("topic", topic)
         .mode("append").save())
    text = str(failed.value)
    assert "MESSAGE_ILLEGAL" in text
    assert "the failed send held row 2 of partition 0" in text
    # the batch of 4 was refused for its size and sent again in halves: the first half went in
    assert "partition 0 sent 2 messages" in text
    assert sorted(m.body for m in wait_stored(small, topic, 2, "the rows before the big one", queues=1)) \
        == [b"a", b"b"]


def test_a_row_whose_send_fails_for_another_reason_is_named(small: LocalCluster) -> None:
    """A DELAY level the broker cannot parse (4.9.3 answers SYSTEM_ERROR NumberFormatException) fails the
    row's send (alone, as a delayed row goes): the error names the row."""
    small.create_topic("Hunt22BadDelay", 1)
    props = pa.array([None, [("DELAY", "soon")]], pa.map_(pa.string(), pa.string()))
    batch = pa.record_batch({"body": ["ok", "late"], "properties": props})
    with pytest.raises(BrokerError, match="NumberFormatException") as failed:
        write_partition(SinkOptions(small.namesrv_addr, "Hunt22BadDelay"), "w22", 0, iter([batch]))
    notes = failed.value.__notes__
    assert f"rocketmq sink: the failed send held row 1 of partition 0 (UNIQ_KEY {uniq_key_for('w22', 0, 0, 1)}, " \
           "4 body bytes)" in notes
    assert any("partition 0 sent 1 messages" in n for n in notes)
