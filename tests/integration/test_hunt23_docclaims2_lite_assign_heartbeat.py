"""A lite pull consumer assigned its queues after start (the docstring's "assign before or after start", the
usual Kafka-style order) is listed among its group's connections at once, as the README says ("an assign
consumer heartbeats the brokers of its topics, so they list it among the group's connections").

4.9.3's client instance heartbeats a second after start, by when a start-then-assign consumer's pulls have
found the broker.  Here an assign after start waited for the next periodic heartbeat
(``heartbeat_interval_s``): until then ``consumerConnection``, ``consumerStatus`` and the exporter's
group count said the group was not online.  Real broker and name server on 127.0.0.1; the heartbeat
interval is set far beyond the polling bound, so the test does not depend on timing."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, eventually

from rocketstore.client import LitePullConsumer
from rocketstore.errors import RocketStoreError
from rocketstore.client.admin import AdminClient

TOPIC, GROUP = "Hunt23DocLiteAssign", "hunt23-doc-lite-assign"


def test_a_lite_consumer_assigned_after_start_is_online_at_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)

        async def go() -> list[str]:
            consumer = LitePullConsumer(cluster.namesrv_addr, GROUP, heartbeat_interval_s=600,
                                        rebalance_interval_s=600)
            async with consumer, AdminClient(cluster.namesrv_addr) as admin:
                consumer.assign(await consumer.fetch_message_queues(TOPIC))

                async def online() -> list[str]:
                    try:
                        _, connections = await admin.consumer_connections(GROUP)
                    except RocketStoreError:
                        return []
                    return [c.client_id for c in connections]

                ids = await eventually(online, 20, "the assigned consumer among the group's connections")
                return [*ids, consumer.client_id]

        *ids, client_id = cluster.run(go(), 60)
        assert ids == [client_id]
