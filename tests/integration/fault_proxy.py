"""A TCP proxy for tests that injects network faults between two real parties (a slave and its master's HA
port, a client and a broker): forward, stall one direction (bytes held, no FIN), cut the connection after
k more bytes towards the client side (with a FIN or an RST), or swallow what the client sends on the
connections open (a peer gone silently), then forward again for the next connection.

    proxy = await FaultProxy("127.0.0.1", target_port).start()     # proxy.address: "127.0.0.1:PORT"
    proxy.cut_down_after(7, rst=False)                              # the next 7 bytes pass, then a FIN
    proxy.stall_down()                                              # hold what the target sends ...
    proxy.resume_down()                                             # ... until now
    proxy.forward()                                                 # no fault armed
    await proxy.close()

"Down" is target -> client.  Runs on the test's event loop."""

from __future__ import annotations

import asyncio
import socket
import struct


def _abort(writer: asyncio.StreamWriter, rst: bool) -> None:
    sock = writer.get_extra_info("socket")
    if rst and sock is not None:
        try:  # linger 0: the close sends an RST
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    if rst:
        writer.transport.abort()
    else:
        writer.close()


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1", port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.host = host
        self.port = port
        self.accepted = 0
        #: connections cut by cut_down_after
        self.cuts = 0
        self._stall_down = False
        self._cut: tuple[int, bool] | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._swallowing: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def forward(self) -> None:
        self._stall_down = False
        self._cut = None

    def stall_down(self) -> None:
        self._stall_down = True

    def resume_down(self) -> None:
        """End a stall_down (a cut armed stays armed)."""
        self._stall_down = False

    def swallow_up(self) -> None:
        """The connections open now take what the client sends and pass none of it on, for good, without a
        FIN or an RST (a peer gone silently: its host down, a NAT entry dropped); new ones are forwarded."""
        self._swallowing.update(self._tasks)

    def cut_down_after(self, k: int, *, rst: bool) -> None:
        """Let *k* more bytes reach the client side, then close both sides (an RST with *rst*, else a FIN)."""
        self._cut = (k, rst)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            _abort(writer, rst=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            sreader, swriter = await asyncio.open_connection(*self.target)
        except OSError:
            _abort(cwriter, rst=True)
            return
        self._writers.update((cwriter, swriter))
        loop = asyncio.get_running_loop()
        up = loop.create_task(self._pump(creader, swriter, down=False))
        down = loop.create_task(self._pump(sreader, cwriter, down=True))
        self._tasks.update((up, down))
        try:
            await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            self._tasks.difference_update((up, down))
            self._swallowing.difference_update((up, down))
            for writer in (cwriter, swriter):
                if not writer.transport.is_closing():
                    _abort(writer, rst=False)
                self._writers.discard(writer)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, down: bool) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                if asyncio.current_task() in self._swallowing:
                    continue
                while down and self._stall_down:
                    await asyncio.sleep(0.01)
                if down and self._cut is not None:
                    k, rst = self._cut
                    if len(data) >= k:
                        self._cut = None
                        self.cuts += 1
                        writer.write(data[:k])
                        await writer.drain()
                        _abort(writer, rst)
                        return
                    self._cut = (k - len(data), rst)
                writer.write(data)
                await writer.drain()
        except OSError:
            return
