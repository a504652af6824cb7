"""A peer that closes right after sending (a oneway, a request it stops waiting for) still gets its request
served, as a 4.9.3 broker's processor threads finish every request they read: only the answer is dropped.
A long-polled (parked) request of a closed connection ends at once, and a closing server lets the requests it
read take effect, cancelling what has not ended within its timeout."""

from __future__ import annotations

import asyncio
import socket

import pytest
from test_transport import poll, run, start

from rocketstore.namesrv import NameServer
from rocketstore.remoting import RemotingCommand, ResponseCode
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection, connect

#: the transport's closing paths, as rocketstore[fast] runs them on uvloop too
pytestmark = pytest.mark.both_loops


def test_a_oneway_whose_sender_closes_at_once_still_takes_effect() -> None:
    async def go() -> None:
        gate = asyncio.Event()
        done: list[str] = []

        async def slow_effect(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            await gate.wait()  # an await before the effect (a write off the loop, a durable wait, ...)
            done.append(request.ext_fields["x"])
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({7: slow_effect}))
        try:
            client = await connect(server.address)
            await client.oneway(RemotingCommand.request(7, {"x": "kept"}))
            await client.aclose()
            await poll(lambda: not server.connections, 5, "the server to see the close")
            gate.set()
            await poll(lambda: done == ["kept"], 5, "the oneway's effect")
        finally:
            await server.close()

    run(go)


def test_a_parked_request_of_a_closed_connection_ends() -> None:
    async def go() -> None:
        parked = asyncio.Event()
        ended: list[bool] = []

        async def long_poll(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            conn.park()
            try:
                parked.set()
                await asyncio.Event().wait()  # no message ever comes
            finally:
                conn.unpark()
                ended.append(True)
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({11: long_poll}))
        try:
            client = await connect(server.address)
            call = asyncio.ensure_future(client.request(RemotingCommand.request(11), 30))
            await asyncio.wait_for(parked.wait(), 5)
            await client.aclose()
            await poll(lambda: ended == [True], 5, "the parked request to end")
            assert call.done()
        finally:
            await server.close()

    run(go)


def test_a_request_parking_after_its_connection_closed_ends_at_once() -> None:
    async def go() -> None:
        gate = asyncio.Event()
        committed: list[bool] = []
        ended: list[bool] = []

        async def pull(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            await gate.wait()
            committed.append(True)  # what a pull does before it parks (its offset commit) stays done
            conn.park()
            try:
                await asyncio.Event().wait()
            finally:
                conn.unpark()
                ended.append(True)
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({11: pull}))
        try:
            client = await connect(server.address)
            await client.oneway(RemotingCommand.request(11))
            await client.aclose()
            await poll(lambda: not server.connections, 5, "the server to see the close")
            gate.set()
            await poll(lambda: ended == [True], 5, "the request parked after the close to end")
            assert committed == [True]
        finally:
            await server.close()

    run(go)


def test_a_closing_server_lets_the_requests_it_read_take_effect() -> None:
    async def go() -> None:
        gate = asyncio.Event()
        started = asyncio.Event()
        done: list[bool] = []

        async def slow_effect(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            started.set()
            await gate.wait()
            done.append(True)
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({7: slow_effect}))
        client = await connect(server.address)
        try:
            await client.oneway(RemotingCommand.request(7))
            await asyncio.wait_for(started.wait(), 5)
            closing = asyncio.ensure_future(server.close())
            await poll(lambda: client.is_closed, 5, "the server to close the connection")
            gate.set()
            await asyncio.wait_for(closing, 10)
            assert done == [True]
        finally:
            await client.aclose()
            await server.close()

    run(go)


def test_a_closing_server_cancels_a_request_that_does_not_end() -> None:
    async def go() -> None:
        started = asyncio.Event()
        cancelled: list[bool] = []

        async def stuck(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise
            return request.make_response(ResponseCode.SUCCESS)

        server = await start(RequestRouter({7: stuck}))
        client = await connect(server.address)
        try:
            await client.oneway(RemotingCommand.request(7))
            await asyncio.wait_for(started.wait(), 5)
            await asyncio.wait_for(server.close(timeout_s=0.2), 10)
            await asyncio.sleep(0)
            assert cancelled == [True]
        finally:
            await client.aclose()

    run(go)


def test_a_broker_registration_sent_just_before_the_close_is_kept() -> None:
    """REGISTER_BROKER with a body big enough to be decoded off the loop (an await before the registration),
    its connection closed as soon as it is sent: the name server routes the topics all the same."""
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        try:
            topics = {f"Closing{k}": TopicConfig(f"Closing{k}", 4, 4) for k in range(5000)}
            body = RegisterBrokerBody(topics, DataVersion(1, 1)).encode()
            request = RemotingCommand.request(RequestCode.REGISTER_BROKER, {
                "brokerName": "broker-closing", "brokerAddr": "127.0.0.1:10911", "clusterName": "C",
                "haServerAddr": "127.0.0.1:10912", "brokerId": "0"}, body, opaque=1)
            host, port = namesrv.address.rsplit(":", 1)

            def send_and_close() -> None:
                with socket.create_connection((host, int(port)), timeout=10) as sock:
                    sock.sendall(encode_command(request))

            await asyncio.to_thread(send_and_close)
            await poll(lambda: namesrv.routes.route("Closing4999") is not None, 10, "the registration's routes")
        finally:
            await namesrv.close()

    run(go)
