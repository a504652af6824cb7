"""Compressed messages (sysFlag bit 0: a Java or C++ producer deflates bodies of 4 KiB or more) are read with
their bodies inflated, as a RocketMQ consumer's MessageDecoder gives them, by the ``rocketmq-store`` source on
a clean and on a live store and by the ``rocketmq`` broker source alike; sysFlag keeps the bit."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore.message.record import Message, SysFlag
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

pytestmark = pytest.mark.spark

PLAIN = "".join(f"line {i} of a compressible body\n" for i in range(400)).encode()


def _messages(topic: str) -> list[Message]:
    return [Message.create(topic, zlib.compress(PLAIN, 5), tags="Z", sys_flag=SysFlag.COMPRESSED),
            Message.create(topic, b"plain body", tags="P"),
            Message.create(topic, zlib.compress(b"", 5), tags="E", sys_flag=SysFlag.COMPRESSED)]


def _bodies(df: Any) -> list[tuple[str, int, bytes]]:
    return sorted((r["tags"], r["sysFlag"], bytes(r["body"])) for r in df.select("tags", "sysFlag", "body").collect())


EXPECTED = sorted([("Z", SysFlag.COMPRESSED, PLAIN), ("P", 0, b"plain body"), ("E", SysFlag.COMPRESSED, b"")])


def test_the_store_source_inflates_compressed_bodies(load: Any, tmp_path: Path) -> None:
    config = StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE)
    with MessageStore.open(config.store_path_root_dir, config) as store:
        for m in _messages("Deflated"):
            store.put(m)
        assert store.wait_dispatched(10)
        assert _bodies(load(config.store_path_root_dir)) == EXPECTED  # live: read with recovery
    assert _bodies(load(config.store_path_root_dir)) == EXPECTED  # closed cleanly: read through the queues


def test_a_body_that_does_not_inflate_is_named_by_its_commitlog_offset(load: Any, tmp_path: Path) -> None:
    config = StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE)
    with MessageStore.open(config.store_path_root_dir, config) as store:
        store.put(Message.create("Broken", b"plain", tags="P"))
        second = store.put(Message.create("Broken", b"not zlib at all", tags="Z", sys_flag=SysFlag.COMPRESSED))
    offset = second.commit_log_offset
    with pytest.raises(Exception, match=f"cannot decode record at offset {offset}: compressed body does not "
                                        "inflate"):
        load(config.store_path_root_dir).toArrow()


def test_the_broker_source_reads_the_same_bodies(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("DeflatedLive", 1)
        for m in _messages("DeflatedLive"):
            cluster.call(lambda m=m: cluster.broker.store.put(m))
        cluster.wait_dispatched()
        df = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
              .option("subscribe", "DeflatedLive").load())
        assert _bodies(df) == EXPECTED
