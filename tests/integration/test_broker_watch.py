"""``rocketstore broker-admin watch`` against a real broker and name server: the per-sample lines count exactly
the messages put and pulled between samples, ``--count`` bounds the watch, Ctrl-C ends it cleanly and still
writes the ``--png`` chart, a broker that does not answer gets an error line per round (the watch goes on,
the exit status is 1), and ``--png`` without matplotlib fails at once with one line naming the extra.

Runs the CLI in process (``main([...])``) where the test needs nothing while it runs, and as a subprocess
(as a user runs it) where messages are sent between its samples or it is interrupted.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, pull_all
from PIL import Image
from serve_process import env, free_port

from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig
from rocketstore.cli.main import main
from rocketstore.client import Producer
from rocketstore.remoting.transport import run
from rocketstore.store.config import StoreConfig

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
LINE_TIMEOUT_S = 60.0


def rocketstore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


class Watch:
    """``rocketstore broker-admin watch ...`` in a subprocess, its stdout read line by line by a thread."""

    def __init__(self, *args: str, extra_env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rocketstore.cli.main", "broker-admin", "watch", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**env(), **(extra_env or {})})
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_json(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=LINE_TIMEOUT_S)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"no line from the watch in {LINE_TIMEOUT_S} s (so far: {self.seen})") from None
        if line is None:
            self.process.wait()
            raise AssertionError(f"the watch ended early ({self.process.returncode}): {self.stderr()}")
        self.seen.append(line)
        return json.loads(line)  # type: ignore[no-any-return]

    def json_until(self, predicate: Any) -> dict[str, Any]:
        while not predicate(row := self.next_json()):
            pass
        return row

    def interrupt(self) -> tuple[int, list[dict[str, Any]], str]:
        """Ctrl-C; (exit status, the rows printed after the last one read, stderr)."""
        self.process.send_signal(signal.SIGINT)
        status = self.process.wait(timeout=LINE_TIMEOUT_S)
        self._reader.join(LINE_TIMEOUT_S)
        rest = []
        while (line := self.lines.get_nowait()) is not None:
            self.seen.append(line)
            rest.append(json.loads(line))
        return status, rest, self.stderr()

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def broker_totals(cluster: LocalCluster) -> tuple[int, int, int]:
    """(messages put, messages handed to pulls, commitlog max offset) as the broker counts them."""
    store = cluster.broker.stats.store
    return cluster.call(lambda: (store.put_message_count, store.get_transferred_count,
                                 cluster.broker.store.max_commit_log_offset))


def test_watch_lines_count_the_puts_and_gets_between_samples_and_ctrl_c_still_writes_the_chart(
        cluster: LocalCluster, tmp_path: Path) -> None:
    count, topic = 30, "WatchTopic"
    png = tmp_path / "watch.png"
    watch = Watch("-b", cluster.broker_addr, "-n", cluster.namesrv_addr, "--interval", "0.2", "--json",
                  "--png", str(png))
    try:
        first = watch.next_json()
        assert (first["sample"], first["broker"], first["putDelta"], first["putPerS"]) == (
            1, cluster.broker_addr, None, None)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "watch-producer") as producer:
                for i in range(count):
                    await producer.send(topic, f"m{i}".encode() * 50)

        run(send())
        assert len(pull_all(cluster.namesrv_addr, topic, expected=count)) == count
        put_total, get_total, commit_log_end = broker_totals(cluster)
        # the first sample saw none of this traffic; wait for a sample that saw all of it
        last = watch.json_until(lambda row: "error" not in row and row["msgPutTotalTodayNow"] == put_total
                                and row["msgGetTotalTodayNow"] == get_total)
        status, rest, stderr = watch.interrupt()
    finally:
        watch.kill()

    assert status == 0, stderr
    assert "Traceback" not in stderr
    rows = [json.loads(line) for line in watch.seen]
    assert [r["sample"] for r in rows] == list(range(1, len(rows) + 1))
    assert all("error" not in r for r in rows)
    upto = rows[:rows.index(last) + 1]
    assert put_total - first["msgPutTotalTodayNow"] == count
    assert sum(r["putDelta"] for r in upto[1:]) == count
    # pull_all pulls again when a pass found fewer than *count* (the consume queues lag the commitlog by a
    # moment), and the broker counts the earlier pass's messages too: at least *count* gets, as it counted them
    assert sum(r["getDelta"] for r in upto[1:]) == get_total - first["msgGetTotalTodayNow"] >= count
    assert sum(r["commitLogGrowthBytes"] for r in upto[1:]) == commit_log_end - first["commitLogMaxOffset"] > 0
    assert any(r["putPerS"] > 0 for r in upto[1:]) and any(r["getPerS"] > 0 for r in upto[1:])
    assert any(r["writeMiBPerS"] > 0 for r in upto[1:])
    for r in upto[1:]:
        assert r["intervalS"] > 0
        assert r["putPerS"] == pytest.approx(r["putDelta"] / r["intervalS"], rel=0.01, abs=0.01)
    assert all(r["putDelta"] == 0 for r in rest)  # nothing was sent after that
    assert all(isinstance(r["pullHoldCount"], int) and isinstance(r["dispatchBehindBytes"], int) for r in rows)

    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    with Image.open(png) as image:
        image.verify()
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size == (1080, 720)  # figsize 12 x 8 at 90 dpi
    assert f"written to {png}" in stderr


def test_count_bounds_the_watch_in_text_and_json(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    ns = ("-n", cluster.namesrv_addr)
    status, out, err = rocketstore(capsys, "broker-admin", "watch", "-b", cluster.broker_addr, "--count", "3",
                                   "--interval", "0.05", *ns)
    assert status == 0, err
    header, *lines = out.splitlines()
    assert header.split() == ["TIME", "BROKER", "PUT/S", "GET/S", "WRITE", "MiB/S", "DISPATCH", "BEHIND", "PULL",
                              "HOLDS", "TO", "FLUSH", "PUT", "MAX", "MS"]
    assert len(lines) == 3
    cells = [line.split() for line in lines]
    assert all(c[1] == cluster.broker_addr for c in cells)
    assert cells[0][2:5] == ["-", "-", "-"]  # no rates before a second sample
    assert [c[2] for c in cells[1:]] == ["0.0", "0.0"]

    # every master of a cluster, as JSON lines
    status, out, err = rocketstore(capsys, "broker-admin", "watch", "-c", "DefaultCluster", "--count", "2",
                                   "--interval", "0.05", "--json", *ns)
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["sample"], r["broker"]) for r in rows] == [(1, cluster.broker_addr), (2, cluster.broker_addr)]
    assert rows[1]["putDelta"] == 0 and rows[1]["getDelta"] == 0

    for bad in (["--count", "0"], ["--interval", "0"], ["--interval", "soon"]):
        with pytest.raises(SystemExit) as info:
            main(["broker-admin", "watch", "-b", cluster.broker_addr, *bad, *ns])
        assert info.value.code == 2
    capsys.readouterr()


def test_an_unreachable_broker_gets_one_error_line_per_round_and_exit_status_1(
        capsys: pytest.CaptureFixture[str]) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    for extra in ([], ["--json"]):
        status, out, err = rocketstore(capsys, "broker-admin", "watch", "-b", nowhere, "-n", nowhere, "--count", "3",
                                       "--interval", "0.05", *extra)
        assert status == 1
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("rocketstore: error: 3 of 3 broker answers in 3 samples failed")
        lines = out.splitlines()
        if extra:
            rows = [json.loads(line) for line in lines]
            assert [(r["sample"], r["broker"]) for r in rows] == [(1, nowhere), (2, nowhere), (3, nowhere)]
            assert all(r["error"] for r in rows)
        else:
            assert len(lines) == 4 and lines[0].startswith("TIME")
            assert all(nowhere in line and "  error: " in line for line in lines[1:])


def test_the_watch_goes_on_when_the_broker_stops_answering(cluster: LocalCluster, tmp_path: Path) -> None:
    png = tmp_path / "down.png"
    watch = Watch("-b", cluster.broker_addr, "-n", cluster.namesrv_addr, "--interval", "0.1", "--json",
                  "--png", str(png))
    try:
        watch.json_until(lambda row: row["sample"] >= 2 and "error" not in row)
        cluster.close()
        down = watch.json_until(lambda row: "error" in row)
        after = watch.next_json()  # a later round, still watching
        status, _, stderr = watch.interrupt()
    finally:
        watch.kill()
    assert after["sample"] == down["sample"] + 1 and "error" in after
    assert status == 1
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("rocketstore: error: ")
    assert png.read_bytes().startswith(PNG_SIGNATURE)  # the chart is drawn with the gap


def test_png_without_matplotlib_fails_at_once_naming_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "no-matplotlib"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text("raise ImportError('matplotlib is not installed')\n")
    nowhere = f"127.0.0.1:{free_port()}"
    out = subprocess.run([sys.executable, "-m", "rocketstore.cli.main", "broker-admin", "watch", "-b", nowhere,
                          "-n", nowhere, "--count", "1", "--png", str(tmp_path / "x.png")],
                         capture_output=True, text=True, timeout=120, check=False,
                         env={**env(), "PYTHONPATH": f"{blocker}:{env()['PYTHONPATH']}"})
    assert out.returncode == 1, out
    assert out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "rocketstore: error: --png needs matplotlib: pip install 'rocketstore[plot]' (or matplotlib>=3.7)"]
    assert not (tmp_path / "x.png").exists()


def test_a_cluster_watch_takes_in_a_master_that_registers_later(cluster: LocalCluster, tmp_path: Path) -> None:
    watch = Watch("-c", "DefaultCluster", "-n", cluster.namesrv_addr, "--interval", "0.1", "--json")
    broker_b: Broker | None = None
    try:
        watch.json_until(lambda row: row["sample"] >= 2)

        async def start_b() -> Broker:
            config = BrokerConfig(broker_name="broker-late", namesrv_addr=cluster.namesrv_addr, listen_port=0,
                                  listen_host="127.0.0.1", broker_ip1="127.0.0.1")
            broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "store-late"),
                                                mapped_file_size_commit_log=4 << 20, max_hash_slot_num=1000,
                                                max_index_num=4000, preallocate_commit_log=False))
            await broker.start()
            return broker

        broker_b = cluster.run(start_b())
        late = broker_b.address
        seen: set[str] = set()
        for _ in range(300):  # 30 s of samples at most
            row = watch.next_json()
            seen.add(row["broker"])
            if row["broker"] == late:
                break
        else:
            raise AssertionError(f"the watch never sampled the broker that joined ({late}); it sampled {seen}")
        assert "error" not in row and cluster.broker_addr in seen
        status, _, stderr = watch.interrupt()
        assert status == 0, stderr
    finally:
        watch.kill()
        if broker_b is not None:
            cluster.run(broker_b.close())
