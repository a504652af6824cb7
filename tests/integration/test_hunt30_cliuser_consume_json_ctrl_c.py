"""``rocketstore consume --json`` ended by Ctrl-C printed nothing, while the messages it had pulled were
committed: a script's ``consume ... --json > out.json`` lost them (the next run starts after them).  The
table prints each message as it comes; --json now prints its document of the messages consumed so far (and
the offsets committed) before "rocketstore: interrupted" and exit status 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_cluster import LocalCluster, eventually

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient, NoConsumeProgressError


def test_ctrl_c_during_consume_json_prints_what_was_consumed(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "json-interrupt-producer") as producer:
                for i in range(3):
                    await producer.send("JsonInterrupted", f"body-{i}".encode())

        cluster.run(send())
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketstore.cli.main", "consume", "JsonInterrupted", "-g", "json-interrupt",
             "-n", cluster.namesrv_addr, "--timeout", "600", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            async def three_committed() -> bool:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    try:
                        progress = await admin.consume_progress("json-interrupt", None)
                    except NoConsumeProgressError:
                        return False
                return sum(q.consumer_offset for q in progress.queues if q.topic == "JsonInterrupted") == 3

            # the run has pulled and committed them, and waits for more (--timeout 600) until the signal
            cluster.run(eventually(three_committed, 60, "the three messages committed"))
            assert proc.poll() is None
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, err
        assert err == "rocketstore: interrupted\n"
        document = json.loads(out)
        assert sorted(m["body"] for m in document["messages"]) == ["body-0", "body-1", "body-2"]
        assert sum(c["offset"] for c in document["committed"]) == 3

