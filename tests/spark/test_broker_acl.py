"""The ``rocketmq`` sink and source against a broker with plain ACL on: options accessKey / secretKey sign
every request (the executors' too), a write without them fails, and one key without the other is an option
error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, acl_home

from rocketstore.spark.stream_options import SinkOptions, SparkOptionError

pytestmark = pytest.mark.spark

ACL = """\
accounts:
  - accessKey: spark-writer
    secretKey: spark-secret-1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""
KEYS = {"accessKey": "spark-writer", "secretKey": "spark-secret-1"}


def test_sink_and_source_sign_with_the_acl_keys(spark: Any, tmp_path: Path) -> None:
    home = acl_home(tmp_path / "home", ACL)
    rows = spark.createDataFrame([(f"acl-{i}".encode(),) for i in range(12)], "body binary").repartition(2)
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        ns = cluster.namesrv_addr
        rows.write.format("rocketmq").option("nameServer", ns).option("topic", "SparkAcl").options(**KEYS) \
            .mode("append").save()
        back = spark.read.format("rocketmq").option("nameServer", ns).option("subscribe", "SparkAcl") \
            .options(**KEYS).load().select("body").collect()
        assert sorted(bytes(r["body"]) for r in back) == sorted(f"acl-{i}".encode() for i in range(12))
        with pytest.raises(Exception, match="AclException|accessKey"):
            rows.write.format("rocketmq").option("nameServer", ns).option("topic", "SparkAcl").mode("append").save()
        assert cluster.call(lambda: cluster.broker.put_count) == 12


def test_one_acl_key_without_the_other_is_an_option_error() -> None:
    with pytest.raises(SparkOptionError, match="accessKey"):
        SinkOptions.parse({"nameServer": "127.0.0.1:9876", "accessKey": "spark-writer"})
    options = SinkOptions.parse({"nameServer": "127.0.0.1:9876", **KEYS})
    assert options.credentials is not None and "spark-secret-1" not in repr(options)
