"""The rebuild job: consume queues and index files from the commitlog, with the scan spread over Spark.

    report = rebuild_with_spark(spark, "/data/store", config, output_dir="/data/store-rebuilt")

Planning cuts the commitlog segments into byte ranges (store.rebuild.plan_rebuild); a Spark partition holds a
few neighbouring ranges (``TASK_BYTES`` at most, and no more partitions than needed to keep every core busy),
and its task opens the segment files and returns each range's dispatch facts as numpy arrays
(store.rebuild_scan).  A task costs Spark tens of milliseconds whatever it does, as much as scanning a few
MiB, hence more than one range per task when ranges are small.  The driver chains the ranges, decides the
commitlog's valid end and writes the files (store.rebuild), so executors need the commitlog (a shared file
system on a cluster) and the driver the output directory.  Progress is the commitlog bytes of the partitions
done so far, from an accumulator the tasks add to when they finish.

Uses the RDD API (classic Spark, local or a cluster); pyspark is imported by the caller's session only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from rocketstore.spark.versions import check_task_version, planned_version
from rocketstore.store.config import StoreConfig
from rocketstore.store.rebuild import (
    DEFAULT_RANGE_BYTES,
    RebuildPlan,
    RebuildReport,
    plan_rebuild,
    rebuild_store,
)
from rocketstore.store.rebuild_scan import RangeFacts, ScanRange, TagsRule, scan_range

__all__ = ["TASK_BYTES", "partition_count", "rebuild_with_spark", "spark_scan"]

Progress = Callable[[int], None]
#: commitlog bytes one task scans at most: bounds how coarse progress gets (accumulators reach the driver
#: when a task ends) and how unequal the cores' shares can be
TASK_BYTES = 256 << 20


def partition_count(ranges: Sequence[ScanRange], cores: int) -> int:
    """Partitions for *ranges*: as few tasks as keep *cores* busy, each of at most ``TASK_BYTES`` (or one
    range, if a range is larger).  ``parallelize`` cuts the list into contiguous, equal-count slices."""
    widest = max(r.end - r.begin for r in ranges)
    per_task = max(1, min(-(-len(ranges) // max(1, cores)), TASK_BYTES // max(1, widest)))
    return -(-len(ranges) // per_task)


def _scan_partition(check_crc: bool, rule: TagsRule, accumulator: Any,
                    version: str) -> Callable[[Iterator[ScanRange]], Iterator[RangeFacts]]:
    def run(ranges: Iterator[ScanRange]) -> Iterator[RangeFacts]:
        # an executor with another rocketstore would scan with other record layouts or fail deep in a task
        check_task_version(version, "this rocketstore rebuild scan")
        for r in ranges:
            facts = scan_range(r, check_crc, rule)
            accumulator.add(r.end - r.begin)
            yield facts

    return run


def spark_scan(spark: Any, plan: RebuildPlan, progress: Progress | None = None, poll_s: float = 0.2, *,
               version: str | None = None) -> Callable[[Sequence[ScanRange]], Iterable[RangeFacts]]:
    """A scan function for ``rebuild_store`` that runs one Spark task per range.  Each task first checks that
    it runs rocketstore *version* (default: the version installed here, where the scan is planned), as the
    data sources' tasks do (spark/versions.py)."""
    planned = version or planned_version()

    def scan(ranges: Sequence[ScanRange]) -> Iterable[RangeFacts]:
        if not ranges:
            return []
        sc = spark.sparkContext
        accumulator = sc.accumulator(0)
        # an executor runs in its own working directory (a cluster's work/app-*/N): a relative segment path
        # (a store given as "store") must be made absolute here, where it was planned
        shipped = [replace(r, path=os.path.abspath(r.path)) for r in ranges]
        rdd = sc.parallelize(shipped, partition_count(ranges, int(sc.defaultParallelism))).mapPartitions(
            _scan_partition(plan.check_crc, plan.rule, accumulator, planned))
        result: list[list[RangeFacts]] = []
        failure: list[BaseException] = []

        def collect() -> None:
            try:
                result.append(rdd.collect())
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                failure.append(exc)

        worker = threading.Thread(target=collect, name="rocketstore-rebuild-collect", daemon=True)
        worker.start()
        reported = 0
        while worker.is_alive():
            worker.join(poll_s)
            done = int(accumulator.value)
            if progress is not None and done > reported:
                progress(done - reported)
                reported = done
        if failure:
            raise failure[0]
        done = sum(r.end - r.begin for r in ranges)
        if progress is not None and done > reported:
            progress(done - reported)
        return result[0]

    return scan


def rebuild_with_spark(spark: Any, store_dir: str, config: StoreConfig, *, output_dir: str | None = None,
                       in_place: bool = False, skip_bad: bool = False, range_bytes: int = DEFAULT_RANGE_BYTES,
                       progress: Progress | None = None,
                       on_plan: Callable[[RebuildPlan], None] | None = None) -> RebuildReport:
    """Rebuild the store at *store_dir* with the scan on *spark*; see ``store.rebuild.rebuild_store``."""
    plan = plan_rebuild(store_dir, config, range_bytes)
    if on_plan is not None:
        on_plan(plan)
    return rebuild_store(plan, spark_scan(spark, plan, progress), output_dir=output_dir, in_place=in_place,
                         skip_bad=skip_bad)
