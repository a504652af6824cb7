"""Where a put's time goes: cProfile (deterministic, per function) and pyinstrument (sampling) if installed.

Three views of *n* puts of 100 B messages:

1. cProfile of the puts on a store opened with ``background=False``: the put path alone, with no dispatch
   or flush thread taking the GIL in the middle of it;
2. cProfile of the dispatch of those same records (``wait_dispatched()`` runs it in the calling thread):
   the work the dispatch thread does per message, which it takes from the putting thread's GIL time in a
   normal store (and which abnormal recovery repeats for every record);
3. pyinstrument (if installed) of the puts on a normal store (background threads on), as the benchmark
   runs them: wall-clock time of the putting thread, GIL waits included.

cProfile's own overhead inflates functions that are called often and do little: read its columns for
ranking, and the benchmark's unprofiled rows for speed.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import shutil
import time
from typing import Any

from bench.common import Sizes, make_messages, store_config
from rocketstore import Message, MessageStore

__all__ = ["profile_puts"]


def _run(store: MessageStore, seq: list[Message]) -> None:
    put = store.put
    for m in seq:
        put(m)


def _table(prof: cProfile.Profile, n: int, top: int) -> tuple[float, list[dict[str, Any]]]:
    stats = pstats.Stats(prof, stream=io.StringIO())
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    rows = [{"function": _where(filename, line, func), "ncalls": nc, "tottime_s": tt, "cumtime_s": ct,
             "tottime_share": tt / total if total else 0.0, "per_op_us": tt / n * 1e6}
            for (filename, line, func), (_cc, nc, tt, ct, _callers) in raw.items()]
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    return total, rows[:top]


def profile_puts(sizes: Sizes, directory: str, n: int, body_bytes: int = 100,
                 top: int = 16) -> dict[str, Any]:
    messages = make_messages(body_bytes, 4096)
    seq = (messages * (n // len(messages) + 1))[:n]
    out: dict[str, Any] = {"n": n, "body_bytes": body_bytes}
    store = MessageStore.open(directory + "-a", store_config(sizes), background=False)
    try:
        _run(store, seq[:2000])  # warm up: first segment pages, caches
        store.wait_dispatched(120)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        _run(store, seq)
        prof.disable()
        out["put_seconds"] = time.perf_counter() - t0
        out["put_total_s"], out["put"] = _table(prof, n, top)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        store.wait_dispatched(600)
        prof.disable()
        out["dispatch_seconds"] = time.perf_counter() - t0
        out["dispatch_total_s"], out["dispatch"] = _table(prof, n, top)
    finally:
        store.close()
        shutil.rmtree(directory + "-a", ignore_errors=True)

    try:
        from pyinstrument import Profiler
    except ImportError:
        out["pyinstrument"] = None
        return out
    store = MessageStore.open(directory + "-b", store_config(sizes))
    try:
        _run(store, seq[:2000])
        store.wait_dispatched(120)
        profiler = Profiler(interval=0.0005)
        profiler.start()
        t0 = time.perf_counter()
        _run(store, seq)
        out["pyinstrument_seconds"] = time.perf_counter() - t0
        profiler.stop()
        store.wait_dispatched(600)
        text = profiler.output_text(unicode=False, color=False, show_all=False)
    finally:
        store.close()
        shutil.rmtree(directory + "-b", ignore_errors=True)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out["pyinstrument"] = "\n".join(lines[:50])
    return out


def _where(filename: str, line: int, func: str) -> str:
    if filename == "~":
        return func  # a builtin, e.g. <method 'pack_into' of '_struct.Struct' objects>
    short = filename
    for marker in ("/src/rocketstore/", "/site-packages/", "/lib/python3"):
        if marker in filename:
            short = filename.split(marker, 1)[1]
            if marker == "/src/rocketstore/":
                short = "rocketstore/" + short
            break
    return f"{short}:{line} {func}"
