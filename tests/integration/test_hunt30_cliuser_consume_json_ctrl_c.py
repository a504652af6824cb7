"""``rocketstore consume --json`` ended by Ctrl-C printed nothing, while the messages it had pulled were
committed: a script's ``consume ... --json > out.json`` lost them (the next run starts after them).  The
table prints each message as it comes; --json now prints its document of the messages consumed so far (and
the offsets committed) before "rocketstore: interrupted" and exit status 130.  (Since session 31 --json
commits those offsets once the document is out, not as it pulls.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_cluster import LocalCluster

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

            def pulled_past_the_three() -> bool:
                # each queue's next pull parked at its end: the run has the three messages and waits for
                # more (--timeout 600) until the signal; --json commits them only once its document is out
                waiting = cluster.broker.pull_hold.waiting("JsonInterrupted")
                return sum(o for offsets in waiting.values() for o in offsets) == 3

            cluster.wait_until(pulled_past_the_three, 60, "the three messages pulled")
            assert proc.poll() is None
            assert not cluster.run(three_committed())
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
        assert cluster.run(three_committed())  # committed after the document was printed

