"""RouteTable's registration of a master's topics, made cheaper (fields compared before a QueueData is made,
equal queue data shared): the routes it answers are those of the plain rule -- each registration with a new
data version sets every registered topic's queue data for that broker, and leaves other topics alone."""

from __future__ import annotations

import random

from rocketstore.namesrv.route_table import RouteTable
from rocketstore.remoting.bodies import DataVersion, QueueData, RegisterBrokerBody, TopicConfig

T0 = 1_700_000_000_000
BROKERS = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}


def test_registrations_answer_the_routes_of_the_plain_rule() -> None:
    rng = random.Random(16)
    table = RouteTable()
    expected: dict[str, dict[str, QueueData]] = {}
    versions = dict.fromkeys(BROKERS, 0)
    registered: set[str] = set()
    topics = [f"T{i}" for i in range(40)]
    for step in range(300):
        name = rng.choice(list(BROKERS))
        configs = {}
        for topic in rng.sample(topics, rng.randint(1, len(topics))):
            # one field at a time differs from the common configuration, so each comparison is exercised
            fields = [8, 8, 6, 0]
            if rng.random() < 0.5:
                fields[rng.randrange(4)] = rng.choice([1, 2, 4, 7])
            configs[topic] = TopicConfig(topic, fields[0], fields[1], fields[2], topic_sys_flag=fields[3])
        new_version = rng.random() < 0.7
        if new_version:
            versions[name] += 1
        if new_version or name not in registered:  # (a broker's first registration always counts)
            registered.add(name)
            for topic, tc in configs.items():
                expected.setdefault(topic, {})[name] = QueueData(
                    name, tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_sys_flag)
        table.register_broker("DefaultCluster", BROKERS[name], name, 0, "",
                              RegisterBrokerBody(configs, DataVersion(T0, versions[name])), T0 + step)
        assert table.topics() == sorted(expected)
        for topic, queues in expected.items():
            route = table.route(topic)
            assert route is not None
            assert list(route.queue_datas) == [queues[n] for n in sorted(queues)], (step, topic)


def test_a_write_wipe_after_shared_queue_data_changes_only_that_broker() -> None:
    """Topics registered with equal queue data share one frozen QueueData; wiping one broker's write
    permission replaces its entries and leaves the other broker's alone."""
    table = RouteTable()
    for name, addr in BROKERS.items():
        table.register_broker("DefaultCluster", addr, name, 0, "", RegisterBrokerBody(
            {t: TopicConfig(t, 4, 4, 6) for t in ("A", "B", "C")}, DataVersion(T0, 1)), T0)
    assert table.wipe_write_perm("broker-a") == 3
    for topic in ("A", "B", "C"):
        route = table.route(topic)
        assert route is not None
        assert [(q.broker_name, q.perm) for q in route.queue_datas] == [("broker-a", 4), ("broker-b", 6)]
