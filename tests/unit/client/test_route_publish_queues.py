"""Which queues a producer sends to: the route's writable queues of brokers with a master, or the queues
its order config names (4.9.3's topicRouteData2TopicPublishInfo)."""

from __future__ import annotations

from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.remoting.bodies import BrokerData, QueueData, TopicRouteData

RW, READ_ONLY = 6, 4


def _route(order_topic_conf: str | None = None) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=(QueueData("broker-b", 4, 4, RW), QueueData("broker-a", 4, 4, RW), QueueData("broker-c", 2, 2, READ_ONLY),
                     QueueData("broker-d", 2, 2, RW)),
        broker_datas=(BrokerData("C", "broker-a", {0: "a:1"}), BrokerData("C", "broker-b", {0: "b:1"}),
                      BrokerData("C", "broker-c", {0: "c:1"}), BrokerData("C", "broker-d", {1: "d-slave:1"})),
        order_topic_conf=order_topic_conf)


def _names(queues: list[MessageQueue]) -> list[tuple[str, int]]:
    return [(q.broker_name, q.queue_id) for q in queues]


def test_without_order_config_every_writable_queue_of_a_broker_with_a_master_in_name_order() -> None:
    assert _names(RouteCache.publish_queues("T", _route())) == \
        [("broker-a", i) for i in range(4)] + [("broker-b", i) for i in range(4)]


def test_an_order_config_names_the_queues_in_its_own_order() -> None:
    queues = RouteCache.publish_queues("T", _route("broker-b:2;broker-a:3"))
    assert _names(queues) == [("broker-b", 0), ("broker-b", 1), ("broker-a", 0), ("broker-a", 1), ("broker-a", 2)]
    assert {q.topic for q in queues} == {"T"}


def test_a_malformed_order_config_leaves_the_queue_data_to_decide() -> None:
    for conf in ("broker-a", "broker-a:x", ":3", "broker-a:2;", ""):
        assert _names(RouteCache.publish_queues("T", _route(conf))) == _names(RouteCache.publish_queues("T", _route()))
