"""The ``rocketmq`` sink sends through the producer's public paths, as a Java producer would send its rows: a
batch carries its own WAIT (stored after every entry's properties, with CLUSTER), rows that disagree on WAIT
are not one batch, a row to a %RETRY% topic goes alone with its RECONSUME_TIME / MAX_RECONSUME_TIMES in the
header (so the broker counts it, and moves it to %DLQ% at its maximum), and a row with an empty body fails the
write, naming the row, as Java's Validators.checkMessage refuses it.  Real name server and broker."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.message.properties import PropertyName, encode_properties, parse_properties

pytestmark = pytest.mark.spark


def _write(spark: Any, cluster: LocalCluster, rows: list[tuple[object, ...]], schema: str, **options: str) -> None:
    writer = (spark.createDataFrame(rows, schema).coalesce(1).write.format("rocketmq")
              .option("nameServer", cluster.namesrv_addr))
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.mode("append").save()


def test_sink_batches_carry_their_wait_and_split_where_rows_disagree_on_it(spark: Any,
                                                                           cluster: LocalCluster) -> None:
    topic = "Hunt17SinkWait"
    cluster.create_topic(topic, 1)
    rows = [("w0", None), ("w1", None), ("n0", {"WAIT": "false"}), ("n1", {"WAIT": "false"}), ("w2", None),
            ("w3", None)]  # three batches of two (a single message is stored without WAIT)
    _write(spark, cluster, rows, "body string, properties map<string,string>", topic=topic)
    stored = wait_stored(cluster, topic, 6, "the sink's rows", queues=1)
    assert [m.body for m in stored] == [b"w0", b"w1", b"n0", b"n1", b"w2", b"w3"]  # the rows' order kept
    name = cluster.broker.config.broker_cluster_name
    for m in stored:
        wait = "false" if m.body.startswith(b"n") else "true"
        # the batch's own properties (its WAIT, and CLUSTER) after the entry's, as a Java producer's batch
        assert m.properties_string.endswith("\x02" + encode_properties({"WAIT": wait, "CLUSTER": name})), m


def test_sink_rows_to_a_retry_topic_carry_their_reconsume_times_in_the_header(spark: Any,
                                                                              cluster: LocalCluster) -> None:
    retry, dlq = "%RETRY%Hunt17SinkGroup", "%DLQ%Hunt17SinkGroup"
    cluster.create_topic(retry, 1)
    rows = [("again", {PropertyName.RECONSUME_TIME: "2", PropertyName.MAX_RECONSUME_TIMES: "16"}),
            ("again2", {PropertyName.RECONSUME_TIME: "1"}),
            ("dead", {PropertyName.RECONSUME_TIME: "3", PropertyName.MAX_RECONSUME_TIMES: "3"})]
    _write(spark, cluster, rows, "body string, properties map<string,string>", topic=retry)
    stored = {m.body: m for m in wait_stored(cluster, retry, 2, "the retry topic's rows", queues=1)}
    assert sorted(stored) == [b"again", b"again2"]
    assert stored[b"again"].reconsume_times == 2 and stored[b"again2"].reconsume_times == 1
    # read into the header (reconsume_times above), as DefaultMQProducerImpl.sendKernelImpl reads them, after it
    # wrote the properties string: the stored record keeps them
    assert parse_properties(stored[b"again2"].properties_string)[PropertyName.RECONSUME_TIME] == "1"
    dead = wait_stored(cluster, dlq, 1, "the row at its maximum in %DLQ%", queues=1)
    assert [(m.body, m.reconsume_times) for m in dead] == [(b"dead", 3)]


def test_sink_row_with_an_empty_body_fails_the_write_naming_it(spark: Any, cluster: LocalCluster) -> None:
    topic = "Hunt17SinkEmpty"
    cluster.create_topic(topic, 1)
    with pytest.raises(Exception, match=r"row 1 of partition 0 has an empty body: the message body length is zero"):
        _write(spark, cluster, [("a",), ("",), ("b",)], "body string", topic=topic)
    with pytest.raises(Exception, match=r"row 0 of partition 0 has an empty body"):
        _write(spark, cluster, [(b"",)], "body binary", topic=topic)
    cluster.wait_dispatched()
    assert stored_messages(cluster, topic, 1) == []  # nothing of either write was sent


def test_sink_to_the_schedule_topic_is_refused_before_sending(spark: Any, cluster: LocalCluster) -> None:
    """Replaces test_broker_sink_source's NO_PERMISSION expectation: Java's producer refuses the topic itself
    (Validators.isNotAllowedSendTopic), in these words, before any request reaches the broker."""
    with pytest.raises(Exception, match=r"Sending message to topic\[SCHEDULE_TOPIC_XXXX\] is forbidden\."):
        _write(spark, cluster, [("x",)], "body string", topic="SCHEDULE_TOPIC_XXXX")


def test_a_single_body_over_the_brokers_max_fails_the_write_and_a_compressible_one_goes_compressed(
        spark: Any, tmp_path: Path) -> None:
    """Replaces test_hunt13b_sink's too-big expectation: a single row's body of 4 KiB or more goes out
    zlib-compressed, as Java's producer sends it (tryToCompressMessage), so only an incompressible body over
    the broker's maxMessageSize is refused (MESSAGE_ILLEGAL)."""
    import os

    from rocketstore.message.record import SysFlag

    with LocalCluster(tmp_path / "store", store_overrides={"max_message_size": 64 << 10}) as cluster:
        cluster.create_topic("Hunt17SmallMax", 1)
        _write(spark, cluster, [("y" * (70 << 10),)], "body string", topic="Hunt17SmallMax")
        [stored] = wait_stored(cluster, "Hunt17SmallMax", 1, "the compressed row", queues=1)
        assert stored.sys_flag & SysFlag.COMPRESSED and len(stored.body) < 64 << 10
        with pytest.raises(Exception, match="MESSAGE_ILLEGAL"):
            _write(spark, cluster, [(os.urandom(70 << 10),)], "body binary", topic="Hunt17SmallMax")
        cluster.wait_dispatched()
        assert len(stored_messages(cluster, "Hunt17SmallMax", 1)) == 1
