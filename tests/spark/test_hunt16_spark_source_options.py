"""Options of the ``rocketmq`` source and sink that cannot work are refused when the options are parsed (on
the driver, before any task), as the Java clients refuse them before they start: a nameServer address without
a usable port, and consumer or producer group names outside RocketMQ's charset (the broker refused the
consumer group's offset commit only after the first batch, and stored messages from any producer group)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore.spark.stream_options import SinkOptions, SourceOptions, SparkOptionError

pytestmark = pytest.mark.spark

SOURCE = {"subscribe": "TopicA"}


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:x", "127.0.0.1:0", "127.0.0.1:65536",
                                     "127.0.0.1:9876;:9876"])
def test_a_name_server_address_without_a_port_is_refused(address: str) -> None:
    with pytest.raises(SparkOptionError, match="option nameServer: '.*' is not host:port"):
        SourceOptions.parse({**SOURCE, "nameServer": address}, streaming=True)
    with pytest.raises(SparkOptionError, match="option nameServer: '.*' is not host:port"):
        SinkOptions.parse({"nameServer": address, "topic": "TopicA"})


def test_name_server_lists_and_ipv6_addresses_are_taken() -> None:
    options = SourceOptions.parse({**SOURCE, "nameServer": " 127.0.0.1:9876 ; [::1]:9877 ;"}, streaming=False)
    assert options.name_server == "127.0.0.1:9876;[::1]:9877"


def test_group_names_outside_rocketmqs_charset_are_refused() -> None:
    with pytest.raises(SparkOptionError, match=r"option consumerGroup: the specified group\[my group\] contains "
                                               "illegal characters"):
        SourceOptions.parse({**SOURCE, "nameServer": "127.0.0.1:9876", "consumerGroup": "my group"},
                            streaming=True)
    with pytest.raises(SparkOptionError, match=r"option producerGroup: the specified group\[a.b\] contains"):
        SinkOptions.parse({"nameServer": "127.0.0.1:9876", "producerGroup": "a.b"})
    with pytest.raises(SparkOptionError, match="option consumerGroup: the specified group is longer than"):
        SourceOptions.parse({**SOURCE, "nameServer": "127.0.0.1:9876", "consumerGroup": "g" * 256},
                            streaming=False)
    ok = SourceOptions.parse({**SOURCE, "nameServer": "127.0.0.1:9876", "consumerGroup": "%RETRY%g|x-1_2"},
                             streaming=True)
    assert ok.consumer_group == "%RETRY%g|x-1_2"
    assert SinkOptions.parse({"nameServer": "127.0.0.1:9876"}).producer_group == "spark-rocketmq-writer"
