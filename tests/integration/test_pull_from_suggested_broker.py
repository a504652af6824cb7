"""Our pull consumer goes where the broker's answer points (suggestWhichBrokerId), as 4.9.3's clients do: a
master with slaveReadEnable sends a consumer reading beyond the in-memory share of the commitlog to the
group's whichBrokerWhenConsumeSlowly (the slave, brokerId 1); the next pull of that queue goes there, and
carries no offset commit (offsets are the master's).  Counted by each broker's own GROUP_GET_NUMS."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole, StoreConfig

TOPIC, GROUP = "SuggestedTopic", "suggested-group"
COLD = {"access_message_in_memory_max_ratio": 0}  # every pull reads "beyond memory": the slave is suggested


def pulls_served(broker: Broker) -> int:
    item = broker.stats.item("GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
    return 0 if item is None else item.times


@pytest.mark.parametrize("slave_read_enable", [True, False])
def test_the_next_pull_goes_to_the_suggested_broker(tmp_path: Path, slave_read_enable: bool) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, slave_read_enable=slave_read_enable,
                      store_overrides=COLD) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "suggested-producer") as producer:
                for i in range(4):
                    assert (await producer.send(TOPIC, b"m%d" % i)).status == "SEND_OK"

        run(send())
        config = BrokerConfig(broker_name=cluster.broker_name, broker_id=1, namesrv_addr=cluster.namesrv_addr,
                              listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1")
        slave = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "slave"), broker_role=BrokerRole.SLAVE,
                                           **SMALL_STORE))
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
                    (mq,) = await consumer.queues(TOPIC)
                    bodies: list[bytes] = []
                    offset = 0
                    for _ in range(2):
                        result = await consumer.pull(mq, offset, 2, commit_offset=offset)
                        bodies += [m.body for m in result.messages]
                        offset = result.next_begin_offset
                    return bodies

            assert run(consume()) == [b"m0", b"m1", b"m2", b"m3"]
            on_master, on_slave = cluster.call(lambda: (pulls_served(cluster.broker), pulls_served(slave)))
            assert (on_master, on_slave) == ((1, 1) if slave_read_enable else (2, 0))
        finally:
            cluster.run(slave.close())
