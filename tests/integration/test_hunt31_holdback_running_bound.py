"""Requests of one connection whose handler awaits before answering (an executor-run query by key, a full topic
or offset table) run at most MAX_RUNNING at once: one past it waits for one of them to end or park.  Before, all
the requests of one read started before any answer was written (up to max_in_flight, 1,024), so a peer that
pipelined them and read slowly had every answer computed and kept in memory for it: the hold-back of a peer
not reading could stop none of them.  Oneways, parked requests and sends do not count; a closed connection
lets the waiting ones run (their answers dropped), as every request read in full."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rocketstore.remoting import RemotingCommand, ResponseCode
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.serving import MAX_RUNNING
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection, new_event_loop

BLOCK, PARK = 1000, 1001


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(test(), 10.0)

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(bounded())


class Handlers:
    """BLOCK: runs until *release* is set; PARK: parks, then as BLOCK.  Counts what started and what runs."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.running = 0
        self.most_running = 0
        self.connection: Connection | None = None

    async def block(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.connection = conn
        self.started += 1
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await self.release.wait()
        finally:
            self.running -= 1
        return request.make_response(ResponseCode.SUCCESS, body=b"x" * 1000)

    async def park(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.connection = conn
        self.started += 1
        assert conn.park()
        try:
            await self.release.wait()
        finally:
            conn.unpark()
        return request.make_response(ResponseCode.SUCCESS)

    def router(self) -> RequestRouter:
        return RequestRouter({BLOCK: self.block, PARK: self.park})


def frames(code: int, count: int, first: int = 1, oneway: bool = False) -> bytes:
    return b"".join(encode_command(RemotingCommand.request(code, {"n": str(i)}, oneway=oneway), i)
                    for i in range(first, first + count))


async def poll(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + 8.0
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def settle(handlers: Handlers, in_flight: int) -> None:
    """Until the server read *in_flight* requests, then until every task it started has had its first step."""
    await poll(lambda: handlers.connection is not None and handlers.connection.in_flight_count >= in_flight,
               f"{in_flight} requests read")
    for _ in range(5):
        await asyncio.sleep(0)


async def read_answers(reader: asyncio.StreamReader, count: int) -> list[int]:
    opaques = []
    for _ in range(count):
        length = int.from_bytes(await reader.readexactly(4), "big")
        frame = await reader.readexactly(length)
        header_length = int.from_bytes(frame[:4], "big") & 0xFFFFFF
        opaques.append(int(frame[4:4 + header_length].split(b'"opaque":')[1].split(b",")[0]))
    return opaques


def test_a_pipelined_burst_runs_at_most_max_running_handlers_and_answers_them_all() -> None:
    async def go() -> None:
        handlers = Handlers()
        server = RemotingServer(handlers.router())
        await server.start("127.0.0.1", 0)
        host, port = server.address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            count = MAX_RUNNING * 3
            writer.write(frames(BLOCK, count))  # one burst, none of its answers read yet
            await poll(lambda: handlers.started >= MAX_RUNNING, "the first requests to run")
            await settle(handlers, count)
            assert handlers.started == MAX_RUNNING
            handlers.release.set()
            opaques = await read_answers(reader, count)
            assert sorted(opaques) == list(range(1, count + 1))
            assert opaques[:MAX_RUNNING] == list(range(1, MAX_RUNNING + 1))
            assert handlers.most_running == MAX_RUNNING
        finally:
            writer.close()
            await server.close()

    run(go)


def test_oneways_and_parked_requests_do_not_count() -> None:
    async def go() -> None:
        handlers = Handlers()
        server = RemotingServer(handlers.router())
        await server.start("127.0.0.1", 0)
        host, port = server.address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            parked = MAX_RUNNING * 2
            writer.write(frames(PARK, parked) + frames(BLOCK, MAX_RUNNING, parked + 1)
                         + frames(BLOCK, 10, parked + MAX_RUNNING + 1, oneway=True))
            await poll(lambda: handlers.started == parked + MAX_RUNNING + 10,
                       "the parked, the running and the oneway requests all to start")
            handlers.release.set()
            opaques = await read_answers(reader, parked + MAX_RUNNING)
            assert sorted(opaques) == list(range(1, parked + MAX_RUNNING + 1))
        finally:
            writer.close()
            await server.close()

    run(go)


def test_a_closed_connection_lets_the_waiting_requests_run() -> None:
    async def go() -> None:
        handlers = Handlers()
        server = RemotingServer(handlers.router())
        await server.start("127.0.0.1", 0)
        host, port = server.address.rsplit(":", 1)
        _, writer = await asyncio.open_connection(host, int(port))
        try:
            count = MAX_RUNNING + 20
            writer.write(frames(BLOCK, count))
            await settle(handlers, count)
            assert handlers.started == MAX_RUNNING
            writer.close()
            await poll(lambda: handlers.started == count, "the waiting requests to run after the close")
            handlers.release.set()
            await poll(lambda: handlers.running == 0, "every request to end")
        finally:
            writer.close()
            await server.close()

    run(go)
