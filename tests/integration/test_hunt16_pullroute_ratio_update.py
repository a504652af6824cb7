"""UPDATE_BROKER_CONFIG's accessMessageInMemoryMaxRatio and maxTransfer*OnMessageIn* act from the next pull
on, as 4.9.3's getMessage reads them from its config at every call: an operator lowering the ratio sends
consumers reading cold messages to the slave (suggestWhichBrokerId whichBrokerWhenConsumeSlowly, with
slaveReadEnable) at once, and a new group's QUERY_CONSUMER_OFFSET no longer answers 0 for a queue whose
first message now counts as on disk.  Before, the store kept the values it was opened with until the
broker restarted."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster
from test_hunt13_ha_slave_read import TOPIC, send, suggested_broker

from rocketstore.client import PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def test_the_in_memory_ratio_and_transfer_limits_act_at_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", slave_read_enable=True) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        run(send(cluster.namesrv_addr, 3))
        cluster.wait_dispatched()

        async def new_group_offset_and_batch() -> tuple[int, int]:
            async with PullConsumer(cluster.namesrv_addr, "a-new-group") as consumer:
                (mq,) = await consumer.queues(TOPIC)
                return (await consumer.committed_offset(mq, default=-1),
                        len((await consumer.pull(mq, 0, 32)).messages))

        # a few bytes of commitlog: everything is "in memory" at the default 40 %
        assert suggested_broker(cluster.broker_addr, 0, 0) == (ResponseCode.SUCCESS, 0)
        assert run(new_group_offset_and_batch()) == (0, 3)

        async def update() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_broker_config({"accessMessageInMemoryMaxRatio": "0",
                                                  "maxTransferCountOnMessageInDisk": "2"},
                                                 broker_addr=cluster.broker_addr)

        run(update())
        # 0 %: every message is beyond the in-memory share now
        assert suggested_broker(cluster.broker_addr, 0, 0) == (ResponseCode.SUCCESS, 1)
        assert run(new_group_offset_and_batch()) == (-1, 2)
