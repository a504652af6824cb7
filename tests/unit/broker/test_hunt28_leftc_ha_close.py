"""A master closing its HA port while a slave is connected but has stopped reading (a stalled or frozen slave
host): the slave's connection is closed at once, as 4.9.3 closes the SocketChannel, rather than kept open
until the bytes buffered for it are taken.  Before, the writer was closed gracefully: the connection stayed
open for as long as the slave read nothing, and on Python 3.12+ the server's wait_closed (which waits for
every connection) made the broker's close hang for good."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any, cast

from rocketstore.broker.ha import HAServer
from rocketstore.store.message_store import MessageStore


class _EndlessStore:
    """A commitlog that always has more to send (what a slave far behind sees)."""

    max_commit_log_offset = 1 << 40
    min_commit_log_offset = 0

    def read_replica(self, offset: int, size: int) -> bytes:
        return b"x" * size


def test_a_slave_that_stopped_reading_is_cut_off_at_close() -> None:
    async def go() -> Any:
        server = HAServer(cast(MessageStore, _EndlessStore()), "127.0.0.1", 0)
        await server.start()
        slave = socket.socket()
        slave.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slave.connect(("127.0.0.1", server.port))
        slave.setblocking(False)
        try:
            slave.send(struct.pack(">q", 100))  # where it wants the commitlog from; then it reads nothing
            while not any(s.ack_offset == 100 for s in server.slaves):
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # the master fills the connection's buffers
            await asyncio.wait_for(server.close(), 30)  # (hung on 3.12+)
            # the master's end is gone: what the slave sends now is answered by a reset
            for _ in range(500):
                try:
                    slave.send(struct.pack(">q", 100))
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as exc:
                    return type(exc)
                await asyncio.sleep(0.01)
            return "the master's end of the connection is still open"
        finally:
            slave.close()

    assert asyncio.run(go()) in (ConnectionResetError, BrokenPipeError)
