"""A broker.conf UPDATE_BROKER_CONFIG wrote says ``haListenPort=<listenPort + 1>`` (4.9.3 writes every
property; so does ours now); a restart with it while that port is taken falls back to a port the OS picks, as
a broker without haListenPort does, instead of failing to start.  Checked with mqadmin updateBrokerConfig,
then a restart of ``rocketstore broker -c`` with listenPort + 1 held by another process."""

from __future__ import annotations

import socket
from pathlib import Path

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.stats_admin import config_text, reported_config_text
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.remoting.transport import run
from rocketstore.store.config import StoreConfig


async def _start_with_ha_port_taken(store: Path) -> tuple[int, int, str, str]:
    """(asked HA port, HA port in use, haListenPort shown, haListenPort written) of a broker whose conf says
    haListenPort = listenPort + 1 while that port is held."""
    for _ in range(20):
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        held = blocker.getsockname()[1]
        try:
            config = BrokerConfig(broker_name="b", listen_port=held - 1, listen_host="127.0.0.1",
                                  broker_ip1="127.0.0.1", ha_listen_port=held)
            broker = Broker(config, StoreConfig(store_path_root_dir=str(store)))
            try:
                await broker.start()
            except OSError:
                if broker.server.port:  # listenPort itself was free: the HA port's fall-back is what failed
                    raise
                continue  # listenPort (held - 1) happened to be taken: another pair
            try:
                assert broker.ha_server is not None
                shown = parse_properties_text(reported_config_text(broker))["haListenPort"]
                written = parse_properties_text(config_text(broker))["haListenPort"]
                return held, broker.ha_server.port, shown, written
            finally:
                await broker.close()
        finally:
            blocker.close()
    raise AssertionError("no free listenPort below a held port")


def test_a_written_conf_s_ha_port_taken_at_restart_falls_back(tmp_path: Path) -> None:
    held, in_use, shown, written = run(_start_with_ha_port_taken(tmp_path / "store"))
    assert in_use != held
    assert shown == str(in_use)
    assert written == str(held)
