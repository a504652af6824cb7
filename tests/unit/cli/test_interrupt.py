"""Ctrl-C ends a long-running command (``consume`` waiting for messages) with one line and exit status 130,
not a KeyboardInterrupt traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration"))
from local_cluster import LocalCluster

from rocketstore.client import Producer


def test_ctrl_c_during_consume_is_one_line_and_status_130(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "interrupt-producer") as producer:
                await producer.send("Interrupted", b"only one")

        cluster.run(send())
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketstore.cli.main", "consume", "Interrupted", "-g", "interrupt-group",
             "-n", cluster.namesrv_addr, "--timeout", "600"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()  # the message: the command now waits for more
            assert "only one" in first
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, err
        assert err == "rocketstore: interrupted\n"
