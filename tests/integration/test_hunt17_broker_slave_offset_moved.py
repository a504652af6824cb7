"""A slave's answer to a pull whose offset a master would correct (PULL_OFFSET_MOVED).

4.9.3's PullMessageProcessor: a slave (offsetCheckInSlave false) makes no correction, answers
PULL_RETRY_IMMEDIATELY and suggests the subscription group's brokerId, whatever slaveReadEnable says (the
suggestion set before, MASTER_ID without slaveReadEnable, is overwritten in that branch).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, pull_suggestion
from test_replication import STORE, TOPIC, start_slave, stop

from rocketstore.client.admin import AdminClient
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run

GROUP = "pinned-group"


def pull(addr: str, offset: int) -> tuple[int, int]:
    """(response code, suggestWhichBrokerId) of one pull of queue 0 from *offset*."""
    return pull_suggestion(addr, GROUP, TOPIC, 0, offset)


@pytest.mark.parametrize("slave_read_enable", [False, True])
def test_a_slave_sends_an_offset_moved_consumer_to_the_groups_broker(tmp_path: Path,
                                                                     slave_read_enable: bool) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE,
                      slave_read_enable=slave_read_enable) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def pin() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_subscription_group(GROUP, broker_addr=cluster.broker_addr, broker_id=1)

        run(pin())
        slave = start_slave(cluster, tmp_path / "slave", slave_read_enable=slave_read_enable)
        try:
            assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
            assert cluster.call(lambda: slave.groups.get(GROUP).broker_id) == 1
            # an empty queue asked from offset 5: a master corrects it (PULL_OFFSET_MOVED), a slave does not
            code, suggest = pull(slave.address, 5)
            assert code == ResponseCode.PULL_RETRY_IMMEDIATELY
            assert suggest == 1
            code, suggest = pull(cluster.broker_addr, 5)
            assert code == ResponseCode.PULL_OFFSET_MOVED
            assert suggest == (1 if slave_read_enable else 0)
        finally:
            stop(cluster, slave)
