"""The CLI takes a closed stdout (``rocketstore send ... | head -1``) as the end of its output.

``send --count N | head -1`` sent every message, then its table met the closed pipe and the command exited 1.
``consume ... | head -3`` exited 1 too.  Now a reader gone from stdout ends the command quietly with exit
status 0 (as mqadmin, whose PrintStream drops the write error, and so that ``set -o pipefail`` does not fail a
pipeline whose work was done); ``consume`` keeps the batches it wrote out whole committed, not the one cut
short (lines in the pipe may go unread: at-least-once), and the next run starts where the commits stopped.  Each pipe here holds more than a pipe buffer (64 KiB), so the write error
comes whatever the timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_cluster import LocalCluster

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient

_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_ENV)


def _read_lines_then_close(proc: subprocess.Popen[str], lines: int) -> tuple[list[str], str]:
    """What ``| head -<lines>`` does: read that many lines, close the pipe; then the command's stderr."""
    try:
        assert proc.stdout is not None and proc.stderr is not None
        got = [proc.stdout.readline() for _ in range(lines)]
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return got, err


def _offsets(cluster: LocalCluster, group: str, topic: str) -> tuple[int, int]:
    """(the queue's end, the group's committed offset) of *topic*'s one queue."""
    async def go() -> tuple[int, int]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            progress = await admin.consume_progress(group, topic)
        (queue,) = [q for q in progress.queues if q.topic == topic]
        return queue.broker_offset, queue.consumer_offset

    return cluster.run(go())


def test_send_piped_into_head_sends_everything_and_exits_0(tmp_path: Path) -> None:
    topic, count = "Hunt31SmallfixSendHead", 1000  # a table of ~110 KB
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        proc = _cli("send", topic, "m{i}", "--count", str(count), "-n", cluster.namesrv_addr)
        (header,), err = _read_lines_then_close(proc, 1)
        assert proc.returncode == 0, err
        assert err == ""  # no traceback, no "Exception ignored" from the flush at exit
        assert header.split()[:2] == ["#", "STATUS"]

        async def stored() -> int:
            async with PullConsumer(cluster.namesrv_addr, "hunt31-smallfix-probe") as consumer:
                (mq,) = await consumer.queues(topic)
                return await consumer.max_offset(mq)

        assert cluster.run(stored()) == count


def test_consume_piped_into_head_commits_whole_batches_only(tmp_path: Path) -> None:
    topic, group, count = "Hunt31SmallfixConsumeHead", "hunt31-smallfix-head", 120
    body = "x" * 1500  # ~1.6 KB a line printed with --full-body: ~190 KB in all
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "hunt31-smallfix-head-producer") as producer:
                for i in range(count):
                    await producer.send(topic, f"{i}-{body}".encode())

        cluster.run(send())
        proc = _cli("consume", topic, "-g", group, "-n", cluster.namesrv_addr, "--full-body",
                    "--timeout", "60")
        lines, err = _read_lines_then_close(proc, 3)
        assert proc.returncode == 0, err
        assert err == ""
        assert [line.split()[0] for line in lines] == ["q0@0", "q0@1", "q0@2"]
        end, committed = _offsets(cluster, group, topic)
        assert end == count
        # whole batches written into the pipe are committed, the one cut short is not (at-least-once); the pipe
        # could not take all of them
        assert 0 <= committed < count

        # the next run starts right after the last message the first one committed: none skipped
        proc = _cli("consume", topic, "-g", group, "-n", cluster.namesrv_addr, "--max", str(count - committed),
                    "--timeout", "60")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        printed = [line.split()[0] for line in out.splitlines() if line.startswith("q0@")]
        assert printed == [f"q0@{i}" for i in range(committed, count)]
