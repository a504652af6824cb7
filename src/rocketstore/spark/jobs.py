"""The pipeline jobs behind ``rocketstore pipeline``: a Spark session with the sources registered, the store
archive (batch, ``rocketmq-store`` -> Parquet), the live-topic archive (streaming, ``rocketmq`` -> Parquet
with a checkpoint) and the store report (report.py).  Progress goes to the *progress* callback (the CLI
prints it on stderr).  pyspark is imported inside the functions.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rocketstore.errors import StoreConfigError
from rocketstore.spark import register
from rocketstore.spark.report import ReportResult, consumer_lag, render_report, traffic

__all__ = ["archive_store", "archive_topic", "build_session", "store_report"]

Progress = Callable[[str], None]


def build_session(master: str = "local[*]", app_name: str = "rocketstore-pipeline",
                  conf: Mapping[str, str] | None = None) -> tuple[Any, bool]:
    """(a SparkSession whose Python workers run this interpreter and can import rocketstore, whether this
    call created it).  *conf*: Spark properties, set after (so over) this function's own.  A session already
    active in this process is reused (and is not the caller's to stop); *conf* is then set on it where Spark
    allows that at run time (SQL properties), else Spark's error says it cannot be."""
    # The executors' Python is PYSPARK_PYTHON as this process holds it when the session starts (pyspark reads
    # nothing else: spark.pyspark.python takes effect only through spark-submit, which exports it).  So the
    # property, as spark-submit gives it, wins over the variable; without either, this interpreter (which has
    # rocketstore and pyarrow) at the same path on every worker host, not Spark's bare "python3".
    python = (conf or {}).get("spark.pyspark.python")
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    src = str(Path(__file__).resolve().parents[2])  # the directory holding the rocketstore package
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *paths])
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in (conf or {}).items():
            active.conf.set(key, value)
        register(active)
        return active, False
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark, True


def archive_store(spark: Any, store: str, output: str, progress: Progress, *, topics: str | None = None,
                  overwrite: bool = False) -> int:
    """Every message of the store (or of *topics*) into Parquet under *output*; returns the row count.

    StoreConfigError when *output* is the store or a directory holding it: Spark's overwrite deletes the
    output before the read runs, so the store would be gone (and nothing archived)."""
    if overwrite:
        out, root = os.path.realpath(output), os.path.realpath(store)
        if root == out or root.startswith(out.rstrip(os.sep) + os.sep):
            raise StoreConfigError(f"output {output} holds the store {store}: overwriting it would delete the store")
    reader = spark.read.format("rocketmq-store").option("path", store)
    if topics:
        reader = reader.option("topics", topics)
    progress(f"archiving {store} -> {output}")
    reader.load().write.mode("overwrite" if overwrite else "errorifexists").parquet(output)
    count = int(spark.read.parquet(output).count())
    progress(f"wrote {count} messages to {output}")
    return count


def archive_topic(spark: Any, name_server: str, topic: str, checkpoint: str, output: str, progress: Progress, *,
                  available_now: bool = False, tags: str | None = None, consumer_group: str | None = None,
                  max_offsets_per_trigger: int | None = None, trigger_interval_s: float = 5.0,
                  timeout_s: float | None = None) -> int:
    """A streaming query from a live topic into Parquet.  With *available_now* it stops once it has what the
    topic held at start; otherwise it runs until interrupted (or *timeout_s*).  Returns rows written."""
    reader = (spark.readStream.format("rocketmq").option("nameServer", name_server).option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    if tags:
        reader = reader.option("tags", tags)
    if consumer_group:
        reader = reader.option("consumerGroup", consumer_group)
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    writer = reader.load().writeStream.format("parquet").option("path", output).option("checkpointLocation",
                                                                                       checkpoint)
    writer = (writer.trigger(availableNow=True) if available_now
              else writer.trigger(processingTime=f"{int(trigger_interval_s * 1000)} milliseconds"))
    query = writer.start()
    progress(f"streaming {topic} from {name_server} -> {output} (checkpoint {checkpoint}, query {query.id})")
    rows: dict[int, int] = {}  # batch id -> input rows, from every progress event seen
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def collect(report: bool) -> None:
        # lastProgress alone would miss batches that finish between two polls (back-to-back batches of
        # maxOffsetsPerTrigger): recentProgress keeps the last 100 events, read every half second
        for p in query.recentProgress:
            batch, n = int(p["batchId"]), int(p["numInputRows"])
            if n > rows.get(batch, -1):  # an idle event may carry a batch id before its batch runs
                rows[batch] = n
                if report:
                    progress(f"batch {batch}: {n} messages ({sum(rows.values())} in this run)")

    try:
        while query.isActive:
            collect(True)
            if deadline is not None and time.monotonic() > deadline:
                query.stop()
                break
            query.awaitTermination(0.5)
    except KeyboardInterrupt:
        progress("interrupted: stopping the query (the checkpoint keeps its place)")
        query.stop()
    if query.exception() is not None:
        raise query.exception()  # type: ignore[misc]
    collect(False)
    total = sum(rows.values())
    progress(f"stopped after {total} messages")
    return total


def store_report(spark: Any, store: str, output: str, progress: Progress) -> ReportResult:
    progress(f"aggregating {store} per topic / queue / tag / hour")
    rows = traffic(spark, store)
    progress(f"{len(rows)} groups; reading committed consumer offsets")
    lags = consumer_lag(store)
    result = render_report(store, output, rows, lags)
    progress(f"wrote {result.html_path} and {result.png_path}")
    return result
