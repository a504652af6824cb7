"""Spark batch scan of a store (``rocketmq-store``) against Spark reading pre-built Arrow batches.

The store: 1 KiB bodies (random), four queues of one topic, a few tags, a key and a unique key per message,
written with ``put_batch`` (64 per batch) and closed cleanly; >= 1 GiB of commitlog in full mode.

Both sides run in the same SparkSession (local[2]), alternately, each a full scan into the ``noop`` sink
(``df.write.format("noop")``, which materialises every column):

* ours: ``spark.read.format("rocketmq-store")`` over the store, planning included;
* ceiling: a Python data source that yields, partition for partition, the very Arrow batches our source
  produced for the same plan, built once before any timing and kept in uncompressed Arrow IPC files that
  the Python workers memory-map (zero-copy, from the page cache: no decoding, no copying): everything the
  scan costs except reading and decoding the records.

Both are reported in MB/s of commitlog bytes (the records' TOTALSIZE summed).  The issue's target is a
ratio >= 0.5.  A ``--profile`` style breakdown of the worker side is printed: the reader's ``read()`` run
in this process over the same partitions, with and without Arrow conversion.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import Notes, Row, alternate, median
from rocketstore import Message, MessageStore, StoreConfig

__all__ = ["SCAN_BYTES", "spark_workload"]

GROUP = "spark batch scan"
CEILING_FORMAT = "rocketstore-bench-arrow"
#: commitlog bytes of the scanned store, and its segment size, per mode
SCAN_BYTES = {"smoke": (4 << 20, 2 << 20), "quick": (96 << 20, 64 << 20), "full": ((1 << 30) + (32 << 20), 1 << 30)}
BODY_BYTES = 1024
QUEUES = 4
TOPIC = "ScanTopic"
REPO_ROOT = Path(__file__).resolve().parents[1]
#: at least as many partitions as local[2] has cores, twice over (a no-op for the full store: ~100k records
#: a partition already give ~9)
SCAN_OPTIONS = {"minPartitions": "4"}


def build_store(path: str, target_bytes: int, segment_bytes: int) -> tuple[int, int]:
    """Write about *target_bytes* of commitlog with put_batch(64); returns (records, commitlog bytes)."""
    rng = random.Random(11)
    bodies = [rng.randbytes(BODY_BYTES) for _ in range(256)]
    tags = ["TagA", "TagB", "TagC", "order"]
    config = StoreConfig(mapped_file_size_commit_log=segment_bytes)
    records = 0
    with MessageStore.open(path, config) as store:
        i = 0
        while store.max_commit_log_offset < target_bytes:
            q = (i // 64) % QUEUES
            batch = [Message.create(TOPIC, bodies[(i + k) % len(bodies)], tags=tags[(i + k) % len(tags)],
                                    keys=f"order-{i + k}", uniq_key=f"C0A8000100002A9F{i + k:016X}",
                                    properties={"region": "eu-west", "seq": str(i + k)}, queue_id=q,
                                    born_timestamp=1_700_000_000_000 + i + k)
                     for k in range(64)]
            result = store.put_batch(batch)
            if not result.ok:
                raise RuntimeError(f"put_batch failed: {result.status} {result.remark}")
            i += 64
            records += 64
        store.flush()
        if not store.wait_dispatched(600):
            raise RuntimeError("dispatch did not catch up")
        end = store.max_commit_log_offset
    return records, end


# --- the ceiling: pre-built Arrow batches -------------------------------------------------------------------

def _ceiling_source() -> type:
    """The ceiling's data source.  Defined in a function so that cloudpickle ships the classes by value:
    Spark's workers need not be able to import ``bench`` (a test session's workers see only ``src``)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FilePartition(InputPartition):
        def __init__(self, path: str) -> None:
            super().__init__(path)
            self.path = path

    class PrebuiltReader(DataSourceReader):
        def __init__(self, paths: list[str]) -> None:
            self.paths = paths

        def partitions(self) -> list[InputPartition]:  # type: ignore[override]
            return [FilePartition(p) for p in self.paths]

        def read(self, partition: InputPartition) -> Iterator[Any]:  # type: ignore[override]
            import pyarrow as pa

            # zero-copy: the batches point into the mapped file, which the warm-up round left in the page cache
            yield from pa.ipc.open_file(pa.memory_map(partition.path)).read_all().to_batches()  # type: ignore[attr-defined]

    class PrebuiltArrow(DataSource):
        @classmethod
        def name(cls) -> str:
            return CEILING_FORMAT

        def schema(self) -> Any:
            from rocketstore.spark.store_source import store_schema

            return store_schema()

        def reader(self, schema: Any) -> DataSourceReader:
            listing = {k.lower(): v for k, v in self.options.items()}["paths"]
            return PrebuiltReader(listing.split(os.pathsep))

    return PrebuiltArrow


def write_ceiling_batches(store_path: str, directory: str) -> tuple[list[str], int, int]:
    """Run our reader's plan in this process and keep each partition's batches as an Arrow IPC file;
    returns (files, rows, partitions)."""
    import pyarrow as pa

    from rocketstore.spark.store_options import StoreReadOptions
    from rocketstore.spark.store_source import StoreReader, _arrow_schema, store_schema

    reader = StoreReader(StoreReadOptions.parse({"path": store_path, **SCAN_OPTIONS}), store_schema())
    schema = _arrow_schema(store_schema())
    paths = []
    rows = 0
    partitions = reader.partitions()
    os.makedirs(directory, exist_ok=True)
    for i, partition in enumerate(partitions):
        path = os.path.join(directory, f"part-{i:04d}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            for batch in reader.read(partition):
                writer.write_batch(batch)
                rows += batch.num_rows
        paths.append(path)
    return paths, rows, len(partitions)


def profile_worker_side(store_path: str) -> dict[str, float]:
    """Seconds our reader spends in this process: planning, and read() of every partition."""
    from rocketstore.spark.store_options import StoreReadOptions
    from rocketstore.spark.store_source import StoreReader, store_schema

    t0 = time.perf_counter()
    reader = StoreReader(StoreReadOptions.parse({"path": store_path, **SCAN_OPTIONS}), store_schema())
    partitions = reader.partitions()
    t1 = time.perf_counter()
    for p in partitions:
        for _ in reader.read(p):
            pass
    t2 = time.perf_counter()
    return {"plan_s": t1 - t0, "read_s": t2 - t1}


# --- the session ----------------------------------------------------------------------------------------------


def _session() -> tuple[Any, bool]:
    """The active SparkSession (a test run's) or a new local[2] one; True when we created it."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    src = str(REPO_ROOT / "src")
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, str(REPO_ROOT), os.environ.get("PYTHONPATH"))
                                               if p)
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers' Python: this interpreter, not the system one
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    try:
        session = (SparkSession.builder.master("local[2]").appName("rocketstore-bench")
                   .config("spark.ui.enabled", "false")
                   .config("spark.driver.memory", "1g")
                   .config("spark.python.worker.reuse", "true")
                   .config("spark.sql.session.timeZone", "UTC")
                   .getOrCreate())
    finally:  # the JVM and the context have read them by now
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def spark_workload(mode: str, workdir: str, notes: Notes, add: Callable[[Row], None], rounds: int) -> None:
    """Build the store, then alternate ours and the ceiling ``rounds`` times; adds one row."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        notes.skip(f"Spark scan: pyspark/pyarrow not installed ({exc}); pip install -e '.[spark]'")
        return
    target, segment = SCAN_BYTES[mode]
    if mode == "full":
        rounds = max(rounds, 5)  # the machine's other load swings single rounds by +-30%: more rounds, steadier medians
    base = os.path.join(workdir, "spark-scan")
    store_path = os.path.join(base, "store")
    print(f"[spark scan: building a {target / (1 << 20):,.0f} MiB store of {BODY_BYTES} B messages]", flush=True)
    t0 = time.perf_counter()
    records, scan_bytes = build_store(store_path, target, segment)
    print(f"  {records:,} records, {scan_bytes / (1 << 20):,.0f} MiB in {time.perf_counter() - t0:.0f} s",
          flush=True)
    try:
        paths, rows, partitions = write_ceiling_batches(store_path, os.path.join(base, "ceiling"))
        if rows != records:
            raise RuntimeError(f"the reader produced {rows} rows for {records} records")
        prof = profile_worker_side(store_path)
        print(f"  worker side in one process: plan {prof['plan_s']:.2f} s, read {prof['read_s']:.2f} s "
              f"({scan_bytes / prof['read_s'] / 1e6:,.0f} MB/s on one core)", flush=True)
        spark, created = _session()
        try:
            from rocketstore.spark import register

            register(spark)
            spark.dataSource.register(_ceiling_source())

            def ours() -> float:
                t = time.perf_counter()
                spark.read.format("rocketmq-store").options(path=store_path, **SCAN_OPTIONS).load() \
                    .write.format("noop").mode("overwrite").save()
                return scan_bytes / (time.perf_counter() - t) / 1e6

            def ceiling() -> float:
                t = time.perf_counter()
                spark.read.format(CEILING_FORMAT).option("paths", os.pathsep.join(paths)).load() \
                    .write.format("noop").mode("overwrite").save()
                return scan_bytes / (time.perf_counter() - t) / 1e6

            counted = (spark.read.format("rocketmq-store").options(path=store_path, **SCAN_OPTIONS).load().count(),
                       spark.read.format(CEILING_FORMAT).option("paths", os.pathsep.join(paths)).load().count())
            if counted != (records, records):
                raise RuntimeError(f"row counts {counted} differ from the {records} records written")
            ours()  # warm-up: Python workers started, files in the page cache, IPC files mapped
            ceiling()
            got = alternate(rounds, {"ours": ours, "ceiling": ceiling})
            print("  rounds, MB/s: ours " + ", ".join(f"{v:,.0f}" for v in got["ours"]) + "; ceiling "
                  + ", ".join(f"{v:,.0f}" for v in got["ceiling"]), flush=True)
        finally:
            if created:
                spark.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    notes.caveat(
        f"Spark scan: {records:,} records of {BODY_BYTES} B bodies ({scan_bytes / (1 << 20):,.0f} MiB of commitlog, "
        f"{QUEUES} queues, put_batch of 64, closed cleanly) read by local[2] into the noop sink in {partitions} "
        "partitions; the ceiling yields the same rows as pre-built Arrow batches (memory-mapped IPC files, same "
        "partitions). MB/s counts commitlog bytes for both sides.")
    add(Row(GROUP, f"spark.read rocketmq-store full scan, {scan_bytes / (1 << 20):,.0f} MiB, local[2]", "MB/s",
            median(got["ours"]), "same session reading pre-built Arrow batches of the same rows",
            median(got["ceiling"]), 0.5))
