"""An ordered topic whose order config (the name server's ORDER_TOPIC_CONFIG, carried in the route when
orderMessageEnable is on) names a broker that has no master in the route (down, or gone from the cluster):
4.9.3's producer keeps that broker's queues among the publish queues (topicRouteData2TopicPublishInfo), a
plain send that picks one fails there ("The broker[..] not exist") and is retried on another broker, and an
orderly send whose key maps to a live broker's queue goes through.  Every send to the topic used to fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within

from rocketstore.client import MessageQueue, Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import QueueNotInRouteError


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_sends_go_to_the_live_broker_of_an_order_config_naming_a_broker_without_master(
        cluster: LocalCluster) -> None:
    topic = "OrderConfBrokerDown"
    handlers = cluster.namesrv.handlers
    handlers.config = handlers.config.updated({"orderMessageEnable": "true"})

    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=2,
                                     write_queue_nums=2)
            # broker-b held the topic too (mqadmin updateTopic -o -c wrote both) and is down now
            await admin.put_kv("ORDER_TOPIC_CONFIG", topic, "broker-a:2;broker-b:2")
            assert (await admin.route(topic)).order_topic_conf == "broker-a:2;broker-b:2"
        async with Producer(cluster.namesrv_addr, "order-conf-down-producer") as producer:
            assert [(q.broker_name, q.queue_id) for q in await producer.fetch_publish_message_queues(topic)] \
                == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
            # plain sends: round robin over all four queues, a broker-b pick retried on broker-a
            for i in range(6):
                result = await producer.send(topic, f"plain-{i}".encode())
                assert result.message_queue.broker_name == "broker-a"
            # orderly: the key keeps its queue among the four, as 4.9.3's hash selector picks it
            for key in (0, 1):
                result = await producer.send_orderly(topic, b"keyed", key)
                assert result.message_queue == MessageQueue(topic, "broker-a", key)
            for key in (2, 3):
                with pytest.raises(QueueNotInRouteError, match=r"The broker\[broker-b\] not exist"):
                    await producer.send_orderly(topic, b"keyed", key)
            with pytest.raises(QueueNotInRouteError, match=r"The broker\[broker-b\] not exist"):
                await producer.send(topic, b"chosen", message_queue=MessageQueue(topic, "broker-b", 1))

    run_within(go, 60)
