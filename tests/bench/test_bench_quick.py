"""The benchmark suite runs end to end at smoke counts and every row it reports is well-formed.

No performance assertions: the figures of a seconds-long run on a shared machine mean nothing; this only
keeps ``python -m bench`` from rotting.  Optional peers (persist-queue, litequeue, redis-server) are used
when present and skipped with a note when not, so the rows checked for presence need none of them.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # bench/ sits at the repository root, beside src/
    sys.path.insert(0, str(REPO_ROOT))

from bench.broker_bench import BUSY_GROUP
from bench.broker_sync_bench import SYNC_GROUP
from bench.ha_bench import GROUP as HA_GROUP
from bench.runner import main, run_suite

REQUIRED_KEYS = {"name", "unit", "ours", "reference", "reference_value", "ratio", "target_ratio"}


def _positive(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value > 0


def test_smoke_suite_writes_well_formed_ratio_rows(tmp_path: Path) -> None:
    results = tmp_path / "results" / "latest.json"
    returned = run_suite("smoke", workdir=str(tmp_path), results_path=results)

    rows = json.loads(results.read_text(encoding="utf-8"))
    assert isinstance(rows, list) and rows
    assert len(rows) == len(returned)
    names = [row["name"] for row in rows]
    assert len(set(names)) == len(names), "row names must be unique"
    for row in rows:
        assert REQUIRED_KEYS <= set(row), row
        assert isinstance(row["name"], str) and row["name"].strip()
        assert isinstance(row["unit"], str) and row["unit"].strip()
        assert isinstance(row["reference"], str) and row["reference"].strip()
        assert _positive(row["ours"]), row
        assert _positive(row["reference_value"]), row
        assert _positive(row["ratio"]), row
        assert math.isclose(row["ratio"], row["ours"] / row["reference_value"], rel_tol=1e-9), row
        assert row["target_ratio"] is None or _positive(row["target_ratio"]), row
        assert row.get("better", "higher") in ("higher", "lower"), row
    # the workloads that need no optional peer always report
    for prefix in ("put 100 B", "put_batch 1 KiB", "get 100 B, raw records", "sync put 100 B, 1 thread: p50",
                   "ingest 1 KiB", "abnormal recovery"):
        assert any(name.startswith(prefix) for name in names), prefix
    # master/slave replication and transactions: brokers of our own in their own processes, nothing optional
    ha_rows = [r for r in returned if r.group == HA_GROUP]
    for prefix in ("replication catch-up", "send 100 B, one at a time (Producer.send): SYNC_MASTER",
                   "transactional send 100 B"):
        assert any(r.name.startswith(prefix) for r in ha_rows), prefix
    assert len(ha_rows) == 3 and all(r.target_ratio is None for r in ha_rows)
    # the broker-over-loopback rows need redis-server (every reference is Redis): present, or skipped with a note
    broker_rows = [r for r in returned if r.group.startswith("broker over loopback")]
    if shutil.which("redis-server") is not None:
        for prefix in ("send 100 B, one at a time", "send 1 KiB, 64 in flight", "send_batch 100 B",
                       "pull 1 KiB"):
            assert any(r.name.startswith(prefix) for r in broker_rows), prefix
        # a second broker with SYNC_FLUSH against Redis with appendfsync always: informational, no target
        sync_rows = [r for r in broker_rows if r.group == SYNC_GROUP]
        for prefix in ("sync send 100 B, one at a time", "sync send 1 KiB, 64 in flight", "sync send_batch 100 B",
                       "sync send_batch 1 KiB"):
            assert any(r.name.startswith(prefix) for r in sync_rows), prefix
        assert len(sync_rows) == 6 and all(r.target_ratio is None for r in sync_rows)
        assert all("appendfsync always" in r.reference for r in sync_rows)
        # the opt-in busy-polling pair, measured beside the default pair: informational, no target
        busy_rows = [r for r in broker_rows if r.group == BUSY_GROUP]
        assert len(busy_rows) == 8 and all(r.target_ratio is None for r in busy_rows)
        assert {r.reference_value for r in busy_rows if r.name.endswith("vs the default (off)")} <= {
            r.ours for r in broker_rows if r.group != BUSY_GROUP}
        # the round-trip ceiling needs nothing optional; the NATS rows need nats-server
        assert any(r.name.startswith("send 100 B, one at a time (Producer.send) vs an echo round trip (asyncio)")
                   for r in returned)
        nats_rows = [r for r in broker_rows if "NATS JetStream" in r.name]
        if shutil.which("nats-server") is not None or Path("/usr/sbin/nats-server").exists():
            assert any(r.name.startswith("send 1 KiB, one at a time") for r in nats_rows)
            assert any(r.name.startswith("send_batch 100 B") for r in nats_rows)
        else:
            assert not nats_rows
    else:
        assert not broker_rows


def test_broker_rows_are_skipped_with_a_note_without_redis(tmp_path: Path) -> None:
    from bench.broker_bench import broker_workloads
    from bench.common import SIZES, Notes

    notes = Notes()
    rows: list[object] = []
    assert broker_workloads(SIZES["smoke"], str(tmp_path), notes, rows.append, use_redis=False) is None
    assert rows == [] and any("Broker over loopback" in text for text in notes.skipped)


def test_command_line_runs_one_workload_in_smoke_mode(tmp_path: Path) -> None:
    results = tmp_path / "one.json"
    assert main(["--smoke", "--only", "get", "--no-redis", "--results", str(results),
                 "--workdir", str(tmp_path)]) == 0
    rows = json.loads(results.read_text(encoding="utf-8"))
    assert rows and all(row["name"].startswith("get ") for row in rows)
