"""A producer's send, its heartbeat and a route look-up whose connection went silent (a fault proxy whose open
connection swallows what the client sends: the peer's host down, a NAT entry dropped, no FIN, no RST) close
that connection when their request times out, so the next call opens another and is answered.  4.9.3 does so
for every sync call (NettyRemotingClient.invokeSync closes the channel on a RemotingTimeoutException while
clientCloseSocketIfTimeout, default true).  These three asked on the connection directly, past
ConnectionPool.request's close: every later send (or heartbeat, or look-up) timed out on the silent one."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from local_cluster import SMALL_STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.errors import RemotingError
from rocketstore.namesrv import NameServer
from rocketstore.remoting.transport import run
from rocketstore.store.config import StoreConfig

TOPIC = "NetfaultSilent"
#: the bound of every call meant to be answered: far past what a loaded 2-core box takes
GENEROUS_S = 15.0


async def until(fn: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not fn():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def broker_behind_proxy(store: Path) -> AsyncIterator[tuple[NameServer, FaultProxy]]:
    """A name server and a broker that registers 127.0.0.2:PORT while it listens on 127.0.0.1:PORT, and a
    fault proxy on 127.0.0.2:PORT in front of it: route-based clients reach the broker through the proxy."""
    namesrv = NameServer()
    await namesrv.start("127.0.0.1", 0)
    broker = Broker(BrokerConfig(broker_name="netfault-a", listen_port=0, namesrv_addr=namesrv.address,
                                 listen_host="127.0.0.1", broker_ip1="127.0.0.2"),
                    StoreConfig(store_path_root_dir=str(store), **SMALL_STORE))
    await broker.start()
    port = broker.server.port
    try:
        try:
            proxy = await FaultProxy("127.0.0.1", port, host="127.0.0.2", port=port).start()
        except OSError as exc:  # a loopback without 127.0.0.2 (Linux has all of 127/8)
            pytest.skip(f"cannot listen on 127.0.0.2: {exc}")
        try:
            async with AdminClient(namesrv.address) as admin:
                await admin.create_topic(TOPIC, broker_addr=f"127.0.0.1:{port}", read_queue_nums=1,
                                         write_queue_nums=1)
            await until(lambda: namesrv.routes.route(TOPIC) is not None, "the topic's route")
            yield namesrv, proxy
        finally:
            await proxy.close()
    finally:
        await broker.close()
        await namesrv.close()


def test_a_send_timed_out_on_a_silent_connection_closes_it_and_the_next_send_succeeds(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            # generous bounds for what is meant to be answered (a loaded box; a heartbeat still out when the
            # proxy goes silent times out long after the test), a short one only for the swallowed send
            producer = Producer(namesrv.address, "netfault_pg", timeout_s=GENEROUS_S,
                                mq_client_api_timeout_s=GENEROUS_S)
            await producer.start()
            try:
                assert (await producer.send(TOPIC, b"warm")).status == "SEND_OK"
                assert proxy.accepted == 1
                proxy.swallow_up()
                with pytest.raises(RemotingError):
                    await producer.send(TOPIC, b"lost", timeout_s=0.5)
                # the silent connection is closed: this send goes out on a new one
                assert (await producer.send(TOPIC, b"after")).status == "SEND_OK"
                assert proxy.accepted == 2
            finally:
                await producer.close()

    run(scenario())


def test_a_heartbeat_timed_out_on_a_silent_connection_closes_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            producer = Producer(namesrv.address, "netfault_pg", timeout_s=GENEROUS_S,
                                heartbeat_interval_s=0.2, mq_client_api_timeout_s=GENEROUS_S)
            await producer.start()
            try:
                assert (await producer.send(TOPIC, b"warm")).status == "SEND_OK"
                producer.mq_client_api_timeout_s = 0.5  # (read by each heartbeat) short for the swallowed
                proxy.swallow_up()
                # no send: a heartbeat round times out, closes the connection, and a later round opens
                # another (before, every round timed out on the silent one)
                # (a heartbeat already out with the generous bound when the proxy went silent holds the round
                # that long)
                await until(lambda: proxy.accepted >= 2, "a heartbeat on a new connection", timeout_s=40.0)
                producer.mq_client_api_timeout_s = GENEROUS_S
                # (a heartbeat sent with the short bound on the new connection may yet time out on a loaded
                # box and close it under this send: the send's own retries ask again)
                assert (await producer.send(TOPIC, b"after")).status == "SEND_OK"
            finally:
                await producer.close()

    run(scenario())


def test_a_route_look_up_timed_out_on_a_silent_name_server_connection_closes_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, _):
            host, port = namesrv.address.rsplit(":", 1)
            ns_proxy = await FaultProxy(host, int(port)).start()
            try:
                async with AdminClient(ns_proxy.address, timeout_s=GENEROUS_S) as admin:
                    assert (await admin.route(TOPIC)).broker_datas
                    ns_proxy.swallow_up()
                    admin.routes.timeout_s = 0.5  # (read by each look-up) short for the swallowed one only
                    with pytest.raises(NoRouteError, match="no response from"):
                        await admin.route(TOPIC)
                    admin.routes.timeout_s = GENEROUS_S
                    # the silent connection is closed: this look-up goes out on a new one
                    assert (await admin.route(TOPIC)).broker_datas
                    assert ns_proxy.accepted == 2
            finally:
                await ns_proxy.close()

    run(scenario())
