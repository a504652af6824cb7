"""Peers a user might pick instead, started by the bench itself; each is skipped with a note when missing.

* persist-queue (``persistqueue.SQLiteQueue``, auto-commit: each put is a SQLite transaction) and
  litequeue (``LiteQueue``: SQLite in WAL mode, synchronous=NORMAL), both from PyPI, in this process.
* Redis (the Debian ``redis-server``), started here on a unix socket in the work directory with an
  append-only file, ``appendfsync always`` (the sync-flush peer: a reply only after the AOF is fsynced,
  replies of one event-loop pass sharing the fsync) or ``everysec``; RDB snapshots and AOF rewrites off.
  Spoken to with a small RESP client over raw sockets (no client library needed).  Each writer thread
  has its own connection with one command in flight, or a pipeline of a fixed depth.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any

from bench.common import stop_process

__all__ = [
    "LiteQueuePeer",
    "PersistQueuePeer",
    "RedisError",
    "RedisServer",
    "RespConnection",
    "litequeue_module",
    "persist_queue_module",
    "pipelined_rate",
]


def persist_queue_module():  # type: ignore[no-untyped-def]
    try:
        import persistqueue
    except ImportError:
        return None
    return persistqueue


def litequeue_module():  # type: ignore[no-untyped-def]
    try:
        import litequeue
    except ImportError:
        return None
    return litequeue


class PersistQueuePeer:
    """persist-queue's SQLiteQueue with its defaults (auto_commit=True, pickled items)."""

    name = "persist-queue (SQLite)"

    def __init__(self, directory: str) -> None:
        mod = persist_queue_module()
        if mod is None:
            raise ImportError("persist-queue is not installed")
        self.queue = mod.SQLiteQueue(directory, auto_commit=True)

    def put_rate(self, bodies: list[bytes], n: int) -> float:
        put = self.queue.put
        seq = (bodies * (n // len(bodies) + 1))[:n]
        t0 = time.perf_counter()
        for body in seq:
            put(body)
        return n / (time.perf_counter() - t0)

    def get_rate(self, bodies: list[bytes], n: int) -> float:
        """Gets per second of *n* gets; tops the queue up first (untimed) if it holds fewer items."""
        missing = n - self.queue.qsize()
        if missing > 0:
            for i in range(missing):
                self.queue.put(bodies[i % len(bodies)])
        get = self.queue.get
        t0 = time.perf_counter()
        for _ in range(n):
            get(block=False)
        return n / (time.perf_counter() - t0)


class LiteQueuePeer:
    """litequeue's LiteQueue (TEXT items: the body is passed as a latin-1 string of the same length)."""

    name = "litequeue (SQLite WAL)"

    def __init__(self, path: str) -> None:
        mod = litequeue_module()
        if mod is None:
            raise ImportError("litequeue is not installed")
        self.queue = mod.LiteQueue(path)

    def put_rate(self, bodies: list[bytes], n: int) -> float:
        put = self.queue.put
        texts = [b.decode("latin-1") for b in bodies]
        seq = (texts * (n // len(texts) + 1))[:n]
        t0 = time.perf_counter()
        for text in seq:
            put(text)
        return n / (time.perf_counter() - t0)

    def fill(self, bodies: list[bytes], n: int) -> list[str]:
        """Put *n* items in one transaction (set-up, untimed); returns their message ids."""
        put = self.queue.put
        texts = [b.decode("latin-1") for b in bodies]
        ids = []
        with self.queue.transaction():
            for i in range(n):
                ids.append(put(texts[i % len(texts)]).message_id)
        return ids

    def get_latencies(self, ids: list[str]) -> list[float]:
        """Seconds of each look-up by message id (an indexed column)."""
        get = self.queue.get
        clock = time.perf_counter
        out = []
        for message_id in ids:
            t0 = clock()
            found = get(message_id)
            out.append(clock() - t0)
            if found is None:
                raise RuntimeError(f"litequeue lost {message_id}")
        return out


# --- Redis ----------------------------------------------------------------------------------------------


class RedisError(Exception):
    pass


def encode_command(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


def pipelined_rate(conn: Any, command: bytes, n: int, depth: int) -> float:
    """Commands per second: *command* sent *depth* at a time on *conn* (a RespConnection or TcpResp), all
    *depth* replies read before the next round (1: wait for each reply); about *n* in all."""
    block = command * depth
    send, read = conn.send, conn.read_reply
    rounds = max(1, n // depth)
    t0 = time.perf_counter()
    for _ in range(rounds):
        send(block)
        for _ in range(depth):
            read()
    return rounds * depth / (time.perf_counter() - t0)


class RespConnection:
    """One RESP2 connection: send pre-encoded commands, read simple / error / integer / bulk replies."""

    def __init__(self, socket_path: str, timeout_s: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout_s)
        self.sock.connect(socket_path)
        self._buf = b""
        self._pos = 0

    def close(self) -> None:
        self.sock.close()

    def call(self, *args: bytes) -> bytes | int | None:
        self.sock.sendall(encode_command(*args))
        return self.read_reply()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _more(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("redis closed the connection")
        self._buf = self._buf[self._pos :] + data
        self._pos = 0

    def read_reply(self) -> bytes | int | None:
        while True:
            buf, pos = self._buf, self._pos
            nl = buf.find(b"\r\n", pos)
            if nl >= 0:
                kind = buf[pos]
                if kind == 0x24:  # $ bulk
                    n = int(buf[pos + 1 : nl])
                    if n < 0:
                        self._pos = nl + 2
                        return None
                    end = nl + 2 + n
                    if len(buf) >= end + 2:
                        self._pos = end + 2
                        return buf[nl + 2 : end]
                else:
                    self._pos = nl + 2
                    line = buf[pos + 1 : nl]
                    if kind == 0x2D:  # - error
                        raise RedisError(line.decode(errors="replace"))
                    if kind == 0x3A:  # : integer
                        return int(line)
                    if kind == 0x2B:  # + simple
                        return line
                    raise RedisError(f"unexpected reply type {chr(kind)!r}")
            self._more()


class RedisServer:
    """A private redis-server on a unix socket in *directory*; ``stop()`` ends exactly that process."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        # unix socket paths are limited to ~107 bytes: keep the socket in a short private directory
        self._sock_dir = tempfile.mkdtemp(prefix="rsb-")
        self.socket_path = os.path.join(self._sock_dir, "redis.sock")
        self.proc: subprocess.Popen[bytes] | None = None
        self.version = ""

    @staticmethod
    def executable() -> str | None:
        return shutil.which("redis-server")

    def _listen_args(self) -> list[str]:
        """Where the server listens (subclasses listen elsewhere)."""
        return ["--port", "0", "--unixsocket", self.socket_path, "--unixsocketperm", "700"]

    def _connect(self, timeout_s: float) -> RespConnection:
        return RespConnection(self.socket_path, timeout_s=timeout_s)

    def start(self, appendfsync: str = "always", timeout_s: float = 15.0) -> None:
        exe = self.executable()
        if exe is None:
            raise FileNotFoundError("redis-server is not on PATH")
        os.makedirs(self.directory, exist_ok=True)
        args = [exe, *self._listen_args(),
                "--dir", self.directory, "--appendonly", "yes", "--appendfsync", appendfsync, "--save", "",
                "--auto-aof-rewrite-percentage", "0", "--daemonize", "no", "--protected-mode", "no",
                "--logfile", os.path.join(self.directory, "redis.log")]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}; see "
                                   f"{os.path.join(self.directory, 'redis.log')}")
            try:
                conn = self._connect(timeout_s=5.0)
                try:
                    if conn.call(b"PING") == b"PONG":
                        info = conn.call(b"INFO", b"server")
                        if isinstance(info, bytes):
                            for line in info.decode(errors="replace").splitlines():
                                if line.startswith("redis_version:"):
                                    self.version = line.split(":", 1)[1].strip()
                        return
                finally:
                    conn.close()
            except (OSError, RedisError) as exc:
                last = exc
            threading.Event().wait(0.02)  # poll the socket until the server answers (deadline above)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {timeout_s} s: {last}")

    def set_appendfsync(self, mode: str) -> None:
        conn = RespConnection(self.socket_path)
        try:
            conn.call(b"CONFIG", b"SET", b"appendfsync", mode.encode())
        finally:
            conn.close()

    def stop(self) -> None:
        proc = self.proc
        self.proc = None
        stop_process(proc)
        shutil.rmtree(self._sock_dir, ignore_errors=True)

    # --- workloads -------------------------------------------------------------------------------------

    def xadd_command(self, stream: bytes, body: bytes) -> bytes:
        return encode_command(b"XADD", stream, b"*", b"d", body)

    def xadd_rate(self, body: bytes, n: int, depth: int = 1) -> float:
        """XADDs per second from one connection, *depth* commands in flight (1: wait for each reply)."""
        conn = RespConnection(self.socket_path)
        try:
            return pipelined_rate(conn, self.xadd_command(b"bench-rate", body), n, depth)
        finally:
            conn.close()
