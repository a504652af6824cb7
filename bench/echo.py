"""The loopback round-trip ceiling: an echo server and client that do nothing but move the bytes.

A send that waits for its answer is one request/response round trip between two Python processes over
TCP loopback; the least any Python broker and client can spend on it is what an echo costs: the server
(its own process, as the broker is) writes back every byte it reads, the client (in the bench process,
as our client is) writes a frame the size of a send request and waits until the same number of bytes has
come back, one in flight.  Both sides use ``asyncio.Protocol`` with a Future per round trip, on the
standard loop or on uvloop (both sides alike), which is how the broker and client are built.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

from bench.common import stop_process

__all__ = ["EchoServer", "echo_rate", "uvloop_available"]

_SERVER = r"""
import asyncio, sys
kind = sys.argv[1]
if kind == "uvloop":
    import uvloop
    loop = uvloop.new_event_loop()
else:
    loop = asyncio.new_event_loop()

class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
    def data_received(self, data):
        self.transport.write(data)

server = loop.run_until_complete(loop.create_server(Echo, "127.0.0.1", 0))
print(server.sockets[0].getsockname()[1], flush=True)
loop.run_forever()
"""


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def _new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class EchoServer:
    """``python -c <echo server>`` on 127.0.0.1, port picked by the OS, with the *kind* of loop given."""

    def __init__(self, kind: str) -> None:
        if kind not in ("asyncio", "uvloop"):
            raise ValueError(f"loop kind {kind!r}: asyncio or uvloop")
        self.kind = kind
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, self.kind], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"echo server ({self.kind}) did not start: {line!r}")
        self.port = int(line)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        proc = self.proc
        self.proc = None
        stop_process(proc)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()


class _Client(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.want = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.want -= len(data)
        if self.want <= 0 and self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionError("echo server closed the connection"))


def echo_rate(server: EchoServer, frame_bytes: int, n: int) -> float:
    """Round trips per second of a *frame_bytes* frame, one in flight, on a loop of the server's kind."""
    loop = _new_loop(server.kind)
    frame = os.urandom(frame_bytes)

    async def go() -> float:
        transport, proto = await loop.create_connection(_Client, "127.0.0.1", server.port)
        try:
            sock: Any = transport.get_extra_info("socket")
            if sock is not None:
                import socket

                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            async def once() -> None:
                proto.want = frame_bytes
                proto.waiter = loop.create_future()
                transport.write(frame)
                await proto.waiter

            for _ in range(min(50, n)):  # warm up
                await once()
            t0 = time.perf_counter()
            for _ in range(n):
                await once()
            return n / (time.perf_counter() - t0)
        finally:
            transport.close()

    try:
        return loop.run_until_complete(go())
    finally:
        loop.close()
