"""NATS JetStream as an async-flush peer: a private ``nats-server -js`` on a TCP loopback port.

Debian's ``nats-server`` (``apt-get install -y nats-server``), started by the bench with JetStream on and its
store in the work directory; skipped with a note when it is not on PATH.  JetStream's file store writes
each message to the OS as it arrives and syncs on a timer (minutes, not per message), so it is an
async-flush peer, like Redis with ``appendfsync everysec``.

Spoken to with a small client over a raw socket (no client library), as the Redis peer is, so the peer's
side pays the least Python a client could: pre-encoded ``PUB`` frames, and replies parsed only as far as
needed (a publish is acknowledged by a JSON ``{"stream":..,"seq":..}`` message on the reply subject; a
fetched message's payload is sliced out of the buffer).

* publish: ``PUB <subject> <reply> <n>`` with JetStream's acknowledgement awaited, one in flight or a
  fixed depth of them (the acks of one block read back before the next block is sent);
* fetch: a durable pull consumer (``ack_policy: none``, so no acks cost either side) asked for a batch at a
  time through ``$JS.API.CONSUMER.MSG.NEXT``, the delivered payloads collected into a list.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from typing import Any

from bench.common import stop_process

__all__ = ["NatsConnection", "NatsError", "NatsJetStream"]

STREAM = "BENCH"


class NatsError(Exception):
    pass


class NatsConnection:
    """One client connection: pre-encoded frames out; MSG frames in (PING answered, +OK ignored)."""

    def __init__(self, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""
        self._pos = 0
        self.info: dict[str, Any] = json.loads(self._line().split(b" ", 1)[1])
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":false,'
                          b'"no_responders":false,"lang":"python-bench","version":"0"}\r\nPING\r\n')
        line = self._line()
        if line != b"PONG":
            raise NatsError(f"nats-server answered CONNECT with {line!r}")
        self._sid = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def subscribe(self, subject: bytes) -> int:
        self._sid += 1
        self.sock.sendall(b"SUB %s %d\r\n" % (subject, self._sid))
        return self._sid

    def _more(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("nats-server closed the connection")
        self._buf = self._buf[self._pos :] + data
        self._pos = 0

    def _line(self) -> bytes:
        while True:
            nl = self._buf.find(b"\r\n", self._pos)
            if nl >= 0:
                line = self._buf[self._pos : nl]
                self._pos = nl + 2
                return line
            self._more()

    def read_msg(self) -> bytes:
        """The payload of the next MSG frame (control lines in between are handled)."""
        while True:
            line = self._line()
            if line.startswith(b"MSG "):
                size = int(line.rsplit(b" ", 1)[1])
                end = self._pos + size
                while len(self._buf) < end + 2:
                    self._more()
                    end = self._pos + size
                payload = self._buf[self._pos : end]
                self._pos = end + 2
                return payload
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise NatsError(line.decode(errors="replace"))
            # +OK, PONG, INFO updates: nothing to do

    def request(self, subject: str, payload: dict[str, Any] | None, inbox: bytes) -> dict[str, Any]:
        """A JetStream API call: publish with *inbox* as the reply subject, return the decoded answer."""
        body = b"" if payload is None else json.dumps(payload).encode()
        self.sock.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), inbox, len(body), body))
        answer: dict[str, Any] = json.loads(self.read_msg())
        if "error" in answer:
            raise NatsError(f"{subject}: {answer['error']}")
        return answer


class NatsJetStream:
    """A private ``nats-server -js`` on 127.0.0.1 with its store under *directory*; one file-storage stream."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.version = ""
        self._admin: NatsConnection | None = None

    @staticmethod
    def executable() -> str | None:
        return shutil.which("nats-server") or next(
            (p for p in ("/usr/sbin/nats-server", "/usr/bin/nats-server") if os.access(p, os.X_OK)), None)

    def start(self, timeout_s: float = 15.0) -> None:
        exe = self.executable()
        if exe is None:
            raise FileNotFoundError("nats-server is not on PATH")
        os.makedirs(self.directory, exist_ok=True)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        log = open(os.path.join(self.directory, "nats.log"), "wb")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([exe, "-js", "-sd", os.path.join(self.directory, "js"), "-a", "127.0.0.1",
                                      "-p", str(self.port)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.proc.returncode}; see "
                                   f"{os.path.join(self.directory, 'nats.log')}")
            try:
                conn = NatsConnection(self.port, timeout_s=5.0)
            except (OSError, NatsError, ValueError) as exc:
                last = exc
                time.sleep(0.02)
                continue
            self.version = str(conn.info.get("version", ""))
            conn.subscribe(b"_INBOX.admin.*")
            self._admin = conn
            conn.request(f"$JS.API.STREAM.CREATE.{STREAM}", {
                "name": STREAM, "subjects": ["bench.>"], "storage": "file", "retention": "limits",
                "discard": "old", "num_replicas": 1}, b"_INBOX.admin.stream")
            return
        self.stop()
        raise RuntimeError(f"nats-server did not answer within {timeout_s} s: {last}")

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        proc = self.proc
        self.proc = None
        stop_process(proc)

    def cpu_seconds(self) -> float:
        if self.proc is None:
            return float("nan")
        with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def connect(self) -> NatsConnection:
        return NatsConnection(self.port)

    # --- workloads -------------------------------------------------------------------------------------

    def publish_rate(self, subject: str, body: bytes, n: int, depth: int = 1) -> float:
        """Acknowledged JetStream publishes per second from one connection, *depth* in flight."""
        conn = self.connect()
        try:
            conn.subscribe(b"_INBOX.pub.*")
            frame = b"PUB %s _INBOX.pub.a %d\r\n%s\r\n" % (subject.encode(), len(body), body)
            block = frame * depth
            send, read = conn.send, conn.read_msg
            rounds = max(1, n // depth)
            t0 = time.perf_counter()
            for _ in range(rounds):
                send(block)
                for _ in range(depth):
                    ack = read()
                    if not ack.startswith(b'{"stream"'):
                        raise NatsError(f"publish to {subject}: {ack[:200]!r}")
            return rounds * depth / (time.perf_counter() - t0)
        finally:
            conn.close()

    def fill(self, subject: str, body: bytes, n: int) -> None:
        """Publish exactly *n* messages to *subject* (64 acknowledgements in flight), untimed."""
        if n >= 64:
            self.publish_rate(subject, body, n - n % 64, depth=64)
        if n % 64:
            self.publish_rate(subject, body, n % 64, depth=n % 64)

    def fetch_rate(self, subject: str, n: int, batch: int) -> float:
        """Messages per second fetched from the start of *subject* by a new durable pull consumer, *batch*
        per request, payloads collected; *n* must be a multiple of *batch* and at most what *subject*
        holds (each request is then answered in full, with no status message)."""
        got, seconds = self.fetch(subject, n, batch)
        return len(got) / seconds

    def fetch(self, subject: str, n: int, batch: int) -> tuple[list[bytes], float]:
        """The first *n* payloads of *subject* (see :meth:`fetch_rate`) and the seconds the fetching took."""
        if n % batch:
            raise ValueError(f"n ({n}) must be a multiple of batch ({batch})")
        assert self._admin is not None
        name = f"bench{time.monotonic_ns()}"
        self._admin.request(f"$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.{name}", {
            "stream_name": STREAM, "config": {"durable_name": name, "ack_policy": "none",
                                               "deliver_policy": "all", "filter_subject": subject}},
            b"_INBOX.admin.consumer")
        conn = self.connect()
        try:
            conn.subscribe(b"_INBOX.fetch.*")
            want = json.dumps({"batch": batch}).encode()
            next_frame = b"PUB $JS.API.CONSUMER.MSG.NEXT.%s.%s _INBOX.fetch.a %d\r\n%s\r\n" % (
                STREAM.encode(), name.encode(), len(want), want)
            read = conn.read_msg
            got: list[bytes] = []
            t0 = time.perf_counter()
            while len(got) < n:
                conn.send(next_frame)
                for _ in range(batch):
                    got.append(read())
            return got, time.perf_counter() - t0
        finally:
            conn.close()
            self._admin.request(f"$JS.API.CONSUMER.DELETE.{STREAM}.{name}", None, b"_INBOX.admin.delete")
