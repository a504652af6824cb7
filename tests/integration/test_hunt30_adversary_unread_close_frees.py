"""A connection closed because its peer reads nothing is gone, socket and all, not left waiting to write.

A closed asyncio transport first writes what it still holds; toward a peer that reads nothing it waits
forever: the connection stayed in the server's set with its socket open and its unwritten answers in
memory after the idle check (``serverChannelMaxIdleTimeSeconds``) or the answer drain's time-out had
"closed" it (session 30 adversary: 20 such peers kept 20 sockets and ~3 MB each past both, until they
went themselves).  4.9.3's channel close drops what is unwritten and frees the socket at once (its broker's
file descriptors went back down at the 120 s idle close; ours stayed up).  Both closes now abort.
Waits on conditions only; never times anything.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from raw_frames import poll, request_frame

from rocketstore.remoting import RemotingCommand, ResponseCode, serving
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection

#: more than the socket buffers of both sides hold, so the transport keeps the rest (under the frame limit)
ANSWER = b"a" * (12 * 1024 * 1024)
BIG, SMALL = 9, 10


async def _big(conn: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=ANSWER)


async def _small(conn: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS)


async def _gone_after(server: RemotingServer, frames: bytes) -> None:
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # reads nothing, holds little
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", server.port))
        await loop.sock_sendall(sock, frames)
        await poll(lambda: len(server.connections) == 1, "the connection")
        (conn,) = server.connections
        await poll(lambda: conn._writing_paused, "the server to stop writing to a peer that reads nothing")
        # closed by the server, then gone from its set: its transport ended (connection_lost), socket closed
        await poll(lambda: conn._closed and not server.connections,
                    "the connection of a peer that reads nothing to end after the server closed it")
        assert conn._transport is not None and conn._transport.get_write_buffer_size() == 0
    finally:
        sock.close()


def test_an_idle_close_frees_a_peer_that_reads_nothing() -> None:
    async def main() -> None:
        server = RemotingServer(RequestRouter({BIG: _big}), idle_timeout_s=0.5)
        await server.start("127.0.0.1", 0)
        try:
            await _gone_after(server, request_frame(BIG, 1))  # one answer it never reads, then silence
        finally:
            await server.close()

    asyncio.run(main())


def test_a_drain_time_out_frees_a_peer_that_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "ANSWER_DRAIN_TIMEOUT_S", 0.5)

    async def main() -> None:
        server = RemotingServer(RequestRouter({BIG: _big, SMALL: _small}), idle_timeout_s=3600)
        await server.start("127.0.0.1", 0)
        try:
            # an answer it never reads; the next request waits for the drain, which times out
            await _gone_after(server, request_frame(BIG, 1) + b"".join(request_frame(SMALL, 2 + i) for i in range(3)))
        finally:
            await server.close()

    asyncio.run(main())


def test_the_close_for_not_reading_is_logged_once(monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # the review of 1abd2f1 (finding 10): the held requests' drains time out together, and each logged
    # "closing <peer>: ... did not read" (189 lines for one connection); the first closes it, the rest are quiet
    import logging

    monkeypatch.setattr(serving, "ANSWER_DRAIN_TIMEOUT_S", 0.5)
    caplog.set_level(logging.WARNING, logger="rocketstore.remoting.transport")

    async def main() -> None:
        server = RemotingServer(RequestRouter({BIG: _big, SMALL: _small}), idle_timeout_s=3600)
        await server.start("127.0.0.1", 0)
        try:
            await _gone_after(server, request_frame(BIG, 1) + b"".join(request_frame(SMALL, 2 + i) for i in range(40)))
        finally:
            await server.close()

    asyncio.run(main())
    closing = [r.getMessage() for r in caplog.records if r.getMessage().startswith("closing ")]
    assert len(closing) == 1, closing
