"""Our pull consumer goes where the broker's answer points (suggestWhichBrokerId), as 4.9.3's clients do: a
master with slaveReadEnable sends a consumer reading beyond the in-memory share of the commitlog to the
group's whichBrokerWhenConsumeSlowly (the slave, brokerId 1); the next pull of that queue goes there, and
carries no offset commit (offsets are the master's).  Counted by each broker's own GROUP_GET_NUMS."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.broker import Broker
from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run

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
        cluster.wait_dispatched()  # the master's consume queue too (the wait below is the slave's)
        slave = cluster.start_slave(tmp_path / "slave", cluster.broker_name)
        try:
            cluster.wait_slave_synced(slave)

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
