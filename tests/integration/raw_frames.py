"""A blocking socket that speaks remoting frames to a running server, for tests that craft requests our
clients would never send (bad headers, bad bodies, frames by hand).  Every read has a deadline.
:func:`request_frame` and :func:`poll` serve the asyncio tests that play such a peer on a bare socket."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import Callable

from rocketstore.remoting import FrameDecoder, RemotingCommand
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import SerializeType

DEADLINE_S = 20.0


class RawConnection:
    def __init__(self, addr: str, deadline_s: float = DEADLINE_S) -> None:
        host, port = addr.rsplit(":", 1)
        self.deadline_s = deadline_s
        self.sock = socket.create_connection((host, int(port)), timeout=deadline_s)
        self.decoder = FrameDecoder()
        self.opaque = 1000

    def close(self) -> None:
        self.sock.close()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, code: int, ext: dict[str, str], body: bytes, serialize_type: SerializeType) -> int:
        """Send a request; its opaque."""
        self.opaque += 1
        command = RemotingCommand.request(code, ext, body, opaque=self.opaque, serialize_type=serialize_type)
        self.send_bytes(encode_command(command))
        return self.opaque

    def answer(self, opaque: int, wait_s: float | None = None) -> RemotingCommand | None:
        """The response numbered *opaque*; None if nothing came within *wait_s* (default: the deadline);
        AssertionError when the server closes the connection instead."""
        deadline = time.monotonic() + (self.deadline_s if wait_s is None else wait_s)
        while True:
            got = self.decoder.next_command()
            if got is not None:
                if got.is_response and got.opaque == opaque:
                    return got
                continue  # the server's own requests (NOTIFY_CONSUMER_IDS_CHANGED), earlier unanswered opaques
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return None
            if not data:
                raise AssertionError("the server closed the connection instead of answering")
            self.decoder.feed(data)

    def request(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"",
                serialize_type: SerializeType = SerializeType.JSON) -> RemotingCommand:
        """Send a request and wait for its answer (AssertionError if none comes)."""
        answer = self.answer(self.send(code, ext or {}, body, serialize_type))
        assert answer is not None, f"no answer to code {code}"
        return answer

    def closed_by_peer(self) -> bool:
        """True once the peer closes (EOF or reset) within the deadline; fails if it answers instead."""
        self.sock.settimeout(self.deadline_s)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        assert data == b"", f"expected the connection to be closed, got {data[:80]!r}"
        return True


def request_frame(code: int, opaque: int) -> bytes:
    """A request frame of *code* with a JSON header and no body, as a 4.9.3 Java client lays it out (for a peer
    on a bare asyncio socket, one that sends requests and reads none of the answers, say)."""
    header = json.dumps({"code": code, "flag": 0, "language": "JAVA", "opaque": opaque, "version": 395}).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header


async def poll(condition: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    """Return once *condition()* holds; AssertionError naming *what* after *timeout_s*."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
