"""The connections a broker opens itself (registration with the name servers, a slave's calls to its master)
are made as the TlsConfig the broker was built with says, not as the process says: 4.9.3's BrokerStartup
gives the broker's NettyClientConfig useTLS = ``tls.enable``, true by default when tls.server.mode is
enforcing, and its BrokerOuterAPI opens every such connection with it.  The process stays plain
(use_client_tls(None)) throughout; the name server (and the master) serve TLS only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from certs import self_signed
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore.broker import stats_admin
from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig
from rocketstore.remoting.tls import TlsConfig, TlsMode, use_client_tls
from rocketstore.store.config import BrokerRole, StoreConfig


@pytest.fixture(scope="module")
def server_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return self_signed(tmp_path_factory.mktemp("certs"), "server")


@pytest.fixture(autouse=True)
def plain_process() -> Iterator[None]:
    use_client_tls(None)  # the process's choice: plain; only a broker's tls= may turn TLS on
    yield
    use_client_tls(None)


def _tls(cert: tuple[str, str], mode: TlsMode, enable: bool | None = None) -> TlsConfig:
    return TlsConfig(server_mode=mode, server_cert_path=cert[0], server_key_path=cert[1],
                     client_enable=enable)


def _start_broker(cluster: LocalCluster, store_dir: Path, tls: TlsConfig, **store: Any) -> Broker:
    """A broker of its own (broker-b unless a slave of the cluster's) built with *tls*, registering with the
    cluster's name server; started (its first registration answered or failed) when this returns."""
    slave = store.get("broker_role") is BrokerRole.SLAVE
    config = BrokerConfig(broker_name=cluster.broker_name if slave else "broker-b",
                          broker_id=1 if slave else 0, namesrv_addr=cluster.namesrv_addr, listen_port=0,
                          listen_host="127.0.0.1", broker_ip1="127.0.0.1")
    store_config = StoreConfig(store_path_root_dir=str(store_dir), **{**SMALL_STORE, **store})
    broker = Broker(config, store_config, tls=tls)
    cluster.run(broker.start())
    return broker


def _registered(cluster: LocalCluster, broker: Broker) -> bool | None:
    def look() -> bool | None:
        assert broker.registrar is not None
        return broker.registrar.registered.get(cluster.namesrv_addr)

    return cluster.call(look)


def _use_tls(cluster: LocalCluster, broker: Broker) -> str:
    """GET_BROKER_CONFIG's useTLS line (4.9.3: the NettyClientConfig's useTLS the broker runs with)."""
    text = cluster.call(lambda: stats_admin.reported_config_text(broker))
    [line] = [line for line in text.splitlines() if line.startswith("useTLS=")]
    return line


def test_an_enforcing_broker_without_tls_enable_registers_over_tls(server_cert: tuple[str, str],
                                                                   tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_tls(server_cert, TlsMode.ENFORCING)) as cluster:
        assert _registered(cluster, cluster.broker) is True
        assert cluster.call(lambda: cluster.namesrv.routes.any_broker_addr()) == cluster.broker_addr
        assert _use_tls(cluster, cluster.broker) == "useTLS=true"


def test_tls_enable_decides_whatever_the_broker_serves(server_cert: tuple[str, str], tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_tls(server_cert, TlsMode.ENFORCING)) as cluster:
        # tls.enable=true: TLS though the broker itself serves plain connections too
        permissive = _start_broker(cluster, tmp_path / "b1", _tls(server_cert, TlsMode.PERMISSIVE, True))
        try:
            assert _registered(cluster, permissive) is True
            assert _use_tls(cluster, permissive) == "useTLS=true"
        finally:
            cluster.run(permissive.close())
        # tls.enable=false: plain though the broker serves TLS only, and the name server closes it
        plain = _start_broker(cluster, tmp_path / "b2", _tls(server_cert, TlsMode.ENFORCING, False))
        try:
            assert _registered(cluster, plain) is False
            assert _use_tls(cluster, plain) == "useTLS=false"
        finally:
            cluster.run(plain.close())


def test_a_slave_built_with_tls_syncs_from_a_tls_only_master(server_cert: tuple[str, str],
                                                              tmp_path: Path) -> None:
    tls = _tls(server_cert, TlsMode.ENFORCING)
    with LocalCluster(tmp_path / "master", tls=tls, ha_listen_port=0) as cluster:
        slave = _start_broker(cluster, tmp_path / "slave", tls, broker_role=BrokerRole.SLAVE)
        try:
            assert _registered(cluster, slave) is True
            assert slave.slave_sync is not None
            assert cluster.run(slave.slave_sync.sync_once()) is True  # GET_ALL_TOPIC_CONFIG & co over TLS
            assert cluster.call(lambda: slave.slave_sync.pool._connections[cluster.broker_addr]
                                ._transport.get_extra_info("ssl_object")) is not None
        finally:
            cluster.run(slave.close())
