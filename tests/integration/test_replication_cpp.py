"""The official C++ client (PyPI ``rocketmq`` 0.4.4) against a master/slave pair: with the master gone, its
push consumer goes on reading from the slave, which answers pulls, heartbeats, rebalancing and offset
requests from its replicated store."""

from __future__ import annotations

from pathlib import Path

from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, send, start_slave, stop

from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole

pytestmark = requires_cpp_client

TOPIC = "ReplicatedTopic"  # test_replication.send's topic


def test_cpp_push_consumer_reads_from_the_slave_while_the_master_is_down(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            assert slave.store_config.broker_role == BrokerRole.SLAVE
            run(send(cluster, 30))
            caught_up(cluster, slave)
            # the slave knows the topic once its config sync has run (every 10 s; here at once), as a Java
            # slave answers TOPIC_NOT_EXIST for topics its last sync did not bring
            assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
            cluster.run(cluster.broker.close())  # the master goes away (it unregisters)
            consumer = Runner(["consume", cluster.namesrv_addr, TOPIC, "cpp-slave-reader"], tmp_path)
            try:
                consumer.collect_until(lambda seen: len(messages(seen)) >= 30, 60, "30 messages from the slave")
                consumer.stop()
            finally:
                consumer.kill()
            got = sorted(m["body"].split(" ")[0] for m in messages(consumer.seen))
            assert got == sorted(f"m{i}" for i in range(30)), "each message once, all from the slave"
            assert {m["keys"] for m in messages(consumer.seen)} == {f"k{i}" for i in range(30)}
        finally:
            stop(cluster, slave)
