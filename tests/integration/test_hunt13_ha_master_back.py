"""A master that comes back after an outage on its old address is followed again by its slave within the
slave's reconnect interval, as 4.9.3's: a registration answered without a master (the name server dropped
it meanwhile) leaves the slave's HA master address as it was (BrokerController.doRegisterBrokerAll updates
it only with a non-null haServerAddr, and the HA client keeps reconnecting to it every 5 s), while the
config sync's master address is cleared (no sync without a master)."""

from __future__ import annotations

from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster
from serve_process import free_port
from test_replication import STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig

STORE_CONFIG = {**SMALL_STORE, **STORE}


def test_a_slave_follows_its_master_again_when_it_comes_back(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "unused") as cluster:
        port, ha_port = free_port(), free_port()
        master_config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=port,
                                     listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=ha_port)

        def start_master() -> Broker:
            master = Broker(master_config, StoreConfig(store_path_root_dir=str(tmp_path / "master"), **STORE_CONFIG))
            cluster.run(master.start())
            cluster.call(lambda: master.put_now(Message.create("BackTopic", b"x" * 100, tags="T")))
            return master

        master = start_master()
        slave = cluster.start_slave(tmp_path / "slave", "broker-b", store_overrides=STORE_CONFIG)
        try:
            assert slave.registrar is not None and slave.ha_client is not None
            slave.ha_client.reconnect_s = 0.1  # the 5 s of RocketMQ's HA client, shortened for the test
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == master.store.max_commit_log_offset, 20,
                               "the slave to follow the master")
            cluster.run(master.close())  # the master goes away and unregisters
            cluster.run(slave.registrar.register_all())  # the slave's next periodic registration, brought forward
            assert slave.registrar.master_addr is None, "no master: no config sync"
            master = start_master()  # back on its old addresses
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == master.store.max_commit_log_offset, 10,
                               "the slave to follow the master again without waiting for its next registration")
        finally:
            cluster.run(slave.close())
            cluster.run(master.close())
