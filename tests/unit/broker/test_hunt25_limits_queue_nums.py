"""A topic's queue counts are capped at MAX_QUEUE_NUMS wherever they come in.

4.9.3 takes any int: a topic of writeQueueNums 2^31-1 created by UPDATE_AND_CREATE_TOPIC was answered
SUCCESS (code 0) by the Java broker, and a later QUERY_CONSUME_TIME_SPAN looped over every queue until
memory ran out (ours grew to 19.6 GB; 4.9.3 ran out of heap); a client reading such a route makes one queue
object per queue.  Here: the broker config, topics.json, a master's topic configs, a retry topic, a broker's
registration on the name server and a client's route, each proven by the counts it answers (nothing
allocates 2^31).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.broker.config import BrokerConfig, load_broker_conf
from rocketstore.broker.topics import TopicTable
from rocketstore.client.queue_choice import _new_targets
from rocketstore.client.route import RouteCache
from rocketstore.errors import StoreConfigError
from rocketstore.namesrv.route_table import RouteTable
from rocketstore.remoting.bodies import (
    BrokerData,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicRouteData,
)
from rocketstore.remoting.headers import MAX_QUEUE_NUMS, queue_nums_problem

HUGE = 2**31 - 1  # Integer.MAX_VALUE, what 4.9.3 took
#: where a count is turned into objects, a count just past the cap proves it (2^31 would take GBs unfixed)
OVER = MAX_QUEUE_NUMS + 100


def test_the_cap_and_its_remark() -> None:
    assert MAX_QUEUE_NUMS == 16_384
    assert queue_nums_problem(MAX_QUEUE_NUMS, MAX_QUEUE_NUMS) is None
    assert queue_nums_problem(8, 8) is None
    assert queue_nums_problem(-1, 0) is None  # as 4.9.3 takes them: a loop over them runs no time
    assert queue_nums_problem(4, HUGE) == \
        "The specified writeQueueNums [2147483647] is too large, allowing at most 16384 queues."
    assert queue_nums_problem(MAX_QUEUE_NUMS + 1, 4) == \
        "The specified readQueueNums [16385] is too large, allowing at most 16384 queues."


def test_default_topic_queue_nums_above_the_cap_is_refused(tmp_path: Path) -> None:
    assert BrokerConfig(default_topic_queue_nums=MAX_QUEUE_NUMS).default_topic_queue_nums == MAX_QUEUE_NUMS
    with pytest.raises(StoreConfigError, match="defaultTopicQueueNums 2147483647 is too large"):
        BrokerConfig(default_topic_queue_nums=HUGE)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\ndefaultTopicQueueNums={HUGE}\n")
    with pytest.raises(StoreConfigError, match="at most 16384"):
        load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
    # and UPDATE_BROKER_CONFIG, which goes through replace: the change is refused, nothing changed
    with pytest.raises(StoreConfigError):
        BrokerConfig().replace(default_topic_queue_nums=HUGE)


def test_a_hand_edited_topics_json_is_clamped_with_a_warning(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "topics.json").write_text(json.dumps({
        "dataVersion": {"counter": 3, "timestamp": 1},
        "topicConfigTable": {
            "Big": {"topicName": "Big", "readQueueNums": HUGE, "writeQueueNums": HUGE, "perm": 6},
            "Fine": {"topicName": "Fine", "readQueueNums": 4, "writeQueueNums": MAX_QUEUE_NUMS, "perm": 6}}}))
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    table.load()
    big = table.get("Big")
    assert big is not None and (big.read_queue_nums, big.write_queue_nums, big.perm) == \
        (MAX_QUEUE_NUMS, MAX_QUEUE_NUMS, 6)
    fine = table.get("Fine")
    assert fine is not None and (fine.read_queue_nums, fine.write_queue_nums) == (4, MAX_QUEUE_NUMS)
    assert "topic Big in topics.json has readQueueNums 2147483647" in caplog.text
    # written back clamped, so the next start reads the cap (and warns no more)
    written = json.loads((tmp_path / "topics.json").read_text())["topicConfigTable"]["Big"]
    assert (written["readQueueNums"], written["writeQueueNums"]) == (MAX_QUEUE_NUMS, MAX_QUEUE_NUMS)


def test_a_masters_topic_configs_and_a_retry_topic_are_clamped(tmp_path: Path) -> None:
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    assert table.replace_all({"dataVersion": {"counter": 9, "timestamp": 2}, "topicConfigTable": {
        "Big": {"topicName": "Big", "readQueueNums": 2, "writeQueueNums": HUGE, "perm": 6}}})
    big = table.get("Big")
    assert big is not None and (big.read_queue_nums, big.write_queue_nums) == (2, MAX_QUEUE_NUMS)
    retry = table.create_retry_or_dlq("%RETRY%g", HUGE)  # a subscription group's retryQueueNums
    assert (retry.read_queue_nums, retry.write_queue_nums) == (MAX_QUEUE_NUMS, MAX_QUEUE_NUMS)


def test_the_name_server_routes_at_most_the_cap() -> None:
    """A 4.9.3 broker registers whatever its topics.json holds."""
    table = RouteTable()
    body = RegisterBrokerBody({"Big": TopicConfig("Big", HUGE, HUGE, 6),
                               "Small": TopicConfig("Small", 4, 4, 6)}, DataVersion(1, 1))
    table.register_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0, "", body, 1_000, None)
    big = table.route("Big")
    small = table.route("Small")
    assert big is not None and small is not None
    assert [(q.read_queue_nums, q.write_queue_nums) for q in big.queue_datas] == \
        [(MAX_QUEUE_NUMS, MAX_QUEUE_NUMS)]
    assert [(q.read_queue_nums, q.write_queue_nums) for q in small.queue_datas] == [(4, 4)]


def test_a_client_makes_at_most_the_cap_of_queues_from_a_route() -> None:
    """A route from a 4.9.3 name server may hold any count (2^31-1 too)."""
    route = TopicRouteData(queue_datas=(QueueData("broker-a", OVER, OVER, 6),),
                           broker_datas=(BrokerData("C", "broker-a", {0: "a:1"}),))
    assert len(RouteCache.publish_queues("Big", route)) == MAX_QUEUE_NUMS
    assert len(RouteCache.subscribe_queues("Big", route)) == MAX_QUEUE_NUMS


def test_a_producers_send_targets_hold_at_most_the_cap_of_queue_ids() -> None:
    """The queue ids a send to a chosen queue may name (max of the write and read counts), as a route."""
    route = TopicRouteData(queue_datas=(QueueData("broker-a", OVER, 4, 6),),
                           broker_datas=(BrokerData("C", "broker-a", {0: "a:1"}),))
    assert len(_new_targets("Big", route).by_queue_id) == MAX_QUEUE_NUMS


def test_an_order_config_makes_at_most_the_cap_of_queues() -> None:
    """An order config (the name servers' ORDER_TOPIC_CONFIG KV value, any count) is a route's queue count too
    (found in the session's review: 'broker-a:100000' made 100,000 publish queues)."""
    route = TopicRouteData(order_topic_conf=f"broker-a:{OVER};broker-b:2",
                           queue_datas=(QueueData("broker-a", 4, 4, 6),),
                           broker_datas=(BrokerData("C", "broker-a", {0: "a:1"}),))
    queues = RouteCache.publish_queues("Big", route)
    assert len(queues) == MAX_QUEUE_NUMS + 2 and queues[-1].broker_name == "broker-b"
