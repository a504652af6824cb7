"""A name server list with an entry that is no address (``"a:9876;localhost"``, a trailing ``"; "``, a port
past 65535): 4.9.3's NettyRemotingClient.createChannel catches what RemotingHelper.string2SocketAddress
throws for it and goes on to the next name server, as for one that does not answer.  Real name server on
127.0.0.1."""

from __future__ import annotations

import pytest
from local_cluster import run_within

from rocketstore.client.admin import AdminClient
from rocketstore.client.route import RouteCache
from rocketstore.errors import ConnectionClosedError
from rocketstore.namesrv import NameServer
from rocketstore.remoting.transport import ConnectionPool, connect, split_address

#: entries Java's string2SocketAddress cannot make an address of (no ':', an empty host's blank, a port
#: InetSocketAddress refuses, a port Integer.parseInt refuses) or one it makes and cannot connect to
BAD = ["localhost", " ", "127.0.0.1:99999", "127.0.0.1:x"]


@pytest.mark.parametrize("bad", BAD)
def test_a_route_look_up_skips_a_name_server_entry_that_is_no_address(bad: str) -> None:
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        pools = [ConnectionPool(connect_timeout_s=2.0) for _ in range(12)]
        try:
            # each cache starts at one of the two at random: 12 of them start at the bad one (p = 1 - 2**-12)
            for pool in pools:
                cache = RouteCache([bad, namesrv.address], pool)
                assert await cache.fetch("NoSuchTopic") is None  # TOPIC_NOT_EXIST: the name server answered
        finally:
            for pool in pools:
                await pool.close()
            await namesrv.close()

    run_within(go, 60)


def test_an_admin_given_a_trailing_blank_entry_still_finds_routes() -> None:
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        try:
            for _ in range(12):
                admin = AdminClient(f"{namesrv.address}; ")
                try:
                    assert await admin.routes.fetch("NoSuchTopic") is None
                finally:
                    await admin.close()
        finally:
            await namesrv.close()

    run_within(go, 60)


@pytest.mark.parametrize("bad", BAD + ["[::1]", "host:", ":9876", "[::1]x9876"])
def test_connecting_to_no_address_is_a_connection_failure(bad: str) -> None:
    async def go() -> None:
        with pytest.raises(ConnectionClosedError, match="cannot connect to"):
            await connect(bad, timeout_s=2.0)

    run_within(go, 30)


@pytest.mark.parametrize("address, expected", [
    ("[::1]:9876", ("::1", 9876)), ("::1:9876", ("::1", 9876)), (" 10.0.0.1:10911 ", ("10.0.0.1", 10911)),
    ("[fe80::1%eth0]:9876", ("fe80::1%eth0", 9876)), ("host:0", ("host", 0)),
    ("host:65535", ("host", 65535))])
def test_split_address_reads_what_string2socketaddress_reads(address: str,
                                                              expected: tuple[str, int]) -> None:
    assert split_address(address) == expected


@pytest.mark.parametrize("address", ["[::1]x9876", "[::1]", "host:65536", "host:99999", "host:-1", "host"])
def test_split_address_refuses_what_string2socketaddress_refuses(address: str) -> None:
    """(A port past 65535 raised OverflowError from the socket calls instead, which a slave's HA loop, that
    retries a haMasterAddress on ValueError and OSError, did not catch.)"""
    with pytest.raises(ValueError):
        split_address(address)
