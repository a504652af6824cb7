"""haListenPort out of the port range (70000, -1): `rocketstore broker` started and served HA on port 4464
(70000 modulo 65536: the event loop it runs on takes the number so), and a Broker on the standard event loop
died of a bare OverflowError.  listenPort out of range is refused at start naming the key; haListenPort now
is too.  (4.9.3 ignores haListenPort: its HA port is always listenPort + 1; this broker honours the key.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketstore import StoreConfig
from rocketstore.broker import Broker, BrokerConfig
from rocketstore.errors import StoreConfigError


def _start_and_close(root: Path, ha_listen_port: int) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1", ha_listen_port=ha_listen_port),
                        StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20))
        try:
            await broker.start()
        finally:
            await broker.close()
    asyncio.run(main())


@pytest.mark.parametrize("port", [70000, 65536, -1])
def test_a_ha_listen_port_out_of_range_is_refused_naming_the_key(tmp_path: Path, port: int) -> None:
    with pytest.raises(StoreConfigError, match=f"haListenPort {port} out of range"):
        _start_and_close(tmp_path, port)


def test_port_zero_still_lets_the_os_pick(tmp_path: Path) -> None:
    _start_and_close(tmp_path, 0)
