"""Rebuild benchmark: the Spark rebuild (local[2]) against the store's own serial re-dispatch, same commitlog.

Ours: ``rebuild_with_spark`` into a new directory (a Spark session started once, before the clock; its
start-up is reported apart).  Reference: a copy of the commitlog alone with an ``abort`` file and no
checkpoint, opened by MessageStore, so abnormal recovery re-checks every record from the first segment and
re-dispatches it into fresh consume queues and index, then a clean close (the files flushed).  Both sides
read the commitlog from the page cache; rates are commitlog MB (up to the valid end) per second, medians of
alternating rounds.  The first round checks that both produced the same consume-queue bytes.

    PYTHONPATH=src:. python -m bench.rebuild_bench --full     # >= 1 GiB store, 1 GiB segments
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Notes, Row, alternate, median

__all__ = ["REBUILD_SIZES", "rebuild_workload"]


@dataclass(frozen=True)
class RebuildSizes:
    store_bytes: int
    segment_bytes: int
    rounds: int
    range_bytes: int


REBUILD_SIZES = {
    "smoke": RebuildSizes(6 << 20, 4 << 20, 1, 2 << 20),
    "quick": RebuildSizes(200 << 20, 128 << 20, 3, 32 << 20),
    "full": RebuildSizes((1 << 30) + (64 << 20), 1 << 30, 3, 128 << 20),
}


def _config(sizes: RebuildSizes) -> Any:
    from rocketstore.store.config import StoreConfig

    return StoreConfig(mapped_file_size_commit_log=sizes.segment_bytes, preallocate_commit_log=False)


def _build_store(path: str, sizes: RebuildSizes) -> int:
    """1 KiB messages over 3 topics x 4 queues with a tag, a key and a UNIQ_KEY each (as clients send)."""
    from rocketstore.message.record import Message
    from rocketstore.store.message_store import MessageStore

    rng = random.Random(11)
    bodies = [rng.randbytes(1024) for _ in range(64)]
    batches = []
    for b in range(48):
        topic, queue_id = f"BenchTopic{b % 3}", b % 4
        batches.append([Message.create(topic, bodies[i % 64], tags=f"Tag{i % 5}", keys=f"order-{b}-{i}",
                                       uniq_key=uuid.UUID(int=rng.getrandbits(128)).hex.upper(), queue_id=queue_id)
                        for i in range(64)])
    with MessageStore.open(path, _config(sizes)) as store:
        i = 0
        while store.max_commit_log_offset < sizes.store_bytes:
            result = store.put_batch(batches[i % len(batches)])
            if result.status.name != "PUT_OK":
                raise RuntimeError(f"put_batch failed: {result.status}")
            i += 1
        end = store.max_commit_log_offset
        if not store.wait_dispatched(600):
            raise RuntimeError("dispatch did not catch up")
    return end


def _spark_session() -> tuple[Any, bool]:
    """(a local[2] session, whether this call created it: a session already running is not ours to stop)."""
    from rocketstore.spark.jobs import build_session

    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return build_session("local[2]", "rocketstore-rebuild-bench")


def _warm_up(items: Any) -> Any:
    import rocketstore.store.rebuild_scan  # noqa: F401 - loaded once per Python worker

    return items


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def rebuild_workload(mode: str, workdir: str, notes: Notes, add: Any) -> None:
    from rocketstore.spark.rebuild import rebuild_with_spark

    sizes = REBUILD_SIZES[mode]
    cfg = _config(sizes)
    source = os.path.join(workdir, "rebuild-source")
    print(f"[rebuild: {sizes.store_bytes / (1 << 20):,.0f} MiB store of 1 KiB messages, "
          f"{sizes.segment_bytes >> 20} MiB segments]", flush=True)
    end = _build_store(source, sizes)
    shutil.rmtree(os.path.join(source, "consumequeue"))
    shutil.rmtree(os.path.join(source, "index"))
    t0 = time.perf_counter()
    spark, created = _spark_session()
    # the first job starts the Python workers and imports numpy and rocketstore in them: session start-up
    spark.sparkContext.parallelize(range(2), 2).mapPartitions(_warm_up).collect()
    notes.extra["rebuild_spark_start_s"] = round(time.perf_counter() - t0, 1)
    seq = [0]
    checked: list[bool] = []

    def ours() -> float:
        seq[0] += 1
        out = os.path.join(workdir, f"rebuild-out-{seq[0]}")
        os.sync()  # neither side waits behind the other's dirty pages
        t = time.perf_counter()
        report = rebuild_with_spark(spark, source, cfg.replace(store_path_root_dir=source), output_dir=out,
                                    range_bytes=sizes.range_bytes)
        dt = time.perf_counter() - t
        if report.valid_end != end:
            raise RuntimeError(f"rebuild ended at {report.valid_end}, the store at {end}")
        if not checked:
            ref = os.path.join(workdir, "rebuild-ref-check")
            _reference_run(source, ref, cfg)
            if _tree(os.path.join(out, "consumequeue")) != _tree(os.path.join(ref, "consumequeue")):
                raise RuntimeError("the rebuilt consume queues differ from the dispatcher's")
            shutil.rmtree(ref)
            checked.append(True)
        shutil.rmtree(out)
        print(f"  round: rebuild {dt:.2f} s ({report.scan_seconds:.2f} s scanning, tasks used "
              f"{report.scan_cpu_seconds:.2f} s CPU)", flush=True)
        return end / dt / 1e6

    def reference() -> float:
        ref = os.path.join(workdir, "rebuild-ref")
        dt = _reference_run(source, ref, cfg)
        shutil.rmtree(ref)
        print(f"  round: serial re-dispatch {dt:.2f} s", flush=True)
        return end / dt / 1e6

    try:
        res = alternate(sizes.rounds, {"ours": ours, "reference": reference})
    finally:
        if created:
            spark.stop()
        shutil.rmtree(source, ignore_errors=True)
    add(Row("rebuild", f"rebuild consume queues + index from a {end / (1 << 20):,.0f} MiB commitlog, Spark "
                       f"local[2] ({sizes.range_bytes >> 20} MiB partitions)", "MB/s", median(res["ours"]),
            "the store's serial re-dispatch of the same commitlog (abnormal recovery from segment 0)",
            median(res["reference"]), 1.5))
    notes.caveat(f"Rebuild: Spark session start-up ({notes.extra['rebuild_spark_start_s']} s) is outside the "
                 "clock; each side reads the commitlog from the page cache and writes and flushes its files.")


def _reference_run(source: str, dest: str, cfg: Any) -> float:
    """Seconds for the store's own re-dispatch of *source*'s commitlog (copied outside the clock)."""
    from rocketstore.store.message_store import MessageStore

    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    shutil.copytree(os.path.join(source, "commitlog"), os.path.join(dest, "commitlog"))
    with open(os.path.join(dest, "abort"), "wb"):
        pass
    os.sync()
    t = time.perf_counter()
    store = MessageStore.open(dest, cfg.replace(store_path_root_dir=dest), background=False)
    store.close()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rebuild_bench", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    for name in REBUILD_SIZES:
        mode.add_argument(f"--{name}", action="store_const", dest="mode", const=name)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    notes = Notes()
    rows: list[Row] = []
    base = tempfile.mkdtemp(prefix="rocketstore-rebuild-bench-", dir=args.workdir)
    try:
        rebuild_workload(args.mode or "quick", base, notes, rows.append)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for row in rows:
        print(f"{row.name}: {row.ours:,.1f} {row.unit} vs {row.reference_value:,.1f} -> {row.ratio:.2f}x "
              f"(target {row.target_ratio}x: {'met' if row.met else 'BELOW'})")
    for text in notes.caveats:
        print(f"note: {text}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
