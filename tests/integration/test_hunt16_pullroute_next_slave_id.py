"""A consumer sent to a slave id its broker does not have (whichBrokerWhenConsumeSlowly 1, the group's
default, for a master whose slave is broker 2) pulls from the next id's slave, as 4.9.3's
findBrokerAddressInSubscribe tries brokerId + 1 before it falls back to the master.  Before, it went back
to the master, which sent it to broker 1 again at every pull: the slave never served it, and the master's
page cache took the cold reads slaveReadEnable is there to keep off it.  Counted by each broker's own
GROUP_GET_NUMS."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster
from test_pull_from_suggested_broker import COLD, pulls_served

from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run

TOPIC, GROUP = "SuggestedTopic", "suggested-group"  # the names pulls_served counts


def test_a_consumer_sent_to_slave_1_pulls_from_slave_2(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, slave_read_enable=True, store_overrides=COLD) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "next-slave-producer") as producer:
                for i in range(6):
                    assert (await producer.send(TOPIC, b"m%d" % i)).status == "SEND_OK"

        run(send())
        slave = cluster.start_slave(tmp_path / "slave", cluster.broker_name, 2, COLD, slave_read_enable=True)
        try:
            cluster.wait_slave_synced(slave)

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
