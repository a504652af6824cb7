"""Exactly once into Parquet across crashes: a streaming query (stream_to_parquet.py, a subprocess with its
own JVM) reads a topic while a producer keeps sending; it is SIGKILLed (whole process group: driver, JVM and
Python workers) at random points after it made progress, restarted on the same checkpoint, killed again,
and finally run with Trigger.AvailableNow.  Every message must be in the Parquet output exactly once."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

from rocketstore.client import Producer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parent / "stream_to_parquet.py"
TOPIC = "SparkRestart"
KILLS = 2


class Sender(threading.Thread):
    """Sends messages with unique keys, a few per 100 ms, until stopped; remembers what the broker took."""

    def __init__(self, namesrv: str) -> None:
        super().__init__(daemon=True)
        self.namesrv = namesrv
        self.stop_event = threading.Event()
        self.sent: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._go())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    async def _go(self) -> None:
        async with Producer(self.namesrv, "restart-producer") as producer:
            i = 0
            while not self.stop_event.is_set():
                for _ in range(1):
                    key = f"msg-{i:05d}"
                    result = await producer.send(TOPIC, key.encode(), keys=key, tags="T")
                    assert result.status == "SEND_OK"
                    self.sent.append(key)
                    i += 1
                await asyncio.sleep(0.1)


def _start(args: list[str], log: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen([sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE,
                            stderr=log.open("a"), text=True, env=env, start_new_session=True)


def _wait_for_batches(proc: subprocess.Popen[str], count: int, timeout_s: float, log: Path) -> list[str]:
    """Lines until *count* non-empty batches completed; AssertionError on exit or timeout."""
    assert proc.stdout is not None
    lines: list[str] = []
    done = 0
    deadline = time.monotonic() + timeout_s
    while done < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"no progress in {timeout_s} s: {lines}")
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the query exited ({proc.wait()}) early: {lines}\n{log.read_text()[-3000:]}")
        lines.append(line.strip())
        print(f"{time.monotonic():.1f} {line.strip()}", file=sys.stderr)
        parts = line.split()
        if parts[:1] == ["BATCH"] and int(parts[2]) > 0:
            done += 1
    return lines


def _kill_group(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)  # the group this test created: driver, its JVM, its Python workers
    proc.wait(30)


def test_killed_and_restarted_stream_writes_every_message_exactly_once(spark: Any, tmp_path: Path) -> None:
    rng = random.Random()
    checkpoint, output, log = tmp_path / "ckpt", tmp_path / "out", tmp_path / "query.log"
    with LocalCluster(tmp_path / "store") as cluster:
        sender = Sender(cluster.namesrv_addr)
        sender.start()
        try:
            cluster.wait_until(lambda: cluster.broker.topics.get(TOPIC) is not None, 20, "the topic")
            for run in range(KILLS):
                proc = _start([cluster.namesrv_addr, TOPIC, str(checkpoint), str(output)], log)
                try:
                    _wait_for_batches(proc, 1, 150, log)
                    time.sleep(rng.uniform(0.0, 2.0))  # somewhere inside a later batch, or between two
                finally:
                    _kill_group(proc)
        finally:
            sender.stop_event.set()
            sender.join(30)
        assert sender.error is None, sender.error
        print(f"{time.monotonic():.1f} sent {len(sender.sent)}", file=sys.stderr)
        final = _start([cluster.namesrv_addr, TOPIC, str(checkpoint), str(output), "--available-now"], log)
        try:
            assert final.wait(180) == 0, log.read_text()[-3000:]
        finally:
            if final.poll() is None:
                _kill_group(final)

    print(f"{time.monotonic():.1f} final run done", file=sys.stderr)
    rows = spark.read.parquet(str(output)).select("keys", "uniqKey", "body").collect()
    counts = Counter(r["keys"] for r in rows)
    duplicated = {k: n for k, n in counts.items() if n != 1}
    assert not duplicated, f"{len(duplicated)} keys not exactly once, e.g. {sorted(duplicated.items())[:5]}"
    assert set(counts) == set(sender.sent), (len(counts), len(sender.sent))
    assert all(bytes(r["body"]) == r["keys"].encode() for r in rows)
    assert len({r["uniqKey"] for r in rows}) == len(rows) == len(sender.sent)
