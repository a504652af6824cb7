"""The asyncio transport over real sockets on 127.0.0.1: routing, oneway, limits, timeouts, closing."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rocketstore.errors import ConnectionClosedError, RequestTimeoutError
from rocketstore.remoting import FrameDecoder, RemotingCommand, ResponseCode
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import ANSWER_LATER, Connection, connect, new_event_loop

#: the transport is the part of the product that sees the loop most (rocketstore[fast] runs it on uvloop)
pytestmark = pytest.mark.both_loops

TEST_TIMEOUT_S = 10.0


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    """*test* on a loop of the kind this run is for (asyncio's or uvloop's), bounded by TEST_TIMEOUT_S."""
    async def bounded() -> Any:
        return await asyncio.wait_for(test(), TEST_TIMEOUT_S)

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(bounded())


async def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields.get("x", "")},
                                 body=request.body)


async def start(router: RequestRouter, **kwargs: Any) -> RemotingServer:
    server = RemotingServer(router, **kwargs)
    await server.start("127.0.0.1", 0)
    return server


async def poll(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def test_request_response_by_opaque_and_unknown_code_is_not_supported() -> None:
    async def go() -> None:
        server = await start(RequestRouter({1000: echo}))
        client = await connect(server.address)
        try:
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": str(i)}, b"b%d" % i), 5)
                                             for i in range(20)))
            assert [r.ext_fields["echo"] for r in replies] == [str(i) for i in range(20)]
            assert [r.body for r in replies] == [b"b%d" % i for i in range(20)]
            unknown = await client.request(RemotingCommand.request(4242), 5)
            assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert unknown.remark == " request type 4242 not supported"
            assert client.pending_count == 0
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_oneway_requests_are_served_but_never_answered() -> None:
    async def go() -> None:
        seen: list[str] = []

        async def record(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            seen.append(request.ext_fields["x"])
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({7: record, 1000: echo}))
        client = await connect(server.address)
        # the bytes the server sends are read raw: a spy on the client's protocol methods sees nothing on
        # uvloop, whose transport keeps the protocol's get_buffer/buffer_updated from the start
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            await client.oneway(RemotingCommand.request(7, {"x": "one"}))
            await poll(lambda: seen == ["one"], 5, "the client's oneway request to be served")
            writer.write(encode_command(RemotingCommand.request(7, {"x": "two"}, oneway=True), 1))
            await poll(lambda: seen == ["one", "two"], 5, "the raw oneway request to be served")
            # any answer to the oneway would be on the wire before this one's
            writer.write(encode_command(RemotingCommand.request(1000, {"x": "after"}), 2))
            await writer.drain()
            decoder = FrameDecoder()
            while (reply := decoder.next_command()) is None:
                data = await reader.read(65536)
                assert data, "the server closed the connection"
                decoder.feed(data)
            assert reply.opaque == 2 and reply.ext_fields["echo"] == "after"
            assert decoder.next_command() is None
        finally:
            writer.close()
            await client.aclose()
            await server.close()

    run(go)


def test_handler_exception_becomes_system_error() -> None:
    async def go() -> None:
        async def broken(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            raise ValueError("boom")

        server = await start(RequestRouter({5: broken}))
        client = await connect(server.address)
        try:
            reply = await client.request(RemotingCommand.request(5), 5)
            assert reply.code == ResponseCode.SYSTEM_ERROR and "boom" in (reply.remark or "")
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_a_frame_over_the_limit_closes_the_connection_and_fails_pending_requests() -> None:
    async def go() -> None:
        server = await start(RequestRouter({1000: echo}), max_frame_bytes=4096)
        client = await connect(server.address)
        try:
            small = await client.request(RemotingCommand.request(1000, body=b"x" * 100), 5)
            assert small.code == ResponseCode.SUCCESS
            with pytest.raises(ConnectionClosedError) as info:
                await client.request(RemotingCommand.request(1000, body=b"x" * 10_000), 5)
            assert info.value.__cause__ is not None or client.is_closed
            await poll(lambda: not server.connections, 5, "the server to drop the connection")
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_request_times_out_and_forgets_its_opaque() -> None:
    async def go() -> None:
        release = asyncio.Event()

        async def slow(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            await release.wait()
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({9: slow}))
        client = await connect(server.address)
        try:
            with pytest.raises(RequestTimeoutError):
                await client.request(RemotingCommand.request(9), 0.2)
            assert client.pending_count == 0
            release.set()  # the late answer is dropped quietly
            assert (await client.request(RemotingCommand.request(9), 5)).code == ResponseCode.SUCCESS
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_closing_fails_pending_requests_with_the_cause_chained() -> None:
    async def go() -> None:
        async def never(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        server = await start(RequestRouter({9: never}))
        client = await connect(server.address)
        try:
            pending = asyncio.ensure_future(client.request(RemotingCommand.request(9), 5))
            await poll(lambda: client.pending_count == 1, 5, "the request to be pending")
            cause = RuntimeError("shutting down")
            client.close(cause)
            with pytest.raises(ConnectionClosedError) as info:
                await pending
            assert info.value.__cause__ is cause
            with pytest.raises(ConnectionClosedError):
                await client.request(RemotingCommand.request(9), 1)
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_idle_connections_are_closed_by_the_server() -> None:
    async def go() -> None:
        server = await start(RequestRouter({1000: echo}), idle_timeout_s=0.3)
        client = await connect(server.address)
        try:
            await client.request(RemotingCommand.request(1000), 5)
            await poll(lambda: client.is_closed, 5, "the idle connection to be closed")
            assert not server.connections
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_in_flight_requests_per_connection_are_bounded() -> None:
    async def go() -> None:
        release = asyncio.Event()
        running: list[int] = []

        async def blocking(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            running.append(request.opaque)
            await release.wait()
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({9: blocking}), max_in_flight=2)
        client = await connect(server.address)
        try:
            calls = [asyncio.ensure_future(client.request(RemotingCommand.request(9), 5)) for _ in range(6)]
            await poll(lambda: len(running) == 2, 5, "two requests to run")
            await asyncio.sleep(0.1)  # a margin for a third one to (wrongly) start
            assert len(running) == 2
            release.set()
            replies = await asyncio.gather(*calls)
            assert all(r.code == ResponseCode.SUCCESS for r in replies) and len(running) == 6
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_cpp_style_request_gets_a_json_answer_with_string_ext_fields() -> None:
    """jsoncpp FastWriter output (trailing newline, numbers among the extFields), read back raw."""

    async def go() -> None:
        async def typed(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            assert request.ext_fields["queueId"] == "3"
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"queueId": request.ext_fields["queueId"],
                                                                          "queueOffset": "7"})

        server = await start(RequestRouter({30: typed}))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            header = (b'{"code":30,"extFields":{"AccessKey":"","OnsChannel":"","Signature":"","queueId":3,'
                      b'"topic":"T"},"flag":0,"language":"CPP","opaque":77,"remark":"","version":63}\n')
            writer.write(struct.pack(">ii", 4 + len(header), len(header)) + header)
            await writer.drain()
            total, word = struct.unpack(">ii", await reader.readexactly(8))
            assert word >> 24 == 0, "a JSON header (type byte 0), readable by clients that do not mask it"
            answer = json.loads(await reader.readexactly(word))
            assert answer["opaque"] == 77 and answer["flag"] == 1 and answer["code"] == 0
            assert answer["extFields"] == {"queueId": "3", "queueOffset": "7"}
            assert total == 4 + word
        finally:
            writer.close()
            await server.close()

    run(go)


def test_immediate_handlers_answer_without_a_task_and_keep_the_order_requests_start_in() -> None:
    async def go() -> None:
        started: list[str] = []
        immediate_answers: list[str] = []

        def now(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
            x = request.ext_fields["x"]
            if x == "defer":
                return None  # this one needs the async handler
            if x == "bad":
                raise ValueError("boom")
            started.append(x)
            immediate_answers.append(x)
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": x, "how": "now"})

        async def later(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            started.append(request.ext_fields["x"])
            await asyncio.sleep(0.05)
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields["x"],
                                                                           "how": "later"})

        router = RequestRouter()
        router.add(1000, later, immediate=now)
        server = await start(router)
        client = await connect(server.address)
        try:
            # 64 pipelined requests: all answered by the immediate path, each under its own opaque
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": str(i)}), 5)
                                             for i in range(64)))
            assert [(r.ext_fields["echo"], r.ext_fields["how"]) for r in replies] == [(str(i), "now")
                                                                                   for i in range(64)]
            # a request the immediate path declines goes to the async handler, and those queued behind it
            # follow it there, started in the order they came
            started.clear()
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": x}), 5)
                                             for x in ("defer", "a", "b")))
            assert started == ["defer", "a", "b"]
            assert [r.ext_fields["how"] for r in replies] == ["later", "later", "later"]
            # once they are done, the immediate path serves again
            reply = await client.request(RemotingCommand.request(1000, {"x": "c"}), 5)
            assert reply.ext_fields["how"] == "now"
            # an exception in the immediate path is a SYSTEM_ERROR answer, as in the async handler
            reply = await client.request(RemotingCommand.request(1000, {"x": "bad"}), 5)
            assert reply.code == ResponseCode.SYSTEM_ERROR and "boom" in (reply.remark or "")
            # oneway: served, never answered
            immediate_answers.clear()
            await client.oneway(RemotingCommand.request(1000, {"x": "quiet"}))
            await poll(lambda: immediate_answers == ["quiet"], 5, "the oneway request to be served")
            reply = await client.request(RemotingCommand.request(1000, {"x": "d"}), 5)
            assert reply.ext_fields["echo"] == "d" and client.pending_count == 0
        finally:
            await client.aclose()
            await server.close()

    run(go)


class CountingTransport:
    """Delegates to a transport, counting the writes handed to it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.inner.write(data)

    def writelines(self, data: Any) -> None:
        self.writes += 1
        self.inner.writelines(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_answers_to_frames_read_together_leave_together() -> None:
    async def go() -> None:
        router = RequestRouter()
        router.add(1000, echo, immediate=lambda conn, request: request.make_response(
            ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields["x"]}))
        server = await start(router)
        client = await connect(server.address)
        try:
            await client.request(RemotingCommand.request(1000, {"x": "first"}), 5)
            (served,) = server.connections
            counting = CountingTransport(served._transport)
            served._transport = counting  # type: ignore[assignment]
            # the 32 frames arrive in one write from the client, so the server answers them in few
            client_counting = CountingTransport(client._transport)
            client._transport = client_counting  # type: ignore[assignment]
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": str(i)}), 5)
                                             for i in range(32)))
            assert [r.ext_fields["echo"] for r in replies] == [str(i) for i in range(32)]
            assert client_counting.writes == 1
            assert counting.writes < 8
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_answers_given_later_count_as_in_flight_and_leave_together() -> None:
    """An immediate handler that takes answer_later: its request stays in flight (reading pauses at the
    limit) until the answer is given; answers given in one go leave in one write."""
    async def go() -> None:
        later: list[tuple[RemotingCommand, Callable[[RemotingCommand | bytes], None]]] = []

        def hold(conn: Connection, request: RemotingCommand) -> object:
            later.append((request, conn.answer_later(request)))
            return ANSWER_LATER

        def answer_all() -> None:
            batch, later[:] = list(later), []
            for request, reply in batch:
                reply(request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields["x"]}))

        router = RequestRouter()
        router.add(1000, echo, immediate=hold)
        for limit, count in ((4, 10), (1024, 32)):
            server = await start(router, max_in_flight=limit)
            client = await connect(server.address)
            try:
                calls = [asyncio.ensure_future(client.request(RemotingCommand.request(1000, {"x": str(i)}), 5))
                         for i in range(count)]
                held = min(limit, count)

                def all_held(held: int = held) -> bool:
                    return len(later) == held

                await poll(all_held, 5, f"{held} requests to be held")
                await asyncio.sleep(0.1)  # a margin for one more to (wrongly) be read
                assert len(later) == held and not any(c.done() for c in calls)
                (served,) = server.connections
                counting = CountingTransport(served._transport)
                served._transport = counting  # type: ignore[assignment]
                while not all(c.done() for c in calls):
                    answer_all()
                    await asyncio.sleep(0.01)
                replies = await asyncio.gather(*calls)
                assert sorted(int(r.ext_fields["echo"]) for r in replies) == list(range(count))
                if limit > count:  # answered in one go: one write, not one per answer
                    assert counting.writes == 1
            finally:
                await client.aclose()
                await server.close()

    run(go)
