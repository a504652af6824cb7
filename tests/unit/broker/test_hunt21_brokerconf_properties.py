"""A 4.9.3 user's broker.conf read as 4.9.3 reads it (Properties.load, then MixAll.properties2Object): line
continuations, escapes, a byte order mark, CRLF ends, the samples of 4.9.3's distribution/conf, and integer
values checked as Integer.parseInt / Long.parseLong check them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.config import load_broker_conf
from rocketstore.errors import StoreConfigError
from rocketstore.message.java_properties import format_properties, parse_properties_text

# the keys of 4.9.3's distribution/conf/broker.conf (spaces around "=") and 2m-2s-async/broker-a-s.properties
SAMPLE_BROKER_CONF = ("brokerClusterName = DefaultCluster\nbrokerName = broker-a\nbrokerId = 0\n"
                      "deleteWhen = 04\nfileReservedTime = 48\nbrokerRole = ASYNC_MASTER\n"
                      "flushDiskType = ASYNC_FLUSH\n")
SAMPLE_SLAVE = ("#  Licensed to the Apache Software Foundation (ASF)\nbrokerClusterName=DefaultCluster\n"
                "brokerName=broker-a\nbrokerId=1\ndeleteWhen=04\nfileReservedTime=48\nbrokerRole=SLAVE\n"
                "flushDiskType=ASYNC_FLUSH\n")


def _load(tmp_path: Path, text: str, encoding: str = "utf-8"):  # type: ignore[no-untyped-def]
    conf = tmp_path / "broker.conf"
    conf.write_bytes(text.encode(encoding))
    return load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))


@pytest.mark.parametrize("text, role, broker_id", [(SAMPLE_BROKER_CONF, "ASYNC_MASTER", 0),
                                                   (SAMPLE_SLAVE, "SLAVE", 1)])
def test_the_samples_of_4_9_3_load_with_their_values(tmp_path: Path, text: str, role: str, broker_id: int) -> None:
    broker, store, _ = _load(tmp_path, text)
    assert (broker.broker_cluster_name, broker.broker_name, broker.broker_id) == ("DefaultCluster", "broker-a",
                                                                                  broker_id)
    assert (store.delete_when, store.file_reserved_time_h, store.broker_role, store.flush_disk_type) == (
        "04", 48, role, "ASYNC_FLUSH")


def test_a_continued_line_is_one_value(tmp_path: Path) -> None:
    # Properties.load joins the lines (the backslash and the next line's leading blanks dropped); the reader
    # took "127.0.0.1:9876;\" as the address list and "127.0.0.1:9877" as a key of its own
    broker, _, props = _load(tmp_path, "brokerName=broker-a\nnamesrvAddr=127.0.0.1:9876;\\\n"
                                       "    127.0.0.1:9877\nlistenPort=\\\n  10950\n")
    assert broker.namesrv_addrs == ["127.0.0.1:9876", "127.0.0.1:9877"]
    assert broker.listen_port == 10950
    assert "127.0.0.1:9877" not in props


def test_escapes_are_read_as_java_reads_them(tmp_path: Path) -> None:
    text = ("brokerName=broker\\u002Da\nbrokerClusterName=Cluster\\ One\nmsgTraceTopicName=T\\\\x\n"
            "storePathCommitLog=/data/commit\\:log\n")
    broker, store, _ = _load(tmp_path, text)
    assert broker.broker_name == "broker-a"
    assert broker.broker_cluster_name == "Cluster One"
    assert broker.msg_trace_topic_name == "T\\x"
    assert store.store_path_commit_log == "/data/commit:log"


def test_a_byte_order_mark_and_crlf_ends_do_not_hide_the_first_key(tmp_path: Path) -> None:
    broker, _, _ = _load(tmp_path, "\ufeffbrokerClusterName=Windows\r\nbrokerName=broker-w\r\nlistenPort=10960\r\n")
    assert (broker.broker_cluster_name, broker.broker_name, broker.listen_port) == ("Windows", "broker-w", 10960)


def test_java_separators_and_comments() -> None:
    assert parse_properties_text("a = = b\n! c=1\n  # d=2\nk\\=ey:v\ne\tf\ng\\\n#h\n") == {
        "a": "= b", "k=ey": "v", "e": "f", "g#h": ""}


@pytest.mark.parametrize("line, name", [("mappedFileSizeCommitLog=99999999999", "mappedFileSizeCommitLog"),
                                        ("listenPort=10_911", "listenPort"),
                                        ("registerNameServerPeriod=3000000000", "registerNameServerPeriod")])
def test_an_integer_java_refuses_is_an_error(tmp_path: Path, line: str, name: str) -> None:
    # Python's int() took them: 4.9.3's Integer.parseInt refuses them (a 93 GiB commitlog segment was made)
    with pytest.raises(StoreConfigError, match=f"{name}=.* is not an integer"):
        _load(tmp_path, f"brokerName=b\n{line}\n")


def test_a_long_property_takes_a_long(tmp_path: Path) -> None:
    broker, _, _ = _load(tmp_path,
                         "brokerName=b\ntransactionTimeOut=3000000000\nbrokerId=+2\nbrokerRole=SLAVE\n")
    assert (broker.transaction_timeout_ms, broker.broker_id) == (3_000_000_000, 2)


def test_written_values_read_back_unchanged() -> None:
    values = {"storePathRootDir": "C:\\rocketmq\\store", "brokerName": "b", "autoCreateTopicEnable": True}
    assert parse_properties_text(format_properties(values)) == {**values, "autoCreateTopicEnable": "true"}
