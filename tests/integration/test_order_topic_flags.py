"""A broker takes which topics are ordered from the name servers' ORDER_TOPIC_CONFIG table, answered to its
registration (4.9.3's doRegisterBrokerAll -> TopicConfigManager.updateOrderTopicConfig): exactly the topics
the table names are ``order``, as ``mqadmin updateOrderConf`` / ``deleteKvConfig`` leave them."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def order_flag(cluster: LocalCluster, topic: str) -> bool | None:
    tc = cluster.broker.topics.get(topic)
    return None if tc is None else tc.order


def test_the_name_servers_order_table_decides_the_brokers_order_flags(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Orders", queues=4)
        cluster.create_topic("Plain", queues=4)
        assert cluster.call(lambda: (order_flag(cluster, "Orders"), order_flag(cluster, "Plain"))) == (False, False)
        version = cluster.call(lambda: cluster.broker.topics.data_version)

        async def kv(put: bool) -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                if put:
                    await admin.put_kv(ORDER_TOPIC_CONFIG, "Orders", f"{cluster.broker_name}:4")
                else:
                    await admin.delete_kv(ORDER_TOPIC_CONFIG, "Orders")

        def register() -> None:
            assert cluster.broker.registrar is not None
            cluster.run(cluster.broker.registrar.register_all())

        run(kv(True))
        register()
        assert cluster.call(lambda: (order_flag(cluster, "Orders"), order_flag(cluster, "Plain"))) == (True, False)
        assert cluster.call(lambda: cluster.broker.topics.data_version) != version  # the change is announced
        run(kv(False))  # the last entry: the name server answers an empty table, and no topic is ordered
        register()
        assert cluster.call(lambda: order_flag(cluster, "Orders")) is False
