"""A request on a connection that closed fails with ConnectionClosedError whose text says how it closed: reset
by the peer (an RST), closed by the peer (a FIN), closed by us (and why), closed after a time-out.  Before,
every case read "connection to X closed" (the cause only in __cause__), and a producer's "Last error:" text,
which quotes the error's text, hid it too."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from rocketstore.errors import ConnectionClosedError, RequestTimeoutError
from rocketstore.remoting import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, connect, new_event_loop

pytestmark = pytest.mark.both_loops


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(test(), 10.0)

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(bounded())


class Peer:
    """A listening socket whose one accepted connection, once it has read a request, ends as *how* says:
    "fin" (an orderly close), "rst" (SO_LINGER 0: a reset) or "silent" (kept open, never answering)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while True:
            try:
                peer, _ = self.listener.accept()
                break
            except TimeoutError:
                if self.done.is_set():
                    return
            except OSError:
                return
        with peer:
            peer.settimeout(10.0)
            try:  # the whole request frame: closing with bytes unread would reset the connection
                data = peer.recv(65536)
                while data and len(data) < 4 + int.from_bytes(data[:4].ljust(4, b"\xff"), "big"):
                    data += peer.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self.how == "rst":
                peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif self.how == "silent":
                self.done.wait(10.0)

    def close(self) -> None:
        self.done.set()
        self.thread.join(10.0)
        self.listener.close()


@pytest.fixture
def peer_factory() -> Iterator[Callable[[str], Peer]]:
    peers: list[Peer] = []

    def make(how: str) -> Peer:
        peers.append(Peer(how))
        return peers[-1]

    yield make
    for peer in peers:
        peer.close()


def request() -> RemotingCommand:
    return RemotingCommand.request(26, {"topic": "t"})


@pytest.mark.parametrize(("how", "said"), [("rst", "closed: reset by peer"), ("fin", "closed by the peer")])
def test_the_peer_closing_is_named(peer_factory: Callable[[str], Peer], how: str, said: str) -> None:
    peer = peer_factory(how)

    async def scenario() -> None:
        connection = await connect(peer.address)
        with pytest.raises(ConnectionClosedError) as info:
            await connection.request(request(), 8.0)
        assert str(info.value) == f"connection to {peer.address} {said}"
        # a request after the close says the same
        with pytest.raises(ConnectionClosedError) as later:
            await connection.request(request(), 8.0)
        assert str(later.value) == f"connection to {peer.address} {said}"
        if how == "rst":
            assert isinstance(info.value.__cause__, ConnectionResetError)

    run(scenario)


def test_our_close_is_named_with_its_cause(peer_factory: Callable[[str], Peer]) -> None:
    peer = peer_factory("silent")

    async def scenario() -> None:
        connection = await connect(peer.address)
        pending = asyncio.ensure_future(connection.request(request(), 8.0))
        await asyncio.sleep(0)
        connection.close(ConnectionClosedError("idle"))
        with pytest.raises(ConnectionClosedError) as info:
            await pending
        assert str(info.value) == f"connection to {peer.address} closed by us: idle"
        plain = await connect(peer.address)  # (the peer took its one connection: this one is never read)
        await plain.aclose()
        with pytest.raises(ConnectionClosedError, match=r"closed by us$"):
            await plain.request(request(), 8.0)

    run(scenario)


def test_a_time_out_that_closed_the_connection_is_named(peer_factory: Callable[[str], Peer]) -> None:
    peer = peer_factory("silent")

    async def scenario() -> None:
        pool = ConnectionPool()
        try:
            other = asyncio.ensure_future(pool.request(peer.address, request(), 8.0))
            with pytest.raises(RequestTimeoutError) as timed_out:
                await pool.request(peer.address, request(), 0.3)
            # the time-out closed the connection: the other request on it fails at once, saying so
            with pytest.raises(ConnectionClosedError) as info:
                await other
            assert str(info.value) == f"connection to {peer.address} closed: timed out: {timed_out.value}"
        finally:
            await pool.close()

    run(scenario)
