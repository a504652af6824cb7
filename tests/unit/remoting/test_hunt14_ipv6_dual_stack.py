"""A RemotingServer on ``::`` listens on every IPv6 and IPv4 address (4.9.3's wildcard bind accepts both), and
sees an IPv4 client as Java does: ``127.0.0.1:PORT``, not the IPv4-mapped ``[::ffff:127.0.0.1]:PORT`` (the
ACL white lists and the connection listings match IPv4 text)."""

from __future__ import annotations

import socket

import pytest

from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection, connect, run


def _dual_stack() -> bool:
    if not socket.has_dualstack_ipv6():
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _dual_stack(), reason="no IPv6 loopback / dual-stack sockets here")


def test_a_server_on_the_ipv6_wildcard_takes_ipv4_clients_and_names_them_as_ipv4() -> None:
    async def scenario() -> list[str]:
        seen: list[str] = []

        async def who(connection: Connection, request: RemotingCommand) -> RemotingCommand:
            seen.append(connection.peer_address)
            return request.make_response(ResponseCode.SUCCESS)

        server = RemotingServer(RequestRouter({RequestCode.HEART_BEAT: who}))
        await server.start("::", 0)
        try:
            for addr in (f"127.0.0.1:{server.port}", f"[::1]:{server.port}"):
                conn = await connect(addr)
                try:
                    answer = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT), 5)
                    assert answer.code == ResponseCode.SUCCESS
                finally:
                    await conn.aclose()
        finally:
            await server.close()
        return seen

    seen = run(scenario())
    assert seen[0].startswith("127.0.0.1:"), seen
    assert seen[1].startswith("[::1]:"), seen
