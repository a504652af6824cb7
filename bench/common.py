"""What every workload shares: result rows, the sizes of each mode, alternation, percentiles, messages."""

from __future__ import annotations

import math
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketstore import Message, StoreConfig
from rocketstore.message.properties import encode_properties

__all__ = [
    "BODY_SIZES",
    "SIZES",
    "TOPIC",
    "Notes",
    "Row",
    "Sizes",
    "alternate",
    "make_messages",
    "median",
    "percentile",
    "size_label",
    "stop_process",
    "store_config",
]

TOPIC = "BenchTopic"
#: The two message body sizes every workload runs at.
BODY_SIZES = (100, 1024)


def size_label(body_bytes: int) -> str:
    return f"{body_bytes} B" if body_bytes < 1024 else f"{body_bytes // 1024} KiB"


@dataclass
class Row:
    """One result: ours against a reference measured in the same run.

    ``better`` says which way is good: "higher" for rates, "lower" for latencies (then a target is a
    ceiling on the ratio, e.g. ratio <= 1).  ``target_ratio`` is None when the issue sets no target.
    """

    group: str
    name: str
    unit: str
    ours: float
    reference: str
    reference_value: float
    target_ratio: float | None = None
    better: str = "higher"

    @property
    def ratio(self) -> float:
        return self.ours / self.reference_value

    @property
    def met(self) -> bool | None:
        if self.target_ratio is None:
            return None
        return self.ratio >= self.target_ratio if self.better == "higher" else self.ratio <= self.target_ratio

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "unit": self.unit,
            "ours": self.ours,
            "reference": self.reference,
            "reference_value": self.reference_value,
            "ratio": self.ours / self.reference_value,
            "target_ratio": self.target_ratio,
            "better": self.better,
        }


@dataclass
class Notes:
    """Things a reader must know about this run: skipped peers, caveats, checks against absolute targets."""

    skipped: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    #: (what, measured, limit, ok) for targets the issue states in absolute terms (p99 <= 10 ms)
    absolute: list[tuple[str, str, str, bool]] = field(default_factory=list)
    extra: dict[str, object] = field(default_factory=dict)

    def skip(self, text: str) -> None:
        if text not in self.skipped:
            self.skipped.append(text)
            print(f"  [skip] {text}", flush=True)

    def caveat(self, text: str) -> None:
        if text not in self.caveats:
            self.caveats.append(text)


@dataclass(frozen=True)
class Sizes:
    """Counts per mode.  Rates are measured over counts, never over fixed wall-clock windows, except that
    the sync-flush rounds stop early at ``sync_round_cap_s`` so a slow disk cannot stall the run."""

    mode: str
    rounds: int
    put_n: int  # single puts per round
    batch_n: int  # messages per round through put_batch(64)
    ceiling_n: int  # records per round of the encode+mmap ceiling
    peer_n: int  # puts per round for persist-queue / litequeue
    redis_n: int  # XADDs per round for the Redis everysec comparisons
    get_store_n: int  # messages in the store the get workload reads
    query_store_n: int  # messages with distinct keys in the store the query workload searches
    query_n: int  # queries per side in all
    sync_ops: dict[int, int]  # writer threads -> puts per round
    sync_round_cap_s: float
    sync_rounds: int  # more, shorter rounds: the disk's latency swings with the other users of the machine
    fsync_ceiling_n: int  # 4 KiB pwrite + fdatasync samples per round
    recovery_bytes: int  # commitlog bytes of the recovery store
    recovery_segment: int  # its segment size
    recovery_rounds: int
    small_index: bool  # small index files (smoke: keep the test's disk footprint tiny)
    segment_bytes: int  # commitlog segment size of the other stores
    profile_puts: int  # 0: no profile


SIZES = {
    "smoke": Sizes("smoke", rounds=2, put_n=1500, batch_n=1280, ceiling_n=3000, peer_n=60, redis_n=200,
                   get_store_n=1000, query_store_n=500, query_n=100, sync_ops={1: 20, 8: 80, 64: 192},
                   sync_round_cap_s=2.0, sync_rounds=2, fsync_ceiling_n=20, recovery_bytes=3 << 20,
                   recovery_segment=1 << 20, recovery_rounds=1, small_index=True, segment_bytes=8 << 20,
                   profile_puts=0),
    "quick": Sizes("quick", rounds=3, put_n=30_000, batch_n=64_000, ceiling_n=200_000, peer_n=1000,
                   redis_n=2000, get_store_n=50_000, query_store_n=20_000, query_n=3000,
                   sync_ops={1: 300, 8: 1200, 64: 3200}, sync_round_cap_s=3.0, sync_rounds=3,
                   fsync_ceiling_n=200, recovery_bytes=64 << 20, recovery_segment=16 << 20, recovery_rounds=3,
                   small_index=False, segment_bytes=1 << 30, profile_puts=0),
    "full": Sizes("full", rounds=3, put_n=150_000, batch_n=320_000, ceiling_n=500_000, peer_n=3000,
                  redis_n=5000, get_store_n=200_000, query_store_n=100_000, query_n=10_000,
                  sync_ops={1: 1000, 8: 4000, 64: 9600}, sync_round_cap_s=6.0, sync_rounds=5,
                  fsync_ceiling_n=500, recovery_bytes=(1 << 30) + (16 << 20), recovery_segment=1 << 30,
                  recovery_rounds=3, small_index=False, segment_bytes=1 << 30, profile_puts=100_000),
}


def store_config(sizes: Sizes, **changes: object) -> StoreConfig:
    """RocketMQ's defaults, except the segment size (and tiny index files in smoke mode)."""
    values: dict[str, object] = {"mapped_file_size_commit_log": sizes.segment_bytes}
    if sizes.small_index:
        values.update(max_hash_slot_num=20_000, max_index_num=80_000, mapped_file_size_consume_queue=60_000)
    values.update(changes)
    return StoreConfig(**values)  # type: ignore[arg-type]


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of *samples*."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def alternate(rounds: int, sides: dict[str, Callable[[], Any]]) -> dict[str, list[Any]]:
    """Run each side once per round, reversing the order every other round (A B, B A, A B, ...) so that
    drift in the machine's load falls on both sides alike; returns every side's per-round results."""
    results: dict[str, list[Any]] = {name: [] for name in sides}
    order = list(sides.items())
    for r in range(rounds):
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            results[name].append(fn())
    return results


def make_messages(body_bytes: int, count: int, *, key_prefix: str = "k", queue_id: int = 0,
                  seed: int = 7) -> list[Message]:
    """*count* distinct messages of one topic and queue: random bodies, tag ``TagA``, one key each."""
    rng = random.Random(seed + body_bytes)
    bodies = [rng.randbytes(body_bytes) for _ in range(min(count, 64))]
    return [Message.create(TOPIC, bodies[i % len(bodies)], tags="TagA", keys=f"{key_prefix}{i:08d}",
                           queue_id=queue_id) for i in range(count)]


def properties_bytes(message: Message) -> bytes:
    return encode_properties(message.properties).encode("utf-8")


def now() -> float:
    return time.perf_counter()


def stop_process(proc: subprocess.Popen[Any] | None, timeout_s: float = 15.0) -> None:
    """Terminate a peer or server process the bench started, and kill it if it does not go in time."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
