"""slaveReadEnable as a master answers it: a pull that reads beyond the in-memory share of the commitlog
(accessMessageInMemoryMaxRatio, here 0 % so that every pull does) suggests the group's
whichBrokerWhenConsumeSlowly (a slave, brokerId 1 by default), as 4.9.3's PullMessageProcessor does;
the C++ and Java clients pull from the suggested broker next.  Without slaveReadEnable a master always
suggests itself (brokerId 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, pull_suggestion

from rocketstore.client import Producer
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run

TOPIC = "SlaveReadTopic"
GROUP = "slow-group"


async def send(namesrv: str, count: int) -> None:
    async with Producer(namesrv, "slave-read-producer") as producer:
        for i in range(count):
            assert (await producer.send(TOPIC, f"m{i}".encode())).status == "SEND_OK"


def suggested_broker(broker_addr: str, queue_id: int, offset: int) -> tuple[int, int]:
    """(response code, suggestWhichBrokerId) of one pull of *queue_id* from *offset*."""
    return pull_suggestion(broker_addr, GROUP, TOPIC, queue_id, offset)


@pytest.mark.parametrize(("slave_read_enable", "expected"), [(True, 1), (False, 0)])
def test_a_master_sends_a_consumer_reading_cold_messages_to_the_slave(tmp_path: Path, slave_read_enable: bool,
                                                                      expected: int) -> None:
    with LocalCluster(tmp_path / "master", slave_read_enable=slave_read_enable,
                      store_overrides={"access_message_in_memory_max_ratio": 0}) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        run(send(cluster.namesrv_addr, 3))
        cluster.wait_dispatched()
        code, suggest = suggested_broker(cluster.broker_addr, 0, 0)
        assert code == ResponseCode.SUCCESS
        assert suggest == expected
