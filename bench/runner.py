"""Modes, orchestration and the command line of ``python -m bench``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import BODY_SIZES, SIZES, Notes, Row, Sizes
from bench.peers import RedisServer
from bench.report import console_table, machine_info, write_chart, write_json, write_markdown
from bench.store_bench import Context, recovery_workload, run_size

__all__ = ["REPO_ROOT", "WORKLOADS", "main", "run_suite"]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = REPO_ROOT / "bench" / "results" / "latest.json"
DEFAULT_MARKDOWN = REPO_ROOT / "BENCHMARKS.md"
CHART_NAME = "bench/benchmarks.png"
WORKLOADS = ("put", "get", "query", "sync", "recovery", "broker", "spark", "rebuild", "replication")


def run_suite(mode: str, *, workdir: str | None = None, results_path: str | os.PathLike[str] | None = None,
              workloads: tuple[str, ...] = WORKLOADS, use_redis: bool = True,
              markdown_path: str | os.PathLike[str] | None = None, command: str = "") -> list[Row]:
    """Run the workloads of *mode* ("smoke", "quick", "full"); writes the JSON rows (and for "full" the
    markdown report) and returns the rows."""
    sizes = SIZES[mode]
    notes = Notes()
    info = machine_info()
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    t_start = time.perf_counter()
    base = tempfile.mkdtemp(prefix="rocketstore-bench-", dir=workdir)
    # Spark's scratch and its JVM's temp files (lz4 natives, artifacts) under the work directory, which
    # goes at the end, rather than in /tmp, where they outlive the run (unless the caller chose already)
    saved_env = {k: os.environ.get(k) for k in ("SPARK_LOCAL_DIRS", "PYSPARK_SUBMIT_ARGS")}
    os.environ.setdefault("SPARK_LOCAL_DIRS", base)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options -Djava.io.tmpdir={base} pyspark-shell")
    ctx = Context(sizes, base, notes)
    redis: RedisServer | None = None
    wanted = set(workloads)
    print(f"rocketstore bench, {mode} mode, work directory {base}", flush=True)
    try:
        if use_redis and wanted & {"put", "sync"}:
            if RedisServer.executable() is None:
                notes.skip("Redis: redis-server is not on PATH (apt-get install -y redis-server); "
                           "the Redis rows are left out")
            else:
                redis = RedisServer(os.path.join(base, "redis"))
                try:
                    redis.start("always")
                    notes.extra["peer:Redis"] = f"redis-server {redis.version}, unix socket, AOF on, RDB off"
                except (OSError, RuntimeError) as exc:
                    notes.skip(f"Redis: could not start redis-server: {exc}")
                    redis.stop()
                    redis = None
        elif not use_redis:
            notes.skip("Redis: disabled for this run (--no-redis)")
        ctx.redis = redis
        _peer_versions(notes)
        _method_notes(notes, sizes)
        for body in BODY_SIZES:
            run_size(ctx, body, wanted - {"broker"})
        if "recovery" in wanted:
            recovery_workload(ctx)
        profile = None
        broker_profile = None
        if sizes.profile_puts and "put" in wanted:
            from bench.profile_put import profile_puts

            print(f"[profile: {sizes.profile_puts:,} puts]", flush=True)
            profile = profile_puts(sizes, ctx.path("profile-store"), sizes.profile_puts)
        if "rebuild" in wanted:
            from bench.rebuild_bench import rebuild_workload

            rebuild_workload(mode, base, notes, ctx.add)
        if "broker" in wanted:
            from bench.broker_bench import broker_workloads

            broker_profile = broker_workloads(sizes, base, notes, ctx.add, use_redis=use_redis)
            from bench.java_peer import java_peer_workloads

            java_peer_workloads(mode, base, notes, ctx.add)
        if "replication" in wanted:
            from bench.ha_bench import ha_workloads

            ha_workloads(mode, base, notes, ctx.add)
        if "spark" in wanted:
            from bench.spark_bench import spark_workload

            spark_workload(mode, base, notes, ctx.add, sizes.rounds)
    finally:
        if redis is not None:
            redis.stop()
        shutil.rmtree(base, ignore_errors=True)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    elapsed = time.perf_counter() - t_start
    info["load_start"] = info["load_average"]
    info["load_end"] = machine_info()["load_average"]
    rows = ctx.rows
    results = Path(results_path) if results_path is not None else DEFAULT_RESULTS
    write_json(rows, str(results))
    print()
    print(console_table(rows))
    for text in notes.skipped:
        print(f"skipped: {text}")
    print(f"\n{len(rows)} rows in {elapsed:.0f} s -> {results}")
    if markdown_path is not None:
        chart = write_chart(rows, str(REPO_ROOT / CHART_NAME))
        if chart is None:
            notes.caveat("No chart: matplotlib is not installed (pip install -e '.[bench]').")
        write_markdown(str(markdown_path), rows, notes, info, command, started, elapsed,
                       CHART_NAME if chart else None, profile, broker_profile)
        print(f"report -> {markdown_path}")
    return rows


def _method_notes(notes: Notes, sizes: Sizes) -> None:
    seg = sizes.segment_bytes
    notes.caveat(
        f"Rounds: {sizes.rounds} per workload ({sizes.sync_rounds} for sync flush, "
        f"{sizes.recovery_rounds} for recovery), the order of the sides "
        "reversed every other round; rates are medians of the rounds, latency percentiles pool all samples.")
    notes.caveat(
        f"Stores: RocketMQ's defaults (async flush unless stated, {seg / (1 << 20):,.0f} MiB commitlog "
        "segments, "
        "index on with 5M slots / 20M entries, CRC checked on recovery), background threads on unless "
        "stated, in the temp directory on the same disk as the peers' files.")
    notes.caveat(
        "Messages: a pool of 4,096 distinct messages per size (random body, tag `TagA`, one unique key each) "
        "built before the clock starts and cycled; the query store has one distinct key per message. The "
        "encode ceiling gets the same bodies, topic and pre-encoded properties.")
    notes.caveat(
        "Peers run with their defaults: persist-queue `SQLiteQueue(auto_commit=True)` (a pickled item per "
        "transaction, SQLite's default rollback journal with synchronous=FULL, so every put waits for the "
        "disk and its rate follows the disk's noise), litequeue `LiteQueue` (WAL, synchronous=NORMAL, TEXT "
        "items of the body's length); "
        "Redis XADD to one stream over a unix socket (its cheapest transport), AOF on with appendfsync "
        "always (sync flush rows) or everysec (put rows), one connection per writer thread.")
    notes.caveat(
        f"Sync-flush rounds stop early once {sizes.sync_round_cap_s:g} s have passed (on both sides), so a "
        "slow disk cannot stall the run; throughput is what was done over the time it took.")


def _peer_versions(notes: Notes) -> None:
    from importlib import metadata

    for dist in ("persist-queue", "litequeue"):
        try:
            notes.extra[f"peer:{dist}"] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="mode", const="quick",
                      help="a minute or two; writes bench/results/latest.json (the default)")
    mode.add_argument("--full", action="store_const", dest="mode", const="full",
                      help="~10-12 minutes; also writes BENCHMARKS.md and bench/benchmarks.png")
    mode.add_argument("--smoke", action="store_const", dest="mode", const="smoke",
                      help="seconds: tiny counts, proves the suite runs (the test suite's mode)")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument("--results", default=None, help=f"JSON output (default {DEFAULT_RESULTS})")
    parser.add_argument("--markdown", default=None,
                        help=f"markdown report (default {DEFAULT_MARKDOWN} with --full, none otherwise)")
    parser.add_argument("--workdir", default=None, help="where the scratch stores go (default: the temp dir)")
    parser.add_argument("--no-redis", action="store_true", help="leave the Redis peer out")
    args = parser.parse_args(argv)
    mode_name = args.mode or "quick"
    workloads = tuple(w.strip() for w in args.only.split(",") if w.strip())
    unknown = set(workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    markdown = args.markdown
    if markdown is None and mode_name == "full" and workloads == WORKLOADS:
        markdown = str(DEFAULT_MARKDOWN)
    command = "PYTHONPATH=src:. python3 -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    run_suite(mode_name, workdir=args.workdir, results_path=args.results, workloads=workloads,
              use_redis=not args.no_redis, markdown_path=markdown, command=command.strip())
    return 0
