"""How the ``rocketmq`` sink fails: a failed task's error says what it sent before failing (Spark's abort only
sees the tasks that finished); a row the broker would refuse for other reasons than size fails the task before
any of its batch is sent, while a batch refused for its size (4.9.3's SYSTEM_ERROR "message size exceeded"
too) is split; a ``topic`` column of another type is ignored when the ``topic`` option is given."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.spark.sink import BrokerBatchWriter, BrokerStreamWriter, SinkCommitMessage, SinkOptions

pytestmark = pytest.mark.spark

#: 4 bodies of this size make a batch body within 64 KiB whose stored records (each with the topic, hosts and
#: batch properties) are not: the broker answers SYSTEM_ERROR "message size exceeded", as 4.9.3's encoder
_SPLIT_BODY = 16256


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("sink2") / "store",
                      store_overrides={"max_message_size": 64 << 10}) as cluster:
        yield cluster


def _write(df: Any, cluster: LocalCluster, topic: str, **options: str) -> None:
    writer = df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.mode("append").save()


def test_a_failed_task_says_what_it_sent_and_sends_nothing_of_the_batch_with_a_bad_row(
        spark: Any, small: LocalCluster) -> None:
    topic = "Sink2Partial"
    small.create_topic(topic, 1)
    rows = [(f"m{i}", {"k": ""} if i == 3 else None) for i in range(6)]  # an empty value: MESSAGE_ILLEGAL
    df = spark.createDataFrame(rows, "body string, properties map<string,string>").coalesce(1)
    with pytest.raises(Exception) as failed:
        _write(df, small, topic, batchMessages="2")
    text = str(failed.value)
    assert "row 3 of partition 0: The name or value of property can not be empty" in text
    # rows 0 and 1 went in the first batch; row 2, in the batch with row 3, was not sent
    assert "partition 0 sent 2 messages, 4 body bytes in 1 sends (Sink2Partial=2) before this failure" in text
    assert sorted(m.body for m in wait_stored(small, topic, 2, "the batch before the bad row", queues=1)) \
        == [b"m0", b"m1"]


def test_a_batch_whose_stored_records_exceed_max_message_size_is_split(spark: Any, small: LocalCluster) -> None:
    topic = "Sink2Split"  # (the length of the topic counts in the stored records: _SPLIT_BODY is sized for it)
    small.create_topic(topic, 1)
    bodies = [f"{i}".ljust(_SPLIT_BODY, "x") for i in range(4)]
    df = spark.createDataFrame([(b,) for b in bodies], "body string").coalesce(1)
    _write(df, small, topic)
    assert sorted(m.body.decode() for m in wait_stored(small, topic, 4, "the split batch", queues=1)) == bodies


def test_a_topic_column_of_another_type_is_ignored_when_the_option_names_the_topic(
        spark: Any, small: LocalCluster) -> None:
    topic = "Sink2TopicOption"
    small.create_topic(topic, 1)
    df = spark.createDataFrame([("a", 7)], "body string, topic int").coalesce(1)
    _write(df, small, topic)
    assert [m.body for m in wait_stored(small, topic, 1, "the row", queues=1)] == [b"a"]
    with pytest.raises(Exception, match="column topic is int"):
        df.write.format("rocketmq").option("nameServer", small.namesrv_addr).mode("append").save()
    assert len(stored_messages(small, topic, 1)) == 1


def test_the_abort_line_counts_the_tasks_that_finished_only(capsys: pytest.CaptureFixture[str]) -> None:
    options = SinkOptions.parse({"nameServer": "127.0.0.1:9876", "topic": "T"})
    finished = SinkCommitMessage(0, message_count=2, body_bytes=10, send_count=1, per_topic={"T": 2})
    BrokerBatchWriter(options, None, "v").abort([finished, None])  # type: ignore[arg-type]
    BrokerStreamWriter(options, None, "v").abort([None, finished, None], 5)  # type: ignore[arg-type]
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith(" aborted: the 1 tasks that finished sent 2 messages, 10 body bytes in 1 sends (T=2); "
                           "1 did not finish: a failed task's error says what it sent before failing "
                           "(they stay on the broker)")
    assert err[1].startswith("rocketmq sink: batch 5 aborted: the 1 tasks that finished sent 2 messages")
    assert "2 did not finish" in err[1]
