"""Every broker listens on its HA port, a slave too.

4.9.3's DefaultMessageStore.start starts the HAService whatever the role, and HAService.start begins its
AcceptSocketService (haListenPort) on a slave as on a master; the HAClient also starts everywhere and
connects only where a master address is known.  So a slave made master at run time (UPDATE_BROKER_CONFIG
brokerRole) can be followed by a new slave at once, with no restart: what 4.9.3 gives after a failover.
"""

from __future__ import annotations

from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster
from test_hunt16_role_runtime import set_role
from test_replication import STORE, start_slave, stop

from rocketstore import Message
from rocketstore.broker import Broker, BrokerConfig
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.results import PutMessageStatus

TOPIC = "PromotedTopic"


def test_a_slave_made_master_is_followed_by_a_new_slave(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        slave = start_slave(cluster, tmp_path / "slave")
        follower: Broker | None = None
        try:
            assert slave.ha_server is not None and slave.ha_server.port > 0
            set_role(cluster, "ASYNC_MASTER", slave.address)
            put = cluster.run(slave.put(Message.create(TOPIC, b"written on the promoted slave", queue_id=0)))
            assert put.status is PutMessageStatus.PUT_OK
            follower = Broker(BrokerConfig(broker_name=cluster.broker_name, broker_id=2,
                                           namesrv_addr=cluster.namesrv_addr, listen_port=0, listen_host="127.0.0.1",
                                           broker_ip1="127.0.0.1",
                                           ha_master_address=f"127.0.0.1:{slave.ha_server.port}"),
                              StoreConfig(store_path_root_dir=str(tmp_path / "follower"), broker_role=BrokerRole.SLAVE,
                                          **{**SMALL_STORE, **STORE}))
            cluster.run(follower.start())
            new = follower
            cluster.wait_until(lambda: new.store.max_commit_log_offset == slave.store.max_commit_log_offset
                               and new.store.dispatch_behind_bytes == 0, 30, "the new slave to catch up")
            got = cluster.call(lambda: new.store.get(TOPIC, 0, 0, 32).messages)
            assert [m.body for m in got] == [b"written on the promoted slave"]
        finally:
            if follower is not None:
                stop(cluster, follower)
            stop(cluster, slave)
