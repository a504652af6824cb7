"""Spark fixtures: one local[2] SparkSession for the whole run, and helpers to read and compare messages.

The whole directory is skipped (each module calls ``pytest.importorskip``) only when pyspark or pyarrow
cannot be imported.  The Python workers Spark starts import rocketstore from this checkout: the session is
created with the checkout's ``src`` on PYTHONPATH and this interpreter as the workers' Python.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import decode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus

SKIP_REASON = "pyspark/pyarrow not installed: pip install 'rocketstore[spark]' to run the Spark tests"

#: a message as a comparable tuple, in this order
ROW_FIELDS = ("topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "body", "tags", "keys", "properties",
              "uniqKey", "bornTimestamp", "storeTimestamp", "bornHost", "storeHost", "sysFlag", "flag",
              "reconsumeTimes")
Row = tuple[Any, ...]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A name server and a broker on 127.0.0.1 (tests/integration/local_cluster.py) for one test module."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from local_cluster import LocalCluster

    with LocalCluster(tmp_path_factory.mktemp("broker") / "store") as c:
        yield c


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason=SKIP_REASON)
    pytest.importorskip("pyarrow", reason=SKIP_REASON)
    from pyspark.sql import SparkSession

    import rocketstore
    from rocketstore.spark import register

    src = str(Path(rocketstore.__file__).resolve().parents[1])
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("rocketstore-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "512m")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


@pytest.fixture(scope="session")
def load(spark: Any) -> Callable[..., Any]:
    """``load(path, **options)`` -> the DataFrame of ``spark.read.format("rocketmq-store")``."""

    def make(path: str | Path, *, schema: str | None = None, **options: object) -> Any:
        reader = spark.read.format("rocketmq-store").option("path", str(path))
        if schema is not None:
            reader = reader.schema(schema)
        for name, value in options.items():
            reader = reader.option(name, _option_text(value))
        return reader.load()

    return make


def table_rows(table: Any) -> list[Row]:
    """Rows of an Arrow table of the source, as sorted comparable tuples (timestamps in ms)."""
    import pyarrow as pa

    columns = {}
    for name in ROW_FIELDS:
        col = table.column(name)
        if name in ("bornTimestamp", "storeTimestamp"):
            columns[name] = [v // 1000 for v in col.cast(pa.int64()).to_pylist()]
        elif name == "properties":
            columns[name] = [tuple(sorted(v)) for v in col.to_pylist()]
        else:
            columns[name] = col.to_pylist()
    return sorted(zip(*(columns[n] for n in ROW_FIELDS)), key=lambda r: (r[0], r[1], r[2]))


def read_rows(df: Any) -> list[Row]:
    return table_rows(df.toArrow())


def dump_rows(dump: dict[str, Any], topics: set[str] | None = None) -> list[Row]:
    """Every message of a reference dump (of the given topics), as comparable tuples."""
    rows = []
    for t in dump["topics"]:
        if topics is not None and t["topic"] not in topics:
            continue
        for q in t["queues"]:
            for m in q["messages"]:
                props = m["properties"]
                rows.append((m["topic"], m["queueId"], m["queueOffset"], m["commitLogOffset"], m["msgId"],
                             base64.b64decode(m["bodyBase64"]), m["tags"], m["keys"], tuple(sorted(props.items())),
                             props.get(PropertyName.UNIQ_KEY), m["bornTimestamp"], m["storeTimestamp"],
                             m["bornHost"], m["storeHost"], m["sysFlag"], m["flag"], m["reconsumeTimes"]))
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def direct_rows(path: str | Path, config: StoreConfig, topics: set[str] | None = None) -> list[Row]:
    """Every message of a store read through MessageStore.get, queue by queue, as comparable tuples."""
    rows = []
    with MessageStore.open(path, config, read_only=True) as store:
        for topic, qids in store.topics().items():
            if topics is not None and topic not in topics:
                continue
            for qid in qids:
                offset = store.min_offset(topic, qid)
                while True:
                    got = store.get(topic, qid, offset, 32)
                    for q, raw in zip(got.queue_offsets, got.records):
                        rows.append(stored_row(decode_record(raw), q))
                    if got.status not in (GetMessageStatus.FOUND, GetMessageStatus.NO_MATCHED_MESSAGE,
                                          GetMessageStatus.OFFSET_FOUND_NULL) or got.next_begin_offset <= offset:
                        break
                    offset = got.next_begin_offset
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def stored_row(m: Any, queue_offset: int) -> Row:
    props = parse_properties(m.properties_string)
    return (m.topic, m.queue_id, queue_offset, m.commit_log_offset, m.msg_id, m.body, props.get(PropertyName.TAGS),
            props.get(PropertyName.KEYS), tuple(sorted(props.items())), props.get(PropertyName.UNIQ_KEY),
            m.born_timestamp, m.store_timestamp, str(m.born_host), str(m.store_host), m.sys_flag, m.flag,
            m.reconsume_times)


@pytest.fixture(scope="session")
def archive_stream(spark: Any) -> Callable[..., None]:
    """``archive(cluster, tmp_path, topic, **options)``: one availableNow streaming query of *topic* from the
    earliest offsets (with the extra source *options*), its bodies as strings appended to Parquet in
    tmp_path/out with its checkpoint in tmp_path/ckpt, so that each call resumes from the last one's."""

    def archive(cluster: Any, tmp_path: Path, topic: str, **options: str) -> None:
        stream = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                  .option("subscribe", topic).option("startingOffsets", "earliest"))
        for name, value in options.items():
            stream = stream.option(name, value)
        query = (stream.load().selectExpr("CAST(body AS STRING) AS body").writeStream.format("parquet")
                 .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination()
        finally:
            query.stop()

    return archive


@pytest.fixture(scope="session")
def rows() -> SimpleNamespace:
    """The row helpers above, for the test modules (which cannot import this conftest)."""
    return SimpleNamespace(of_table=table_rows, of_df=read_rows, of_dump=dump_rows, direct=direct_rows,
                           of_stored=stored_row)
