"""The embedded store's workloads, each alternated with its references in the same run.

Per body size (100 B, 1 KiB):

* put: ``store.put`` one message at a time (async flush) against the encode+warm-mmap ceiling,
  persist-queue and litequeue puts, and Redis XADD with appendfsync everysec (one in flight);
  ``put_batch`` of 64 against the same ceiling and a 64-deep Redis pipeline.
* get: ``store.get(..., max_count=32)`` over a dispatched store, raw and decoded, against slicing the
  records out of a warm mapping; persist-queue's get as the consumer a user might pick instead.
* query: ``store.query(topic, key)`` latency (p50 / p99) against litequeue's look-up by message id
  (an indexed SQLite column).
* sync flush: 1, 8 and 64 writer threads on a SYNC_FLUSH store (group commit), throughput and ack
  latency, against Redis XADD with appendfsync always at the same number of connections, one command in
  flight each; one thread's latency also against a bare 4 KiB pwrite + fdatasync.

Once, with 1 KiB messages: ingest (put_batch + flush to disk) against a sequential write + fdatasync of the
same bytes, and abnormal recovery of that store against a sequential read of its commitlog bytes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.ceilings import (
    WarmMap,
    encode_into_warm_mmap,
    fdatasync_latencies,
    sequential_read,
    sequential_write_fdatasync,
    slice_from_warm_mmap,
    walk_records_with_crc,
)
from bench.common import (
    TOPIC,
    Notes,
    Row,
    Sizes,
    alternate,
    make_messages,
    median,
    percentile,
    size_label,
    store_config,
)
from bench.peers import LiteQueuePeer, PersistQueuePeer, RedisServer, RespConnection
from rocketstore import GetMessageStatus, Message, MessageStore, PutMessageStatus

__all__ = ["SYNC_P99_LIMIT_MS", "Context", "recovery_workload", "run_size"]

ENCODE_CEILING = "encode + copy into a warm mmap (pure Python)"
SLICE_CEILING = "copy records out of a warm mmap, 32 per call (pure Python)"
FSYNC_CEILING = "4 KiB pwrite into a preallocated file + fdatasync"
SYNC_P99_LIMIT_MS = 10.0
_POOL = 4096
_OK = PutMessageStatus.PUT_OK


@dataclass
class Context:
    sizes: Sizes
    workdir: str
    notes: Notes
    redis: RedisServer | None = None
    rows: list[Row] = field(default_factory=list)
    _seq: int = 0

    def path(self, name: str) -> str:
        self._seq += 1
        return os.path.join(self.workdir, f"{self._seq:03d}-{name}")

    def add(self, row: Row) -> None:
        self.rows.append(row)
        mark = {True: "meets", False: "BELOW", None: ""}[row.met]
        target = "" if row.target_ratio is None else f" (target {'>=' if row.better == 'higher' else '<='} " \
                                                     f"{row.target_ratio:g}x: {mark})"
        print(f"  {row.name}: {_fmt(row.ours)} {row.unit} vs {_fmt(row.reference_value)} -> "
              f"{row.ratio:.3g}x{target}", flush=True)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


# --- store loops ----------------------------------------------------------------------------------------


def _put_rate(store: MessageStore, messages: list[Message], n: int) -> float:
    seq = (messages * (n // len(messages) + 1))[:n]
    put = store.put
    bad = 0
    t0 = time.perf_counter()
    for m in seq:
        if put(m)[0] is not _OK:
            bad += 1
    dt = time.perf_counter() - t0
    if bad:
        raise RuntimeError(f"{bad} of {n} puts failed")
    store.wait_dispatched(120)  # untimed: the next round (of any side) must not compete with a backlog
    return n / dt


def _batch_rate(store: MessageStore, batches: list[list[Message]], n: int) -> float:
    count = max(1, n // 64)
    seq = (batches * (count // len(batches) + 1))[:count]
    put_batch = store.put_batch
    bad = 0
    t0 = time.perf_counter()
    for b in seq:
        if put_batch(b)[0] is not _OK:
            bad += 1
    dt = time.perf_counter() - t0
    if bad:
        raise RuntimeError(f"{bad} of {count} batches failed")
    store.wait_dispatched(120)
    return count * 64 / dt


def _fill(store: MessageStore, messages: list[Message], n: int) -> list[int]:
    """Put *n* messages (cycling through *messages*) in batches of 64; returns the record sizes seen."""
    sizes: list[int] = []
    for start in range(0, n, 64):
        chunk = [messages[(start + j) % len(messages)] for j in range(min(64, n - start))]
        result = store.put_batch(chunk)
        if not result.ok:
            raise RuntimeError(f"put_batch failed: {result.status} {result.remark}")
        if not sizes:
            sizes.extend(result.record_sizes)
    if not store.wait_dispatched(300):
        raise RuntimeError("dispatch did not catch up")
    return sizes


def _get_rate(store: MessageStore, n: int, decode: bool) -> float:
    get = store.get
    offset = 0
    got = 0
    t0 = time.perf_counter()
    while offset < n:
        r = get(TOPIC, 0, offset, 32)
        if r.status is not GetMessageStatus.FOUND:
            raise RuntimeError(f"get at {offset}: {r.status}")
        if decode:
            got += len(r.messages)
        else:
            got += len(r.records)
        offset = r.next_begin_offset
    return got / (time.perf_counter() - t0)


def _threaded(threads: int, total_ops: int, make_op: Callable[[int, int], tuple[Callable[[int], None],
                                                                                Callable[[], None]]],
              cap_s: float) -> tuple[float, list[float]]:
    """Run *total_ops* ops split over *threads*, all released at once; each thread stops early once
    *cap_s* has passed.  Returns (ops per second, every op's latency in seconds)."""
    per = max(1, total_ops // threads)
    barrier = threading.Barrier(threads + 1)
    samples: list[list[float]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    deadline = [0.0]

    def worker(idx: int) -> None:
        close: Callable[[], None] | None = None
        try:
            op, close = make_op(idx, per)
            barrier.wait()
            stop_at = deadline[0]
            clock = time.perf_counter
            mine = samples[idx]
            for i in range(per):
                t0 = clock()
                op(i)
                t1 = clock()
                mine.append(t1 - t0)
                if t1 > stop_at:
                    break
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which re-raises it
            errors.append(exc)
            barrier.abort()
        finally:
            if close is not None:
                close()

    pool = [threading.Thread(target=worker, args=(i,), name=f"bench-writer-{i}") for i in range(threads)]
    for t in pool:
        t.start()
    deadline[0] = time.perf_counter() + cap_s
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    dt = time.perf_counter() - t0
    if errors:
        raise errors[0]
    flat = [s for per_thread in samples for s in per_thread]
    return len(flat) / dt, flat


# --- per body size ---------------------------------------------------------------------------------------


def run_size(ctx: Context, body_bytes: int, workloads: set[str]) -> None:
    label = size_label(body_bytes)
    messages = make_messages(body_bytes, _POOL)
    bodies = [m.body for m in messages[:64]]
    peers: dict[str, Any] = {}
    for cls in (PersistQueuePeer, LiteQueuePeer):
        try:
            peers[cls.name] = cls(ctx.path(cls.__name__) + (".db" if cls is LiteQueuePeer else ""))
        except ImportError as exc:
            ctx.notes.skip(f"{cls.name}: {exc} (pip install -e '.[bench]')")
    phases = (("put", lambda: _put_workload(ctx, body_bytes, messages, bodies, peers)),
              ("get", lambda: _get_workload(ctx, body_bytes, messages, peers)),
              ("query", lambda: _query_workload(ctx, body_bytes, bodies, peers)),
              ("sync", lambda: _sync_workload(ctx, body_bytes, messages)))
    for name, run in phases:
        if name in workloads:
            print(f"[{name} {label}]", flush=True)
            t0 = time.perf_counter()
            run()
            print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    for peer in peers.values():
        queue = getattr(peer, "queue", None)
        close = getattr(queue, "close", None)
        if close is not None:
            with contextlib.suppress(sqlite3.Error, OSError):  # a peer's close failing changes no figure
                close()


def _put_workload(ctx: Context, body_bytes: int, messages: list[Message], bodies: list[bytes],
                  peers: dict[str, Any]) -> None:
    sz = ctx.sizes
    label = size_label(body_bytes)
    group = "put, async flush, 1 thread"
    warm = WarmMap(ctx.path("warm-map"), 64 << 20)
    put_dir, batch_dir = ctx.path("put-store"), ctx.path("batch-store")
    quiet_dir = ctx.path("put-store-no-background")
    store = MessageStore.open(put_dir, store_config(sz))
    bstore = MessageStore.open(batch_dir, store_config(sz))
    # the same puts with no dispatch / flush threads beside them (dispatch then runs untimed, between
    # rounds): isolates what the put path itself costs from what the dispatch thread takes of the GIL
    qstore = MessageStore.open(quiet_dir, store_config(sz), background=False)
    batches = [messages[i : i + 64] for i in range(0, len(messages), 64)]
    sides: dict[str, Callable[[], Any]] = {
        "ceiling": lambda: encode_into_warm_mmap(warm, messages, sz.ceiling_n),
        "put": lambda: _put_rate(store, messages, sz.put_n),
        "put_batch": lambda: _batch_rate(bstore, batches, sz.batch_n),
        "put_quiet": lambda: _put_rate(qstore, messages, sz.put_n),
    }
    for name, peer in peers.items():
        sides[name] = functools.partial(peer.put_rate, bodies, sz.peer_n)
    redis = ctx.redis
    if redis is not None:
        redis.set_appendfsync("everysec")
        sides["redis1"] = lambda: redis.xadd_rate(bodies[0], sz.redis_n, depth=1)
        sides["redis64"] = lambda: redis.xadd_rate(bodies[0], sz.redis_n * 8, depth=64)
    try:
        res = alternate(sz.rounds, sides)
    finally:
        store.close()
        bstore.close()
        qstore.close()
        warm.close()
        for d in (put_dir, batch_dir, quiet_dir):
            _remove(d)
    m = {k: median(v) for k, v in res.items()}
    ctx.add(Row(group, f"put {label}", "msgs/s", m["put"], ENCODE_CEILING, m["ceiling"],
                0.5 if body_bytes == 100 else None))
    ctx.add(Row(group, f"put {label}, no background threads (open(background=False))", "msgs/s",
                m["put_quiet"], ENCODE_CEILING, m["ceiling"]))
    ctx.add(Row(group, f"put_batch {label}, 64 per batch", "msgs/s", m["put_batch"], ENCODE_CEILING,
                m["ceiling"]))
    for name in peers:
        ctx.add(Row(group, f"put {label} vs {name} put", "msgs/s", m["put"], f"{name} put", m[name], 50.0))
    if redis is not None:
        ctx.add(Row(group, f"put {label} vs Redis XADD (everysec, 1 in flight)", "msgs/s", m["put"],
                    "Redis XADD, appendfsync everysec, 1 in flight", m["redis1"]))
        ctx.add(Row(group, f"put_batch {label} (64) vs Redis XADD (everysec, pipeline 64)", "msgs/s",
                    m["put_batch"], "Redis XADD, appendfsync everysec, 64-deep pipeline", m["redis64"]))


def _get_workload(ctx: Context, body_bytes: int, messages: list[Message], peers: dict[str, Any]) -> None:
    sz = ctx.sizes
    label = size_label(body_bytes)
    group = "get, 32 per call"
    directory = ctx.path("get-store")
    store = MessageStore.open(directory, store_config(sz))
    warm: WarmMap | None = None
    try:
        record_sizes = _fill(store, messages, sz.get_store_n)
        record_bytes = max(record_sizes)
        warm = WarmMap(ctx.path("warm-map"), min(256 << 20, max(1 << 20, record_bytes * sz.get_store_n)))
        n = sz.get_store_n
        sides: dict[str, Callable[[], Any]] = {
            "ceiling": lambda: slice_from_warm_mmap(warm, record_bytes, n),
            "get": lambda: _get_rate(store, n, decode=False),
            "get_decode": lambda: _get_rate(store, n, decode=True),
        }
        pq = peers.get(PersistQueuePeer.name)
        if pq is not None:
            # the put rounds left rounds * peer_n items in the queue: each round consumes peer_n of them
            bodies = [m.body for m in messages[:64]]
            sides["pq_get"] = lambda: pq.get_rate(bodies, sz.peer_n)
        res = alternate(sz.rounds, sides)
    finally:
        store.close()
        if warm is not None:
            warm.close()
        _remove(directory)
    m = {k: median(v) for k, v in res.items()}
    ctx.add(Row(group, f"get {label}, raw records", "msgs/s", m["get"], SLICE_CEILING, m["ceiling"]))
    ctx.add(Row(group, f"get {label}, decoded (GetResult.messages)", "msgs/s", m["get_decode"], SLICE_CEILING,
                m["ceiling"]))
    if "pq_get" in m:
        ctx.add(Row(group, f"get {label} vs persist-queue get", "msgs/s", m["get_decode"],
                    "persist-queue (SQLite) get, 1 per call", m["pq_get"]))


def _query_workload(ctx: Context, body_bytes: int, bodies: list[bytes], peers: dict[str, Any]) -> None:
    sz = ctx.sizes
    label = size_label(body_bytes)
    group = "query by key"
    lq = peers.get(LiteQueuePeer.name)
    if lq is None:
        ctx.notes.skip(f"query {label}: no reference (litequeue is not installed)")
        return
    n = sz.query_store_n
    messages = make_messages(body_bytes, n, key_prefix="order-")
    directory = ctx.path("query-store")
    store = MessageStore.open(directory, store_config(sz))
    try:
        _fill(store, messages, n)
        ids = lq.fill(bodies, n)
        rng = random.Random(11)
        per_round = max(1, sz.query_n // sz.rounds)
        query = store.query

        def ours() -> list[float]:
            keys = [f"order-{rng.randrange(n):08d}" for _ in range(per_round)]
            clock = time.perf_counter
            out = []
            for key in keys:
                t0 = clock()
                found = query(TOPIC, key)
                out.append(clock() - t0)
                if not found.messages:
                    raise RuntimeError(f"query lost {key}")
            return out

        def peer() -> list[float]:
            return lq.get_latencies([ids[rng.randrange(n)] for _ in range(per_round)])

        res = alternate(sz.rounds, {"ours": ours, "peer": peer})
    finally:
        store.close()
        _remove(directory)
    ours_s = [s for r in res["ours"] for s in r]
    peer_s = [s for r in res["peer"] for s in r]
    ref = "litequeue get by message id (indexed SQLite column)"
    for q in (50, 99):
        ctx.add(Row(group, f"query {label} p{q} latency ({n:,} keys)", "µs", percentile(ours_s, q) * 1e6,
                    f"{ref} p{q}", percentile(peer_s, q) * 1e6, better="lower"))


def _sync_workload(ctx: Context, body_bytes: int, messages: list[Message]) -> None:
    sz = ctx.sizes
    label = size_label(body_bytes)
    group = "sync flush, group commit"
    directory = ctx.path("sync-store")
    store = MessageStore.open(directory, store_config(sz, flush_disk_type="SYNC_FLUSH"))
    redis = ctx.redis
    if redis is not None:
        redis.set_appendfsync("always")
    put = store.put
    k = len(messages)

    def ours_op(idx: int, per: int) -> tuple[Callable[[int], None], Callable[[], None]]:
        base = idx * per

        def op(i: int) -> None:
            r = put(messages[(base + i) % k])
            if r[0] is not _OK:
                raise RuntimeError(f"sync put: {r[0]} {r.remark}")

        return op, lambda: None

    def redis_op(idx: int, per: int) -> tuple[Callable[[int], None], Callable[[], None]]:
        assert redis is not None
        conn = RespConnection(redis.socket_path)
        cmd = redis.xadd_command(b"bench-sync-%d" % body_bytes, messages[idx % k].body)
        send, read = conn.send, conn.read_reply

        def op(i: int) -> None:
            send(cmd)
            read()

        return op, conn.close

    def ours(threads: int) -> tuple[float, list[float]]:
        out = _threaded(threads, sz.sync_ops[threads], ours_op, sz.sync_round_cap_s)
        store.wait_dispatched(60)
        return out

    try:
        for threads in sorted(sz.sync_ops):
            sides: dict[str, Callable[[], Any]] = {"ours": functools.partial(ours, threads)}
            if redis is not None:
                sides["redis"] = functools.partial(_threaded, threads, sz.sync_ops[threads], redis_op,
                                                   sz.sync_round_cap_s)
            if threads == 1:
                def fsync_side() -> tuple[float, list[float]]:
                    samples = fdatasync_latencies(ctx.path("fsync-probe"), sz.fsync_ceiling_n)
                    return len(samples) / sum(samples), samples
                sides["fsync"] = fsync_side
            res = alternate(sz.sync_rounds, sides)
            rate = {k2: median([r[0] for r in v]) for k2, v in res.items()}
            lat = {k2: [s for r in v for s in r[1]] for k2, v in res.items()}
            name = f"sync put {label}, {threads} thread{'s' if threads > 1 else ''}"
            p99_ms = percentile(lat["ours"], 99) * 1e3
            ctx.notes.absolute.append((f"{name}: p99 ack latency", f"{p99_ms:.2f} ms",
                                       f"<= {SYNC_P99_LIMIT_MS:g} ms", p99_ms <= SYNC_P99_LIMIT_MS))
            if redis is not None:
                ref = f"Redis XADD, appendfsync always, {threads} connection{'s' if threads > 1 else ''}"
                ctx.add(Row(group, f"{name}: throughput", "msgs/s", rate["ours"], ref, rate["redis"], 1.0))
                for q in (50, 99):
                    ctx.add(Row(group, f"{name}: p{q} ack latency", "ms", percentile(lat["ours"], q) * 1e3,
                                f"{ref}, p{q}", percentile(lat["redis"], q) * 1e3, better="lower"))
            if threads == 1:
                for q in (50, 99):
                    ctx.add(Row(group, f"{name}: p{q} ack latency vs bare fdatasync", "ms",
                                percentile(lat["ours"], q) * 1e3, f"{FSYNC_CEILING}, p{q}",
                                percentile(lat["fsync"], q) * 1e3, better="lower"))
    finally:
        store.close()
        _remove(directory)
    if redis is None:
        ctx.notes.skip(f"sync flush {label}: Redis rows (redis-server is not on PATH; "
                       "apt-get install -y redis-server)")


# --- once: ingest and abnormal recovery -----------------------------------------------------------------


def recovery_workload(ctx: Context) -> None:
    sz = ctx.sizes
    body_bytes = 1024
    label = size_label(body_bytes)
    print(f"[ingest + abnormal recovery, {sz.recovery_bytes / (1 << 20):,.0f} MiB of {label} messages]",
          flush=True)
    directory = ctx.path("recovery-store")
    cfg = store_config(sz, mapped_file_size_commit_log=sz.recovery_segment)
    messages = make_messages(body_bytes, 8192, key_prefix="rec-")
    batches = [messages[i : i + 64] for i in range(0, len(messages), 64)]
    target = sz.recovery_bytes
    ceiling_before = sequential_write_fdatasync(ctx.path("seqwrite"), target)
    store = MessageStore.open(directory, cfg)
    try:
        put_batch = store.put_batch
        i = 0
        t0 = time.perf_counter()
        while store.max_commit_log_offset < target:
            result = put_batch(batches[i % len(batches)])
            if result[0] is not _OK:
                raise RuntimeError(f"put_batch failed: {result.status} {result.remark}")
            i += 1
        store.flush()
        ingest_dt = time.perf_counter() - t0
        end = store.max_commit_log_offset
        if not store.wait_dispatched(600):
            raise RuntimeError("dispatch did not catch up")
    finally:
        store.close()
    ceiling_after = sequential_write_fdatasync(ctx.path("seqwrite"), target)
    ctx.add(Row("ingest and recovery", f"ingest {label} via put_batch(64) + flush, "
                f"{end / (1 << 20):,.0f} MiB", "MB/s", end / ingest_dt / 1e6,
                "sequential write + fdatasync of as many bytes (1 MiB writes)",
                (ceiling_before + ceiling_after) / 2))

    seg = sz.recovery_segment
    commitlog = os.path.join(directory, "commitlog")
    ranges = []
    for name in sorted(os.listdir(commitlog)):
        start = int(name)
        if start < end:
            ranges.append((os.path.join(commitlog, name), min(seg, end - start)))

    def raw() -> float:
        return sequential_read(ranges)[0]

    def walk() -> float:
        return walk_records_with_crc(ranges)[0]

    def recover() -> float:
        with open(os.path.join(directory, "abort"), "wb"):
            pass
        # A crash before the first checkpoint flush: recovery must re-check every record from the first
        # segment (with the checkpoint present it starts from a recent segment, and measures little).
        try:
            os.unlink(os.path.join(directory, "checkpoint"))
        except FileNotFoundError:
            pass
        t0 = time.perf_counter()
        s = MessageStore.open(directory, cfg)
        dt = time.perf_counter() - t0
        try:
            rep = s.recovery
            if not rep.abnormal or rep.start_segment != 0 or rep.valid_end != end:
                raise RuntimeError(f"unexpected recovery: {rep}")
            ctx.notes.extra["recovery_records"] = rep.records_checked
        finally:
            s.close()
        return end / dt / 1e6

    try:
        res = alternate(sz.recovery_rounds, {"raw": raw, "walk": walk, "recovery": recover})
    finally:
        _remove(directory)
    ctx.add(Row("ingest and recovery", f"abnormal recovery, {end / (1 << 20):,.0f} MiB store of {label} "
                f"messages (full re-scan)", "MB/s", median(res["recovery"]),
                "sequential read of the same commitlog bytes (1 MiB reads, page cache)",
                median(res["raw"]), 0.5))
    ctx.add(Row("ingest and recovery", f"abnormal recovery, {end / (1 << 20):,.0f} MiB store vs a "
                "pure-Python "
                "record walk", "MB/s", median(res["recovery"]),
                "walk the same records in pure Python, checking each body CRC (no decode, dispatch or index)",
                median(res["walk"])))
    ctx.notes.caveat(
        "Recovery: the page cache is not dropped (that needs root and would disturb the other users of this "
        "machine), so both the recovery and the sequential read see the store's files in memory. Before each "
        "open the `abort` file is touched and the `checkpoint` removed (a crash before the first checkpoint "
        "flush), so recovery re-checks every record (CRC on), re-dispatches it and rebuilds the index.")
