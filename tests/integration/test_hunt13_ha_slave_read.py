"""slaveReadEnable as a master answers it: a pull that reads beyond the in-memory share of the commitlog
(accessMessageInMemoryMaxRatio, here 0 % so that every pull does) suggests the group's
whichBrokerWhenConsumeSlowly (a slave, brokerId 1 by default), as 4.9.3's PullMessageProcessor does;
the C++ and Java clients pull from the suggested broker next.  Without slaveReadEnable a master always
suggests itself (brokerId 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketstore.remoting.transport import connect, run

TOPIC = "SlaveReadTopic"
GROUP = "slow-group"


async def send(namesrv: str, count: int) -> None:
    async with Producer(namesrv, "slave-read-producer") as producer:
        for i in range(count):
            assert (await producer.send(TOPIC, f"m{i}".encode())).status == "SEND_OK"


def suggested_broker(broker_addr: str, queue_id: int, offset: int) -> tuple[int, int]:
    """(response code, suggestWhichBrokerId) of one pull of *queue_id* from *offset*."""
    async def pull() -> tuple[int, int]:
        conn = await connect(broker_addr)
        try:
            header = PullMessageRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=queue_id, queue_offset=offset,
                                              max_msg_nums=1, sys_flag=0x4, commit_offset=0, suspend_timeout_ms=0,
                                              subscription="*", sub_version=0, expression_type="TAG")
            answer = await conn.request(RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()), 5)
            return answer.code, PullMessageResponseHeader.from_ext_fields(answer.ext_fields).suggest_which_broker_id
        finally:
            conn.close()

    return run(pull())


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
