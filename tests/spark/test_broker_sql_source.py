"""The ``rocketmq`` source with an SQL92 ``sql`` option: the broker (enablePropertyFilter=true) hands over
only the messages whose properties match, and a malformed expression or one given with ``tags`` fails when
the query is defined."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

from rocketstore.spark.stream_options import SourceOptions, SparkOptionError

pytestmark = pytest.mark.spark


def test_the_source_reads_only_the_messages_the_sql_selects(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        rows = [(f"m{i}", {"n": str(i), "region": ["eu", "us"][i % 2]}) for i in range(30)]
        df = spark.createDataFrame(rows, "body string, properties map<string,string>")
        (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SqlTopic")
         .mode("append").save())
        cluster.wait_dispatched()
        picked = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                  .option("subscribe", "SqlTopic").option("sql", "region = 'eu' AND n >= 10").load()
                  .select("body").collect())
        assert sorted(r["body"] for r in picked) == sorted(f"m{i}".encode() for i in range(10, 30, 2))


def test_a_bad_sql_option_is_refused_before_anything_is_read() -> None:
    base = {"nameServer": "127.0.0.1:1", "subscribe": "T"}
    with pytest.raises(SparkOptionError, match="option sql"):
        SourceOptions.parse({**base, "sql": "a >"}, streaming=False)
    with pytest.raises(SparkOptionError, match="either 'tags' or 'sql'"):
        SourceOptions.parse({**base, "sql": "a > 1", "tags": "T1"}, streaming=False)
    assert SourceOptions.parse({**base, "sql": " a > 1 "}, streaming=False).selector.expression == "a > 1"
    for empty in ("", "   "):  # an unset variable would otherwise read every message
        with pytest.raises(SparkOptionError, match="option sql is empty"):
            SourceOptions.parse({**base, "sql": empty}, streaming=False)
