"""unit_name, create_topic_key and default_topic_queue_nums on every producer (hunt 26, fixlite): 4.9.3's
ClientConfig.unitName goes into the client id (buildMQClientId: ``ip@instance@unit``, a blank one left out),
and DefaultMQProducer's createTopicKey / defaultTopicQueueNums (TBW102 / 4) go into every SEND_MESSAGE
request (defaultTopic, defaultTopicQueueNums) and name the route an unknown topic's sends take.
"""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.client import Producer, RequestProducer, TransactionProducer
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.client.served_producer import ServedProducer
from rocketstore.remoting.bodies import BrokerData, QueueData, TopicRouteData

NAMESRV = "127.0.0.1:9"


def _handler(*_: object) -> None:
    return None


def test_every_producer_takes_the_options_and_its_client_id_ends_with_the_unit_name() -> None:
    options = {"unit_name": "u1", "create_topic_key": "FixKey", "default_topic_queue_nums": 2,
               "instance_name": "inst", "client_ip": "10.0.0.1"}
    producers = [Producer(NAMESRV, "g", **options), RequestProducer(NAMESRV, "g", **options),
                 ServedProducer(NAMESRV, "g", _handler, **options)]
    tx = TransactionProducer(NAMESRV, "g", lambda m: None, **options)
    # as 4.9.3's buildMQClientId (captured: "192.0.2.2@8097#22915780808990@u1")
    assert tx.client_id == "10.0.0.1@inst@u1"
    for p in [*producers, tx._sender]:
        assert p.client_id == "10.0.0.1@inst@u1"
        assert (p.routes.create_topic_key, p.routes.default_topic_queue_nums) == ("FixKey", 2)
        ext = p._ext_fields_v2("T", 0, "", False, 0)
        assert (ext["c"], ext["d"]) == ("FixKey", "2")
        header = p._header("T", 0, "", False, 0)
        assert (header.default_topic, header.default_topic_queue_nums) == ("FixKey", 2)
        assert header.to_ext_fields_v2()["c"] == "FixKey"


def test_the_defaults_are_java_s() -> None:
    p = Producer(NAMESRV, "g", instance_name="inst", client_ip="10.0.0.1", unit_name="  ")
    assert p.client_id == "10.0.0.1@inst"  # a blank unit name is left out (UtilAll.isBlank)
    ext = p._ext_fields_v2("T", 0, "", False, 0)
    assert (ext["c"], ext["d"]) == ("TBW102", "4")
    assert (p.routes.create_topic_key, p.routes.default_topic_queue_nums) == ("TBW102", 4)


@pytest.mark.parametrize(("option", "value"), [("create_topic_key", ""), ("default_topic_queue_nums", 0)])
def test_options_that_name_nothing_are_refused(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        Producer(NAMESRV, "g", **{option: value})  # type: ignore[arg-type]


def test_an_unknown_topic_takes_the_route_of_the_create_topic_key_capped_to_its_queue_nums() -> None:
    template = TopicRouteData((QueueData("broker-a", 8, 8, 7, 0),),
                              (BrokerData("c", "broker-a", {0: "127.0.0.1:10911"}),))
    asked: list[str] = []

    async def go() -> None:
        p = Producer(NAMESRV, "g", create_topic_key="FixKey", default_topic_queue_nums=2)
        routes: RouteCache = p.routes

        async def fetch(topic: str) -> TopicRouteData | None:
            asked.append(topic)
            return template if topic == "FixKey" else None

        routes.fetch = fetch  # type: ignore[method-assign]
        route, known = await routes.publish_route("NewTopic")
        assert not known
        assert RouteCache.publish_queues("NewTopic", route) == [
            MessageQueue("NewTopic", "broker-a", 0), MessageQueue("NewTopic", "broker-a", 1)]

    asyncio.run(go())
    assert asked == ["NewTopic", "FixKey"]
