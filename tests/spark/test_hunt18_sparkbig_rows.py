"""Big rows through the Spark sources and sink: bodies near maxMessageSize (4 MiB), compressed bodies that
inflate to megabytes, properties near their 32 KiB limit and many properties, one 4 MiB record among small
ones; the broker source cuts its Arrow batches by bytes as well as by rows, as the store source does."""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import SMALL_STORE, pull_all

from rocketstore.message.host import HostAddress
from rocketstore.message.properties import encode_properties
from rocketstore.message.record import Message, SysFlag, encode_record
from rocketstore.spark.arrow_decode import record_batch, record_batches
from rocketstore.spark.store_source import StoreDataSource, _arrow_schema, store_schema
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.spark.store_options import BATCH_MAX_BYTES
from rocketstore.spark.stream_options import PullRange, SourceOptions
from rocketstore.spark.stream_source import read_ranges, source_schema

pytestmark = pytest.mark.spark

MIB = 1 << 20
#: a body just under RocketMQ's default maxMessageSize (4 MiB) with room for the record's header
NEAR_MAX = 4 * MIB - 64 * 1024
HOST = HostAddress(b"\x7f\x00\x00\x01", 10911)


def _put(cluster: Any, topic: str, messages: list[Message]) -> None:
    cluster.create_topic(topic, 1)
    for m in messages:
        result = cluster.call(lambda m=m: cluster.broker.store.put(m))
        assert result.ok, result
    cluster.wait_dispatched()


def _broker_df(spark: Any, cluster: Any, topic: str) -> Any:
    return (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("subscribe", topic)
            .load())


def _store_df(load: Any, cluster: Any, topic: str) -> Any:
    return load(cluster.store_dir, topics=topic)


def test_broker_source_cuts_batches_of_inflated_megabyte_bodies_by_bytes(cluster: Any) -> None:
    """40 compressed records of 1 MiB each once inflated: 40 MiB of bodies, more than one Arrow batch may hold
    (BATCH_MAX_BYTES, 32 MiB); each batch stops at the record that reaches it."""
    raw = [bytes([i]) * MIB for i in range(40)]
    _put(cluster, "BigInflated", [Message.create("BigInflated", zlib.compress(b, 6), sys_flag=SysFlag.COMPRESSED)
                                  for b in raw])
    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "BigInflated"},
                                  streaming=False)
    batches = list(read_ranges(options, [PullRange("BigInflated", cluster.broker_name, 0, 0, len(raw))],
                               source_schema()))
    bodies = [b for batch in batches for b in batch.column("body").to_pylist()]
    assert bodies == raw  # inflated, in order, none lost at a cut
    assert len(batches) >= 2
    for batch in batches:
        body_bytes = sum(len(b) for b in batch.column("body").to_pylist())
        assert body_bytes < BATCH_MAX_BYTES + MIB  # cut at the record reaching the limit


def _store_batches(path: str) -> list[Any]:
    """The Arrow batches the rocketmq-store source's tasks yield for the store at *path* (executor side)."""
    reader = StoreDataSource({"path": path}).reader(store_schema())
    return [batch for p in reader.partitions() for batch in reader.read(p)]


def test_store_source_cuts_batches_of_inflated_megabyte_bodies_by_bytes(tmp_path: Path) -> None:
    """The store source cuts its chunks by stored bytes: 40 deflated 1 MiB bodies take ~40 KiB on disk, and
    are cut again once inflated, on a live store (read with recovery) and a closed one (read by spans)."""
    raw = [bytes([i]) * MIB for i in range(40)]
    config = StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE)
    with MessageStore.open(config.store_path_root_dir, config) as store:
        for b in raw:
            assert store.put(Message.create("BigInflated", zlib.compress(b, 6), sys_flag=SysFlag.COMPRESSED)).ok
        assert store.wait_dispatched(10)
        live = _store_batches(config.store_path_root_dir)
    closed = _store_batches(config.store_path_root_dir)
    for batches in (live, closed):
        assert [b for batch in batches for b in batch.column("body").to_pylist()] == raw
        assert len(batches) >= 2
        for batch in batches:
            assert sum(len(b) for b in batch.column("body").to_pylist()) <= BATCH_MAX_BYTES
            assert batch.column("sysFlag").to_pylist() == [SysFlag.COMPRESSED] * batch.num_rows


def test_one_near_max_record_among_small_ones_reads_whole_from_both_sources(spark: Any, load: Any,
                                                                              cluster: Any) -> None:
    big = os.urandom(NEAR_MAX)
    bodies = [b"small 0", b"small 1", big, b"small 3", zlib.compress(big, 1)]
    messages = [Message.create("BigAmongSmall", b) for b in bodies]
    _put(cluster, "BigAmongSmall", messages)
    for df in (_broker_df(spark, cluster, "BigAmongSmall"), _store_df(load, cluster, "BigAmongSmall")):
        got = [bytes(r["body"]) for r in df.orderBy("queueOffset").select("body").collect()]
        assert got == bodies


def test_properties_near_32_kib_and_many_properties_come_back_whole(spark: Any, load: Any, cluster: Any) -> None:
    long_value = "v" * 32_000  # the properties string stays under 32 KiB (Short.MAX_VALUE bytes)
    many = {f"key{i:04d}": f"value{i}" for i in range(1500)}
    _put(cluster, "BigProps", [Message.create("BigProps", b"long", properties={"LONG": long_value}),
                               Message.create("BigProps", b"many", properties=dict(many))])
    for df in (_broker_df(spark, cluster, "BigProps"), _store_df(load, cluster, "BigProps")):
        rows = {bytes(r["body"]): dict(r["properties"]) for r in df.select("body", "properties").collect()}
        assert rows[b"long"]["LONG"] == long_value
        assert {k: v for k, v in rows[b"many"].items() if k.startswith("key")} == many


def test_sink_sends_near_max_rows_alone_and_keeps_the_order(spark: Any, cluster: Any) -> None:
    """Rows above the sink's batch budget (1 MiB) go one per send, those around them in batches, in order."""
    cluster.create_topic("BigSink", 1)
    bodies = [b"a", b"b", os.urandom(NEAR_MAX), b"c", os.urandom(3 * MIB // 2), os.urandom(3 * MIB // 2), b"d"]
    df = spark.createDataFrame([(b,) for b in bodies], "body binary").coalesce(1)
    df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "BigSink") \
        .mode("append").save()
    stored = sorted(pull_all(cluster.namesrv_addr, "BigSink", expected=len(bodies)), key=lambda m: m.queue_offset)
    assert [m.body for m in stored] == bodies


def test_record_batches_cut_with_a_tag_filter_keeps_each_row_whole() -> None:
    """Cut where the inflated bodies pass the budget, the other columns are cut at the same rows, and the
    tag filter drops the same records it drops from one batch."""
    schema = _arrow_schema(store_schema())
    raws = []
    for i in range(12):
        m = Message("Cut", zlib.compress(bytes([i]) * MIB, 6), queue_id=0, sys_flag=SysFlag.COMPRESSED)
        raw, _ = encode_record(m, encode_properties({"TAGS": "A" if i % 3 else "B", "n": str(i)}),
                               commit_log_offset=1000 * i, store_host=HOST, born_host=HOST)
        raws.append(bytes(raw))
    positions = np.cumsum([0] + [len(r) for r in raws[:-1]])
    args = (b"".join(raws), positions, np.arange(12), schema)
    whole = record_batch(*args, tag_set={"A"})
    cut = record_batches(*args, tag_set={"A"}, max_body_bytes=3 * MIB)
    assert len(cut) > 1
    assert pa_rows(cut) == whole.to_pylist()
    assert all(sum(len(b) for b in batch.column("body").to_pylist()) <= 3 * MIB for batch in cut)


def pa_rows(batches: list[Any]) -> list[dict[str, Any]]:
    return [row for batch in batches for row in batch.to_pylist()]
