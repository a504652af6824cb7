"""A slave whose commitlog is not its master's history refuses the master's bytes instead of appending them
mid-record.  The master was restored from an older copy of its store, so the slave holds records the master
no longer has; once the master has written past the slave's end again, it sends from that offset, which in
its own commitlog falls inside a record.  4.9.3 appends those bytes (its slave's reput then stops at the
first undecodable record, and the slave serves nothing new, silently); here the slave sees that the first
chunk after its (whole-record) end does not start a record, says why and keeps its store as it is."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from local_cluster import SMALL_STORE, LocalCluster
from serve_process import free_port
from test_replication import STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig

STORE_CONFIG = {**SMALL_STORE, **STORE}
TOPIC = "DivergedTopic"


def test_a_slave_ahead_of_its_restored_master_keeps_its_store(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.ha")
    ha_port = free_port()
    with LocalCluster(tmp_path / "unused") as cluster:
        def start_master() -> Broker:
            config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=0,
                                  listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=ha_port)
            master = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "master"), **STORE_CONFIG))
            cluster.run(master.start())
            return master

        def put(master: Broker, count: int, pad: int) -> None:
            def go() -> None:
                for i in range(count):
                    master.put_now(Message.create(TOPIC, f"{i} ".encode() + b"x" * pad, tags="T", queue_id=0))
            cluster.call(go)

        master = start_master()
        slave = cluster.start_slave(tmp_path / "slave", "broker-b", store_overrides=STORE_CONFIG,
                                    ha_master_address=f"127.0.0.1:{ha_port}")
        try:
            assert slave.ha_client is not None
            slave.ha_client.reconnect_s = 0.1  # the 5 s of RocketMQ's HA client, shortened for the test
            put(master, 20, 100)
            cluster.run(master.close())
            shutil.copytree(tmp_path / "master", tmp_path / "master-copy")  # the backup
            master = start_master()
            put(master, 20, 100)
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == master.store.max_commit_log_offset, 20,
                               "the slave to have all 40")
            cluster.wait_until(lambda: slave.store.dispatch_behind_bytes == 0, 20, "the slave's queues")
            slave_end = slave.store.max_commit_log_offset
            cluster.run(master.close())
            shutil.rmtree(tmp_path / "master")
            shutil.copytree(tmp_path / "master-copy", tmp_path / "master")  # restored from the backup
            master = start_master()
            put(master, 30, 37)  # other sizes: the slave's end falls inside one of these records
            assert master.store.max_commit_log_offset > slave_end
            cluster.wait_until(lambda: "does not start a record" in caplog.text, 20, "the slave to refuse")
            assert cluster.call(lambda: slave.store.max_commit_log_offset) == slave_end, "nothing appended"
            assert cluster.call(lambda: slave.store.max_offset(TOPIC, 0)) == 40
        finally:
            cluster.run(slave.close())
            cluster.run(master.close())
