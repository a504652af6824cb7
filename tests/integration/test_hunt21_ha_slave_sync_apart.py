"""A slave's sync of its master's tables takes each table apart, as 4.9.3's SlaveSynchronize does (each of
syncTopicConfig, syncConsumerOffset, syncDelayOffset and syncSubscriptionGroupConfig catches its own
failure).  When the master answered the topic table badly or not within the timeout (a large table), the
round stopped there: the slave never took the consumer offsets or the subscription groups, and consumers
that read from it once the master was down started from stale offsets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, TOPIC, start_slave, stop

from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import run

GROUP = "synced-apart-group"


@pytest.mark.parametrize("topic_answer", ["error", "none"])
def test_a_failed_topic_sync_does_not_keep_offsets_and_groups_from_the_slave(tmp_path: Path,
                                                                             topic_answer: str) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        master = cluster.broker

        async def configure() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_subscription_group(GROUP, broker_addr=cluster.broker_addr)

        run(configure())
        cluster.call(lambda: master.offsets.commit(GROUP, TOPIC, 0, 7))
        never = asyncio.Event()

        async def topics(conn: object, request: RemotingCommand) -> RemotingCommand:
            if topic_answer == "none":
                await never.wait()  # the slave's request times out
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="topic table unavailable")

        original = master.router.handlers[RequestCode.GET_ALL_TOPIC_CONFIG]
        master.router.handlers[RequestCode.GET_ALL_TOPIC_CONFIG] = topics
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            sync = slave.slave_sync
            assert sync is not None
            sync.timeout_s = 0.5
            cluster.wait_until(lambda: slave.registrar is not None and slave.registrar.master_addr, 20,
                               "the slave to know its master")
            with pytest.raises(Exception):  # noqa: B017,PT011 (the round says it failed: ValueError or timeout)
                cluster.run(sync.sync_once())
            assert cluster.call(lambda: slave.offsets.query(GROUP, TOPIC, 0)) == 7
            assert cluster.call(lambda: slave.groups.get(GROUP)) is not None
        finally:
            master.router.handlers[RequestCode.GET_ALL_TOPIC_CONFIG] = original
            cluster.call(never.set)
            stop(cluster, slave)
