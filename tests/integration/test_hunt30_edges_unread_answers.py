"""A peer that sends requests and does not read the answers: the server stops serving its requests (those
that have an answer) until it reads, instead of serving up to max_in_flight (1,024) of them and holding
every answer in memory.

4.9.3 serves them all and queues the answers in Netty's outbound buffer without bound (its channel's
writability is not checked): pulls of 100 KB messages pipelined by a client that never reads ran the 4.9.3
broker out of heap.  Here 5,000 such pulls grew the broker by ~200 MB (1,024 answers held); now by a few MB.
Counts the requests served; never times anything.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct

from raw_frames import poll, request_frame

from rocketstore.remoting import RemotingCommand, ResponseCode
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection

REQUESTS = 240  # 60 MB of answers: many times what the socket buffers take (4 MB each, Linux's default)
ANSWER = b"a" * (256 * 1024)


async def _read_answers(sock: socket.socket, count: int) -> list[int]:
    loop = asyncio.get_running_loop()
    pending = b""

    async def take(n: int) -> bytes:  # n bytes, what was read past them kept for the next take
        nonlocal pending
        parts, have = [pending], len(pending)
        while have < n:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), 20.0)
            assert chunk, "the server closed the connection"
            parts.append(chunk)
            have += len(chunk)
        data = b"".join(parts)
        pending = data[n:]
        return data[:n]

    opaques: list[int] = []
    for _ in range(count):
        length, header_length = struct.unpack(">II", await take(8))
        header = json.loads(await take(header_length & 0xFFFFFF))
        assert header["code"] == ResponseCode.SUCCESS
        assert len(await take(length - 4 - (header_length & 0xFFFFFF))) == len(ANSWER)
        opaques.append(header["opaque"])
    return opaques


def test_requests_wait_while_the_peer_does_not_read_the_answers() -> None:
    served: list[int] = []
    served_tasks: list[asyncio.Task[object]] = []

    async def big(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        served.append(request.opaque)
        served_tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        return request.make_response(ResponseCode.SUCCESS, body=ANSWER)

    async def main() -> None:
        server = RemotingServer(RequestRouter({9: big}))
        await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # reads nothing, holds little
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", server.port))
            await loop.sock_sendall(sock, b"".join(request_frame(9, i + 1) for i in range(REQUESTS)))
            await poll(lambda: len(server.connections) == 1, "the connection")
            (conn,) = server.connections
            # every request read: each one in flight (served, its answer waiting for the peer, or waiting
            # to be served) or done (served while the socket buffers took its answer)
            await poll(lambda: conn._in_flight + sum(t.done() for t in served_tasks) == REQUESTS,
                        "the requests to be read")
            for _ in range(20):  # the tasks run up to where they wait
                await asyncio.sleep(0)
            # the socket buffers take a few MB of the answers, then the server waits for the peer
            assert len(served) < REQUESTS // 2, f"{len(served)} of {REQUESTS} served for a peer that reads nothing"
            # once the peer reads, every request is served and answered, in order
            opaques = await _read_answers(sock, REQUESTS)
            assert opaques == list(range(1, REQUESTS + 1))
            assert len(served) == REQUESTS
        finally:
            sock.close()
            await server.close()

    asyncio.run(main())
