"""A broker whose connection to a name server went silent (a fault proxy whose open connection swallows what
the broker sends: no FIN, no RST, as after a NAT entry or a firewall's state dropped) closes it when a
registration times out, and registers on a new one at the next round, long before the name server would
expire it (brokerChannelExpiredTime, 120 s).  4.9.3's BrokerOuterAPI registers with invokeSync, which closes
the channel on a time-out (clientCloseSocketIfTimeout, default true).  Before, every later registration timed
out on the silent connection: the name server expired the broker, and its topics lost their route."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from fault_proxy import FaultProxy
from local_cluster import SMALL_STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.namesrv import NameServer
from rocketstore.remoting.transport import run
from rocketstore.store.config import StoreConfig


async def until(fn: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not fn():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def test_a_registration_timed_out_on_a_silent_name_server_connection_closes_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        host, port = namesrv.address.rsplit(":", 1)
        proxy = await FaultProxy(host, int(port)).start()
        broker = Broker(BrokerConfig(broker_name="netfault-reg", listen_port=0, namesrv_addr=proxy.address,
                                     listen_host="127.0.0.1", broker_ip1="127.0.0.1"),
                        StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE))
        await broker.start()
        try:
            registrar = broker.registrar
            # (30 s, registerBrokerTimeoutMills 6 s): a generous bound for the registrations meant to be
            # answered (a loaded box), a short one only while the proxy swallows (each round reads timeout_s)
            registrar.period_s, registrar.timeout_s = 0.3, 15.0
            await until(lambda: registrar.registered.get(proxy.address) is True, "the first registration")
            assert proxy.accepted == 1
            registrar.timeout_s = 1.0
            proxy.swallow_up()
            # (a round already out with the generous bound when the proxy went silent holds the next that
            # long)
            await until(lambda: registrar.registered.get(proxy.address) is False, "a registration timed out",
                        timeout_s=40.0)
            registrar.timeout_s = 15.0
            # the next round connects again and the name server takes it
            await until(lambda: registrar.registered.get(proxy.address) is True and proxy.accepted >= 2,
                        "a registration on a new connection")
            assert broker.address in namesrv.routes.live
        finally:
            await broker.close()
            await proxy.close()
            await namesrv.close()

    run(scenario())
