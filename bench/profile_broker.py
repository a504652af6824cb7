"""Where the broker's time goes: py-spy (if installed) samples the ``rocketstore serve`` process during
one-at-a-time sends (:func:`profile_broker`), and its raw collapsed stacks are aggregated per thread and per
function (:func:`parse_py_spy_raw`) for the report.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from bench.broker_servers import BrokerProcess
from bench.common import Notes

if TYPE_CHECKING:  # bench.broker_bench imports this module
    from bench.broker_bench import OurClient

__all__ = ["parse_py_spy_raw", "profile_broker"]

def _py_spy() -> str | None:
    """py-spy on PATH, or beside this interpreter (the bench extra installs it into the venv, whose bin/ a
    run as ``.venv/bin/python -m bench`` does not put on PATH)."""
    return shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))


def _short(frame: str) -> str:
    """``func (path/file.py:123)`` -> ``func (file path from the package root)`` without the line."""
    m = re.match(r"^(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    func, path = m.groups()
    for marker in ("/src/rocketstore/", "site-packages/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/src/rocketstore/":
                path = "rocketstore/" + path
            break
    return f"{func} ({path})"


def parse_py_spy_raw(path: str, top: int = 18) -> dict[str, Any]:
    """Aggregate py-spy's raw (collapsed stack) output: samples per thread, own and inclusive per function."""
    threads: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or " " not in line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            frames = stack.split(";")
            thread = "?"
            if frames and frames[0].startswith(("thread ", "process ")):
                while frames and frames[0].startswith(("thread ", "process ")):
                    head = frames.pop(0)
                    if head.startswith("thread "):
                        thread = head
                m = re.search(r'"([^"]+)"', thread)
                thread = m.group(1) if m else thread
            total += n
            threads[thread] += n
            if frames:
                own[_short(frames[-1])] += n
                for f in {_short(f) for f in frames}:
                    incl[f] += n
    return {"samples": total, "threads": threads.most_common(),
            "own": own.most_common(top), "inclusive": incl.most_common(top + 12)}


def profile_broker(client: OurClient, broker: BrokerProcess, workdir: str, topic: str, body: bytes,
                   seconds: int, notes: Notes) -> dict[str, Any] | None:
    exe = _py_spy()
    if exe is None:
        notes.skip("Broker profile: py-spy is not installed (pip install py-spy)")
        return None
    raw = os.path.join(workdir, "broker-profile.txt")
    args = [exe, "record", "--pid", str(broker.pid), "--duration", str(seconds), "--rate", "250",
            "--format", "raw", "--threads", "--output", raw, "--nonblocking"]
    spy = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        time.sleep(0.5)  # let py-spy attach before the sends start
        sent = 0
        t0 = time.perf_counter()
        cpu0 = broker.cpu_seconds()
        while spy.poll() is None and time.perf_counter() - t0 < seconds + 30:
            client.send_rate(topic, body, 200)
            sent += 200
        dt = time.perf_counter() - t0
        cpu = broker.cpu_seconds() - cpu0
        spy.wait(timeout=60)
    except BaseException:
        if spy.poll() is None:
            spy.kill()
            spy.wait(10)
        raise
    err = spy.stderr.read() if spy.stderr is not None else ""
    if spy.returncode != 0 or not os.path.exists(raw):
        notes.skip(f"Broker profile: py-spy failed ({spy.returncode}): {err.strip()[-300:]}")
        return None
    out = parse_py_spy_raw(raw)
    out.update(sends=sent, seconds=dt, rate=sent / dt, broker_cpu_per_send_us=cpu / sent * 1e6,
               sample_rate=250, duration=seconds, body_bytes=len(body))
    return out
