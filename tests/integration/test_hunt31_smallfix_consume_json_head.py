"""``rocketstore consume --json ... | head`` lost the messages it had consumed.

--json prints one document once the run ends, but the pulls committed each batch as it came: when the
document then met a closed pipe (``| head``) or never got out, the group's offsets were already past
messages no reader got, and the next run skipped them.  Now --json commits the offsets of its messages only
once the document is written (and flushed), as the table commits a message only once its line is printed
(at-least-once: never a message not printed); a document cut short commits none of them.  The document here
is larger than a pipe buffer (64 KiB), so the write error comes whatever the timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient, NoConsumeProgressError

_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
TOPIC, GROUP, COUNT = "Hunt31SmallfixJsonHead", "hunt31-smallfix-json-head", 60


def _consume(cluster: LocalCluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", "consume", TOPIC, "-g", GROUP,
                             "-n", cluster.namesrv_addr, "--json", "--full-body", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_ENV)


def _committed(cluster: LocalCluster) -> int:
    async def go() -> int:
        async with AdminClient(cluster.namesrv_addr) as admin:
            try:
                progress = await admin.consume_progress(GROUP, None)
            except NoConsumeProgressError:
                return 0
        return sum(q.consumer_offset for q in progress.queues if q.topic == TOPIC)

    return cluster.run(go())


@pytest.fixture()
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "hunt31-smallfix-json-head-producer") as producer:
                for i in range(COUNT):
                    await producer.send(TOPIC, f"{i}-{'x' * 3000}".encode())  # ~190 KB of JSON in all

        cluster.run(send())
        yield cluster


def test_consume_json_into_a_closed_pipe_commits_nothing(cluster: LocalCluster) -> None:
    proc = _consume(cluster, "--max", str(COUNT), "--timeout", "60")
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "{\n"  # what ``| head -1`` reads; then the pipe closes
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err  # the end of the output, as for the table
    assert err == ""
    assert _committed(cluster) == 0  # was COUNT: every message committed, none of them read

    # the next run gets every one of them, and commits them once its document is out
    out, err = _consume(cluster, "--max", str(COUNT), "--timeout", "60").communicate(timeout=120)
    assert err == ""
    document = json.loads(out)
    assert [m["queueOffset"] for m in document["messages"]] == list(range(COUNT))
    assert [c["offset"] for c in document["committed"]] == [COUNT]
    assert _committed(cluster) == COUNT
