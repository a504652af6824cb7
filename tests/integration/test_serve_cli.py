"""The serve / namesrv / broker commands as a user runs them: a subprocess, one line saying where it listens,
SIGTERM to stop, and a cleanly closed store afterwards."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.fastjson import loads
from rocketstore.remoting.transport import run

SRC = Path(__file__).resolve().parents[2] / "src"
ADDR = re.compile(r"listening on (127\.0\.0\.1:\d+)")


def start(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.Popen([sys.executable, "-m", "rocketstore.cli.serve_cmds", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the command prints its line once it serves; bounded by the test's kill
    if not line:
        raise AssertionError(f"no output; stderr: {proc.stderr.read() if proc.stderr else ''}")
    return line


def stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


async def round_trip(namesrv: str) -> None:
    async with Producer(namesrv, "cli-producer") as producer:
        sent = await producer.send("CliTopic", b"via the cli", tags="T")
    async with PullConsumer(namesrv, "cli-group") as consumer:
        for _ in range(250):  # the auto-created topic reaches the name server a moment after the send
            try:
                await consumer.queues("CliTopic")
                break
            except NoRouteError:
                await asyncio.sleep(0.02)
        result = await consumer.pull(sent.message_queue, 0, suspend_ms=5000)
        assert [m.body for m in result.messages] == [b"via the cli"]
        await consumer.commit_offset(sent.message_queue, result.next_begin_offset)


def test_serve_runs_name_server_and_broker_and_closes_the_store_on_sigterm(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = start("serve", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0")
    try:
        line = first_line(proc)
        namesrv, broker = ADDR.findall(line)
        assert namesrv != broker and str(store) in line
        assert (store / "abort").exists(), "a running store marks itself open"
        run(round_trip(namesrv))
    finally:
        code = stop(proc)
    assert code == 0
    assert not (store / "abort").exists(), "a clean shutdown removes the abort marker"
    offsets = loads((store / "config" / "consumerOffset.json").read_bytes())
    assert sum(offsets["offsetTable"]["CliTopic@cli-group"].values()) == 1
    assert "CliTopic" in loads((store / "config" / "topics.json").read_bytes())["topicConfigTable"]


def test_separate_namesrv_and_broker_commands_with_a_broker_conf(tmp_path: Path) -> None:
    namesrv = start("namesrv", "--port", "0")
    broker = None
    try:
        namesrv_addr = ADDR.findall(first_line(namesrv))[0]
        conf = tmp_path / "broker.conf"
        conf.write_text(f"""# a broker.conf as RocketMQ users write it
brokerClusterName = TestCluster
brokerName = broker-x
brokerId = 0
namesrvAddr = {namesrv_addr}
listenPort = 0
brokerIP1 = 127.0.0.1
storePathRootDir = {tmp_path / "bstore"}
flushDiskType = SYNC_FLUSH
autoCreateTopicEnable = true
mappedFileSizeCommitLog = 1048576
""", encoding="utf-8")
        broker = start("broker", "-c", str(conf))
        line = first_line(broker)
        assert "broker-x" in line and namesrv_addr in line
        run(round_trip(namesrv_addr))
    finally:
        if broker is not None:
            assert stop(broker) == 0
        assert stop(namesrv) == 0
    assert not (tmp_path / "bstore" / "abort").exists()
    assert (tmp_path / "bstore" / "commitlog" / "00000000000000000000").stat().st_size == 1048576
