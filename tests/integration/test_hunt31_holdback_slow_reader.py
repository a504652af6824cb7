"""A peer that reads its answers slowly gets them at its own pace; the server keeps few of them in memory.

Session 30 held back the requests of a peer that reads none of its answers (the transport over its
high-water mark).  When such a peer then read a little, every held request was let through at once: 300
pipelined pulls of 1 MB answers queued +280 MB of answers after the peer had read 3 MB.  Now the held requests
go one at a time, in order, each once the peer has read what the one before wrote (4.9.3 bounds nothing
here: its channel queues every answer).  Oneways still run while others are held.
Counts handler runs against bytes read; never times anything.
"""

from __future__ import annotations

import asyncio
import socket
import struct

from raw_frames import poll, request_frame

from rocketstore.remoting import FrameDecoder, RemotingCommand, ResponseCode
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection

ANSWER_BYTES = 1 << 20
ANSWER = b"a" * ANSWER_BYTES
BIG, ONEWAY = 9, 10
REQUESTS = 40
#: answers that may be computed beyond those the peer has read: what the kernel's socket buffers hold (up to
#: 4 MiB of send buffer by Linux's default tcp_wmem), the transport's high-water mark and the one let through
SLACK = 8


def _oneway_frame(code: int, opaque: int) -> bytes:
    frame = bytearray(request_frame(code, opaque))
    header = bytes(frame[8:]).replace(b'"flag": 0', b'"flag": 2')  # the oneway bit
    return struct.pack(">II", 4 + len(header), len(header)) + header


def test_a_slow_reader_gets_every_answer_and_the_server_computes_few_ahead() -> None:
    started: list[int] = []
    oneways: list[int] = []

    async def big(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        started.append(request.opaque)
        return request.make_response(ResponseCode.SUCCESS, body=ANSWER)

    async def oneway(conn: Connection, request: RemotingCommand) -> None:
        oneways.append(request.opaque)
        return None

    async def main() -> None:
        server = RemotingServer(RequestRouter({BIG: big, ONEWAY: oneway}), idle_timeout_s=3600)
        await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # holds little of what it does not read
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", server.port))
            await loop.sock_sendall(sock, b"".join(request_frame(BIG, i) for i in range(1, REQUESTS + 1)))
            await poll(lambda: len(server.connections) == 1, "the connection")
            (conn,) = server.connections
            await poll(lambda: conn._writing_paused, "the server to stop writing to a peer that does not read")
            # (those answered into the socket buffers have ended; the rest are in flight, held)
            await poll(lambda: len(started) + conn._in_flight >= REQUESTS, "the requests to be read")
            # a oneway has no answer to hold: it runs while the peer still reads nothing
            await loop.sock_sendall(sock, _oneway_frame(ONEWAY, 5000))
            await poll(lambda: oneways == [5000], "the oneway to run while the others are held")
            assert len(started) <= SLACK, started

            decoder = FrameDecoder()
            answers: list[int] = []
            read = 0
            while len(answers) < REQUESTS:
                data = await asyncio.wait_for(loop.sock_recv(sock, 256 * 1024), 30)
                assert data, "the server closed the connection"
                read += len(data)
                decoder.feed(data)
                while (answer := decoder.next_command()) is not None:
                    assert answer.code == ResponseCode.SUCCESS and len(answer.body) == ANSWER_BYTES
                    answers.append(answer.opaque)
                # let the server react to what was read before looking at what it computed
                for _ in range(5):
                    await asyncio.sleep(0)
                # let through all at once when the peer read a little, all 40 ran after its first read
                assert len(started) <= read // ANSWER_BYTES + SLACK, (len(started), read)
            assert answers == list(range(1, REQUESTS + 1)), "every answer, in order"
            assert started == answers
        finally:
            sock.close()
            await server.close()

    asyncio.run(main())
