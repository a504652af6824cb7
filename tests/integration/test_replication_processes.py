"""Replication as a user runs it: ``rocketstore serve`` as the master and ``rocketstore broker -c slave.conf``
(brokerId 1, brokerRole SLAVE, same brokerName) as the slave, each its own process and store; the slave
killed with SIGKILL while the master takes sends, restarted, caught up; both stopped and their commitlogs
compared byte for byte, the slave's store verified by ``rocketstore store verify``.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

from serve_process import ADDR, ServeProcess, cli, env, free_port, wait_for, write_broker_conf

from rocketstore.client import Producer
from rocketstore.remoting import RemotingCommand, RequestCode
from rocketstore.remoting.transport import connect, run

BROKER = "ha-pair"
TOPIC = "HaTopic"
QUEUES = 8
SEGMENT = 4 << 20  # serve_process.SMALL_STORE_CONF's commitlog segment


class SlaveProcess:
    """``rocketstore broker -c slave.conf``: its one "listening on" line gives its address."""

    def __init__(self, store: Path, conf: Path, namesrv: str) -> None:
        self.args = [sys.executable, "-m", "rocketstore.cli.main", "broker", "-c", str(conf), "--store", str(store),
                     "-p", "0", "-n", namesrv, "--host", "127.0.0.1"]
        self.proc: subprocess.Popen[str] | None = None
        self.addr = ""

    def start(self) -> SlaveProcess:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            line = ""
        found = ADDR.findall(line)
        assert len(found) == 1, f"the slave did not say where it listens: {line!r}"
        self.addr = found[0]
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            finally:
                self.kill()


def queued_messages(addr: str) -> int:
    """Messages in the topic's consume queues on the broker at *addr* (GET_MAX_OFFSET per queue)."""
    async def ask() -> int:
        conn = await connect(addr)
        try:
            total = 0
            for q in range(QUEUES):
                answer = await conn.request(RemotingCommand.request(
                    RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": str(q)}), 5)
                total += int(answer.ext_fields.get("offset", "0")) if answer.code == 0 else 0
            return total
        finally:
            conn.close()

    return run(ask())


def send(namesrv: str, first: int, count: int) -> None:
    async def go() -> None:
        async with Producer(namesrv, "ha-process-producer") as producer:
            for i in range(first, first + count):
                result = await producer.send(TOPIC, f"message {i} ".encode() + b"p" * 200, keys=f"k{i}")
                assert result.status == "SEND_OK"

    run(go())


def commitlog(store: Path) -> dict[int, bytes]:
    return {int(f.name): f.read_bytes() for f in sorted((store / "commitlog").iterdir())}


def test_a_slave_killed_mid_stream_catches_up_byte_for_byte(tmp_path: Path) -> None:
    master_conf = write_broker_conf(tmp_path / "master.conf", brokerName=BROKER, haListenPort=free_port())
    slave_conf = write_broker_conf(tmp_path / "slave.conf", brokerName=BROKER, brokerId=1, brokerRole="SLAVE")
    master_store, slave_store = tmp_path / "master", tmp_path / "slave"
    with ServeProcess(master_store, master_conf) as master:
        slave = SlaveProcess(slave_store, slave_conf, master.namesrv_addr).start()
        try:
            send(master.namesrv_addr, 0, 300)
            wait_for(lambda: queued_messages(slave.addr) == 300, 60, "the slave to have the first 300")
            # kill -9 while sends go on: some in the slave's last chunk, some after it died
            sender = threading.Thread(target=send, args=(master.namesrv_addr, 300, 1500))
            sender.start()
            wait_for(lambda: queued_messages(slave.addr) >= 600, 60, "the slave to be mid-stream")
            slave.kill()
            sender.join(120)
            assert not sender.is_alive()
            wait_for(lambda: queued_messages(master.broker_addr) == 1800, 30, "the master to have all 1800")
            slave = SlaveProcess(slave_store, slave_conf, master.namesrv_addr).start()
            wait_for(lambda: queued_messages(slave.addr) == 1800, 90, "the restarted slave to catch up")
        finally:
            slave.terminate()
        master.terminate()
    mine, theirs = commitlog(master_store), commitlog(slave_store)
    assert sorted(theirs) == sorted(mine)
    for start, data in mine.items():
        written = len(data.rstrip(b"\0"))
        assert theirs[start][:written] == data[:written], f"segment {start} differs"
    verified = cli("store", "verify", str(slave_store), "-c", str(slave_conf))
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
