"""A task on an executor with another rocketstore version than the one that planned its query fails first
thing, naming both versions, instead of with an AttributeError deep in the task.  The planning version is
simulated with the ``rocketstore.plannedVersion`` option: Spark pickles the reader or writer that recorded
it to a real Python worker, which checks it against its own installed version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore import __version__
from rocketstore.cli.pipeline_cmds import spark_error_line
from rocketstore.spark.versions import PLANNED_VERSION_OPTION

pytestmark = pytest.mark.spark

CLEAN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "stores" / "clean"
OTHER = "9.9.9.dev0"


def _mismatch_line(exc: BaseException, what: str) -> str:
    line = spark_error_line(exc)
    assert line.startswith("VersionMismatchError: "), str(exc)[:2000]
    assert f"{what} was planned with rocketstore {OTHER}" in line, line
    assert f"runs rocketstore {__version__}" in line, line
    return line


def test_store_read_planned_by_another_version_names_both_versions(spark: Any, load: Any) -> None:
    if not CLEAN.is_dir():
        pytest.skip(f"golden store missing: {CLEAN}")
    assert load(CLEAN, topics="TopicA", **{PLANNED_VERSION_OPTION: __version__}).count() > 0
    with pytest.raises(Exception) as info:
        load(CLEAN, topics="TopicA", **{PLANNED_VERSION_OPTION: OTHER}).count()
    _mismatch_line(info.value, "this rocketmq-store read")


def test_broker_read_and_sink_write_planned_by_another_version_fail_before_any_message(
        spark: Any, cluster: Any) -> None:
    topic = "Hunt16Versions"
    cluster.create_topic(topic, queues=2)
    df = spark.createDataFrame([(f"m{i}",) for i in range(6)], "body string")

    def write(version: str) -> None:
        (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic)
         .option(PLANNED_VERSION_OPTION, version).mode("append").save())

    def read(version: str) -> Any:
        return (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("subscribe", topic)
                .option(PLANNED_VERSION_OPTION, version).load())

    with pytest.raises(Exception) as info:
        write(OTHER)
    _mismatch_line(info.value, "this rocketmq sink write")
    assert read(__version__).count() == 0  # nothing was sent
    write(__version__)
    cluster.wait_dispatched()
    assert read(__version__).count() == 6
    with pytest.raises(Exception) as info:
        read(OTHER).count()
    _mismatch_line(info.value, "this rocketmq batch read")


def test_stream_read_planned_by_another_version_fails_the_query(spark: Any, cluster: Any,
                                                                  tmp_path: Path) -> None:
    topic = "Hunt16StreamVersions"
    cluster.create_topic(topic, queues=1)
    df = spark.createDataFrame([("m",)], "body string")
    (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic)
     .mode("append").save())
    cluster.wait_dispatched()
    query = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option(PLANNED_VERSION_OPTION, OTHER).load()
             .selectExpr("CAST(body AS STRING) AS body").writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination()
    finally:
        query.stop()
    _mismatch_line(info.value, "this rocketmq stream read")
