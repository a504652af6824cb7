"""brokerIP1 given as a host name (a container's DNS name, or localhost): 4.9.3 starts, registers
``<name>:<listenPort>`` as the broker's address and writes the address the name resolves to as the records'
STOREHOST (its InetSocketAddress(brokerIP1, listenPort)); the broker here refused to start with "cannot
parse host address 'localhost:10911'", naming no property.

Captured from 4.9.3 with brokerIP1=localhost and listenPort=44311: the route's brokerAddrs {0:
"localhost:44311"}, the send's offset message id starting 7F0000010000AD17 (127.0.0.1:44311)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from rocketstore import StoreConfig
from rocketstore.broker import Broker, BrokerConfig
from rocketstore.message.host import parse_host


def test_a_host_name_broker_ip1_is_registered_as_given_and_resolved_for_storehost(tmp_path: Path) -> None:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo("localhost", None, socket.AF_INET)}
    except OSError:
        addresses = set()
    if "127.0.0.1" not in addresses:
        pytest.skip("localhost does not resolve to 127.0.0.1 here")

    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="localhost"),
                        StoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commit_log=1 << 20))
        try:
            await broker.start()
            port = broker.server.port
            assert broker.address == f"localhost:{port}"
            assert broker.store_host == parse_host(f"127.0.0.1:{port}")
            assert broker.store.store_host == parse_host(f"127.0.0.1:{port}")
        finally:
            await broker.close()
    asyncio.run(main())


def test_a_broker_ip1_that_does_not_resolve_fails_the_start_before_anything_is_bound(tmp_path: Path) -> None:
    # the review of 96debc8: it was resolved after both listeners were bound, outside the start's clean-up
    from rocketstore.errors import StoreConfigError

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()

    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=port, listen_host="127.0.0.1",
                                     broker_ip1="no-such-host.invalid"),
                        StoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commit_log=1 << 20))
        with pytest.raises(StoreConfigError, match="brokerIP1=no-such-host.invalid"):
            await broker.start()
        again = socket.socket()
        try:
            again.bind(("127.0.0.1", port))  # free: the failed start left nothing listening
        finally:
            again.close()
            await broker.close()
    asyncio.run(main())
