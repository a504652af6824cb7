"""A consumer sent to a slave id its broker does not have (whichBrokerWhenConsumeSlowly 1, the group's
default, for a master whose slave is broker 2) pulls from the next id's slave, as 4.9.3's
findBrokerAddressInSubscribe tries brokerId + 1 before it falls back to the master.  Before, it went back
to the master, which sent it to broker 1 again at every pull: the slave never served it, and the master's
page cache took the cold reads slaveReadEnable is there to keep off it.  Counted by each broker's own
GROUP_GET_NUMS."""

from __future__ import annotations

from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster
from test_pull_from_suggested_broker import COLD, pulls_served

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole, StoreConfig

TOPIC, GROUP = "SuggestedTopic", "suggested-group"  # the names pulls_served counts


def test_a_consumer_sent_to_slave_1_pulls_from_slave_2(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, slave_read_enable=True, store_overrides=COLD) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "next-slave-producer") as producer:
                for i in range(6):
                    assert (await producer.send(TOPIC, b"m%d" % i)).status == "SEND_OK"

        run(send())
        config = BrokerConfig(broker_name=cluster.broker_name, broker_id=2, namesrv_addr=cluster.namesrv_addr,
                              listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", slave_read_enable=True)
        slave = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "slave"), broker_role=BrokerRole.SLAVE,
                                           **SMALL_STORE, **COLD))
        cluster.run(slave.start())
        try:
            end = cluster.call(lambda: cluster.broker.store.max_commit_log_offset)
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == end and not slave.store.dispatch_behind_bytes,
                               30, "the slave to catch up")
            cluster.wait_until(lambda: slave.slave_sync is not None and slave.slave_sync.master_addr(), 30,
                               "the slave to know its master")
            assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())  # the topic, now

            async def consume() -> list[bytes]:
                async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
                    route = await consumer.routes.route(TOPIC, refresh=True)
                    bd = route.broker(cluster.broker_name)
                    assert bd is not None and sorted(bd.broker_addrs) == [0, 2], route
                    (mq,) = await consumer.queues(TOPIC)
                    bodies: list[bytes] = []
                    offset = 0
                    for _ in range(3):
                        result = await consumer.pull(mq, offset, 2)
                        bodies += [m.body for m in result.messages]
                        offset = result.next_begin_offset
                    return bodies

            assert run(consume()) == [b"m%d" % i for i in range(6)]
            # the first pull at the master, which suggests broker 1; the others at broker 2 (which, reading
            # cold too, suggests broker 1 again)
            assert cluster.call(lambda: (pulls_served(cluster.broker), pulls_served(slave))) == (1, 2)
        finally:
            cluster.run(slave.close())
