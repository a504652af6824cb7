"""A peer that does not read its answers, then closes: the requests it sent in full still run.

While the peer reads none of its answers, the server holds back the requests that have one (2538fe8), so
their answers do not pile up in memory.  When the peer then goes away (or stays silent past the drain's
time-out), those held-back requests must still run and only their answers be dropped, as for every request
read in full (Connection.connection_lost; 4.9.3's processors finish what they decoded): a send stored, an
offset committed.  Held back at the drain, they were dropped unrun (the session's review, finding 3).
Counts effects; never times anything.
"""

from __future__ import annotations

import asyncio
import socket
import struct

from raw_frames import poll, request_frame

from rocketstore.remoting import RemotingCommand, ResponseCode
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection

ANSWER = b"a" * (256 * 1024)
BIG, WITH_EFFECT = 9, 10


def test_requests_held_back_for_a_peer_that_reads_nothing_still_run_when_it_closes() -> None:
    effects: list[int] = []

    async def big(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=ANSWER)

    async def effect(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        effects.append(request.opaque)
        return request.make_response(ResponseCode.SUCCESS)

    async def main() -> None:
        server = RemotingServer(RequestRouter({BIG: big, WITH_EFFECT: effect}))
        await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # reads nothing, holds little
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", server.port))
            # 100 answers of 256 KB fill every buffer; then 5 requests with an effect, held back
            await loop.sock_sendall(sock, b"".join(request_frame(BIG, i) for i in range(1, 101))
                                    + b"".join(request_frame(WITH_EFFECT, 1000 + i) for i in range(5)))
            await poll(lambda: len(server.connections) == 1, "the connection")
            (conn,) = server.connections
            await poll(lambda: conn._writing_paused, "the server to stop writing to a peer that reads nothing")
            await poll(lambda: conn._in_flight >= 5, "the requests to be read")
            for _ in range(20):
                await asyncio.sleep(0)
            assert effects == [], "held back while the peer reads nothing"
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset: gone
            sock.close()
            await poll(lambda: len(effects) == 5, "the requests read in full to run after the close")
            assert sorted(effects) == [1000 + i for i in range(5)]
        finally:
            sock.close()
            await server.close()

    asyncio.run(main())
