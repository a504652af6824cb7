"""The two servers of the broker bench, each in its own process: ``rocketstore serve`` (:class:`BrokerProcess`,
on a private store with a bench broker.conf) and a private redis-server on a TCP loopback port
(:class:`TcpRedis`, with its RESP connection :class:`TcpResp` and its XADD/XREAD loops), plus the helpers they
share (the serve process's environment, a process's CPU seconds from /proc, a free port).
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import stop_process
from bench.peers import RedisServer, RespConnection, encode_command, pipelined_rate

__all__ = ["PULL_BATCH", "PULL_BROKER_PROPS", "XREAD_COUNT", "BrokerProcess", "TcpRedis", "TcpResp"]

SRC = Path(__file__).resolve().parents[1] / "src"
ADDR = re.compile(r"listening on (\d+\.\d+\.\d+\.\d+:\d+)")
PULL_BATCH = 1000
XREAD_COUNT = 1000
#: broker.conf settings that let one pull carry PULL_BATCH messages (RocketMQ's defaults: 32 and 256 KiB)
PULL_BROKER_PROPS: dict[str, object] = {"maxTransferCountOnMessageInMemory": PULL_BATCH,
                                        "maxTransferBytesOnMessageInMemory": 4 << 20}


def _env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process *pid* (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class BrokerProcess:
    """``python -m rocketstore.cli.main serve`` on a private store, ports picked by the OS, *flush_type*
    (broker.conf's flushDiskType: ASYNC_FLUSH or SYNC_FLUSH)."""

    def __init__(self, directory: str, *, small: bool, flush_type: str = "ASYNC_FLUSH",
                 busy_poll_us: int = 0) -> None:
        self.directory = directory
        self.small = small
        self.flush_type = flush_type
        self.busy_poll_us = busy_poll_us
        self.proc: subprocess.Popen[str] | None = None
        self.namesrv_addr = ""
        self.broker_addr = ""
        self._lines: queue.Queue[str | None] = queue.Queue()

    def start(self, timeout_s: float = 60.0) -> None:
        os.makedirs(self.directory, exist_ok=True)
        props: dict[str, object] = {"flushDiskType": self.flush_type, "mappedFileSizeCommitLog": 256 << 20,
                                    "busyPollMicros": self.busy_poll_us, **PULL_BROKER_PROPS}
        if self.small:
            props.update(mappedFileSizeCommitLog=8 << 20, mappedFileSizeConsumeQueue=20_000 * 20,
                         maxHashSlotNum=2000, maxIndexNum=8000, preallocateCommitLog="false")
        conf = os.path.join(self.directory, "broker.conf")
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in props.items()))
        args = [sys.executable, "-m", "rocketstore.cli.main", "serve", "--store",
                os.path.join(self.directory, "store"), "--namesrv-port", "0", "--broker-port", "0", "-c", conf]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(self.directory, "serve.err"), "w"),  # noqa: SIM115
                                     text=True, env=_env())
        threading.Thread(target=self._read, args=(self.proc,), daemon=True, name="bench-serve-out").start()
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            line = None
        found = ADDR.findall(line or "")
        if len(found) != 2:
            self.stop()
            raise RuntimeError(f"rocketstore serve did not say where it listens: {line!r}; "
                               f"see {os.path.join(self.directory, 'serve.err')}")
        self.namesrv_addr, self.broker_addr = found

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.pid)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, 30.0)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TcpResp(RespConnection):
    """A RESP connection over TCP loopback (TCP_NODELAY), which also reads array replies (XREAD)."""

    def __init__(self, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""
        self._pos = 0

    def read_any(self) -> Any:
        while True:
            nl = self._buf.find(b"\r\n", self._pos)
            if nl >= 0:
                break
            self._more()
        if self._buf[self._pos] == 0x2A:  # * array
            n = int(self._buf[self._pos + 1 : nl])
            self._pos = nl + 2
            return None if n < 0 else [self.read_any() for _ in range(n)]
        return self.read_reply()


class TcpRedis(RedisServer):
    """A private redis-server on a TCP loopback port (and no unix socket), AOF on, RDB off."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.port = 0
        self.proc = None
        self.version = ""
        self._sock_dir = ""

    def _listen_args(self) -> list[str]:
        self.port = _free_port()
        return ["--port", str(self.port), "--bind", "127.0.0.1"]

    def _connect(self, timeout_s: float) -> RespConnection:
        return TcpResp(self.port, timeout_s=timeout_s)

    def start(self, appendfsync: str = "everysec", timeout_s: float = 15.0) -> None:
        super().start(appendfsync, timeout_s)

    def stop(self) -> None:
        proc = self.proc
        self.proc = None
        stop_process(proc)

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.proc.pid) if self.proc is not None else float("nan")

    def connect(self) -> TcpResp:
        return TcpResp(self.port)

    def xadd_tcp_rate(self, stream: bytes, body: bytes, n: int, depth: int = 1) -> float:
        conn = self.connect()
        try:
            return pipelined_rate(conn, encode_command(b"XADD", stream, b"*", b"d", body), n, depth)
        finally:
            conn.close()

    def fill(self, stream: bytes, body: bytes, n: int) -> None:
        conn = self.connect()
        try:
            conn.call(b"DEL", stream)
            block = encode_command(b"XADD", stream, b"*", b"d", body) * 64
            for _ in range(n // 64):
                conn.send(block)
                for _ in range(64):
                    conn.read_reply()
        finally:
            conn.close()

    def xread_rate(self, stream: bytes, n: int, count: int = XREAD_COUNT) -> float:
        """Entries per second read from the start of *stream* (n entries), *count* per XREAD."""
        conn = self.connect()
        try:
            last = b"0-0"
            got = 0
            c = b"%d" % count
            t0 = time.perf_counter()
            while got < n:
                conn.send(encode_command(b"XREAD", b"COUNT", c, b"STREAMS", stream, last))
                reply = conn.read_any()
                entries = reply[0][1]
                got += len(entries)
                last = entries[-1][0]
            return got / (time.perf_counter() - t0)
        finally:
            conn.close()

