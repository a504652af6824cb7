"""A lite pull consumer's fetch_message_queues on a topic whose queues are all write-only (perm 2, as mqadmin
updateTopicPerm -p 2 leaves it): 4.9.3's fetchSubscribeMessageQueues throws "Can not find Message Queue for
this topic" rather than handing an assign-mode caller an empty list to poll."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import LitePullConsumer, MessageQueue
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.bodies import Perm


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_fetch_message_queues_of_a_write_only_topic_raises_and_lists_them_again_once_readable(
        cluster: LocalCluster) -> None:
    topic, group = "PermWriteOnly", "perm-write-only-group"

    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin, \
                LitePullConsumer(cluster.namesrv_addr, group) as consumer:
            await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=2,
                                     write_queue_nums=2, perm=Perm.WRITE)

            async def routed_write_only() -> bool:
                try:
                    return [qd.perm for qd in (await admin.route(topic)).queue_datas] == [Perm.WRITE]
                except NoRouteError:
                    return False

            await eventually(routed_write_only, 10, "the write-only route")
            with pytest.raises(NoRouteError, match=f"Can not find Message Queue for this topic, {topic}"):
                await consumer.fetch_message_queues(topic)
            with pytest.raises(NoRouteError, match="Can not find Message Queue for this topic, NoSuchTopic"):
                await consumer.fetch_message_queues("NoSuchTopic")
            await admin.update_topic_perm(topic, Perm.READ | Perm.WRITE, broker_addr=cluster.broker_addr)
            expected = [MessageQueue(topic, "broker-a", q) for q in range(2)]

            async def readable_again() -> bool:
                try:
                    return await consumer.fetch_message_queues(topic) == expected
                except NoRouteError:
                    return False

            await eventually(readable_again, 10, "the queues once readable again")

    run_within(go, 60)
