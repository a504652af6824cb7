"""RouteTable: RocketMQ's RouteInfoManager rules, driven with explicit clocks (no sleeping)."""

from __future__ import annotations

import json

import pytest

from rocketstore.namesrv.route_table import BROKER_EXPIRY_MS, RouteTable
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicRouteData
from rocketstore.remoting.fastjson import loads

T0 = 1_700_000_000_000
MASTER = "10.0.0.1:10911"
SLAVE = "10.0.0.2:10911"


def body(*configs: TopicConfig, version: int = 1) -> RegisterBrokerBody:
    return RegisterBrokerBody({c.topic_name: c for c in configs}, DataVersion(T0, version))


def register(table: RouteTable, *configs: TopicConfig, addr: str = MASTER, broker_id: int = 0, name: str = "broker-a",
             cluster: str = "DefaultCluster", now: int = T0, version: int = 1, connection: object = None):  # type: ignore[no-untyped-def]
    return table.register_broker(cluster, addr, name, broker_id, addr.replace(":10911", ":10912"),
                                 body(*configs, version=version), now, connection)


def test_master_registration_makes_a_route_with_its_queues_and_address() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", 4, 4, 6), TopicConfig("TBW102", 8, 8, 7))
    route = table.route("TopicA")
    assert route is not None
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 4, 6)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: MASTER})]
    assert table.topics() == ["TBW102", "TopicA"]


def test_route_json_has_fastjson_bare_integer_broker_ids_and_sorted_keys() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", 2, 3, 6))
    text = table.route("TopicA").encode().decode()  # type: ignore[union-attr]
    assert '"brokerAddrs":{0:"10.0.0.1:10911"}' in text
    assert text.index('"brokerDatas"') < text.index('"filterServerTable"') < text.index('"queueDatas"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # what a strict parser makes of fastjson output; our reader copes:
    decoded = TopicRouteData.decode(text.encode())
    assert decoded.broker_datas[0].broker_addrs == {0: MASTER}
    assert decoded.queue_datas[0].write_queue_nums == 3 and decoded.queue_datas[0].read_queue_nums == 2


def test_unknown_topic_has_no_route() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"))
    assert table.route("Nope") is None


def test_slave_adds_its_address_but_no_queue_data_and_learns_its_master() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", 4, 4))
    result = register(table, TopicConfig("TopicA", 99, 99), TopicConfig("SlaveOnly"), addr=SLAVE, broker_id=1)
    assert result.master_addr == MASTER and result.ha_server_addr == "10.0.0.1:10912"
    route = table.route("TopicA")
    assert route is not None and route.queue_datas[0].read_queue_nums == 4
    assert route.broker_datas[0].broker_addrs == {0: MASTER, 1: SLAVE}
    assert table.route("SlaveOnly") is None


def test_a_slave_without_a_live_master_gets_no_master_address() -> None:
    table = RouteTable()
    result = register(table, TopicConfig("TopicA"), addr=SLAVE, broker_id=1)
    assert result.master_addr is None and result.ha_server_addr is None


def test_broker_expires_after_120_s_without_registration_and_takes_its_topics() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"), now=T0)
    assert table.expire(T0 + BROKER_EXPIRY_MS) == []  # exactly 120 s: still alive
    assert table.route("TopicA") is not None
    assert table.expire(T0 + BROKER_EXPIRY_MS + 1) == [MASTER]
    assert table.route("TopicA") is None
    assert table.topics() == [] and table.clusters == {} and table.brokers == {}


def test_re_registration_keeps_a_broker_alive() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"), now=T0)
    register(table, TopicConfig("TopicA"), now=T0 + 100_000)
    assert table.expire(T0 + 200_000) == []
    assert table.route("TopicA") is not None


def test_expired_slave_leaves_the_masters_route_in_place() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"), now=T0 + 50_000)
    register(table, TopicConfig("TopicA"), addr=SLAVE, broker_id=1, now=T0)
    assert table.expire(T0 + BROKER_EXPIRY_MS + 1) == [SLAVE]
    route = table.route("TopicA")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: MASTER}


def test_topics_missing_from_a_registration_are_kept() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"), TopicConfig("TopicB"), version=1)
    register(table, TopicConfig("TopicA"), version=2)
    assert table.route("TopicB") is not None


def test_queue_data_is_only_replaced_when_the_data_version_changes() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", 4, 4), version=1)
    register(table, TopicConfig("TopicA", 8, 8), version=1)
    assert table.route("TopicA").queue_datas[0].write_queue_nums == 4  # type: ignore[union-attr]
    register(table, TopicConfig("TopicA", 8, 8), version=2)
    assert table.route("TopicA").queue_datas[0].write_queue_nums == 8  # type: ignore[union-attr]


def test_unregistering_the_last_address_removes_broker_cluster_and_topics() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"))
    register(table, TopicConfig("TopicB"), name="broker-b", addr="10.0.0.3:10911")
    table.unregister_broker("DefaultCluster", MASTER, "broker-a", 0)
    assert table.route("TopicA") is None
    assert table.route("TopicB") is not None
    assert table.clusters == {"DefaultCluster": {"broker-b"}}


def test_closing_a_brokers_connection_removes_it() -> None:
    table = RouteTable()
    conn = object()
    register(table, TopicConfig("TopicA"), connection=conn)
    assert table.connection_closed(object()) == []
    assert table.connection_closed(conn) == [MASTER]
    assert table.route("TopicA") is None


def test_two_brokers_serve_one_topic_sorted_by_name() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", 2, 2), name="broker-b", addr="10.0.0.3:10911")
    register(table, TopicConfig("TopicA", 4, 4))
    route = table.route("TopicA")
    assert route is not None
    assert [q.broker_name for q in route.queue_datas] == ["broker-a", "broker-b"]
    assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]


def test_cluster_info_lists_brokers_and_clusters() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"))
    register(table, TopicConfig("TopicA"), addr=SLAVE, broker_id=1)
    info = loads(table.cluster_info_body())
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: MASTER, 1: SLAVE}
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}


def test_wipe_and_add_write_permission() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA", perm=6), TopicConfig("TopicB", perm=6))
    assert table.wipe_write_perm("broker-a") == 2
    assert {q.perm for t in ("TopicA", "TopicB") for q in table.route(t).queue_datas} == {4}  # type: ignore[union-attr]
    assert table.add_write_perm("broker-a") == 2
    assert table.route("TopicA").queue_datas[0].perm == 6  # type: ignore[union-attr]
    assert table.wipe_write_perm("nobody") == 0


def test_topics_of_a_cluster_and_deleting_a_topic() -> None:
    table = RouteTable()
    register(table, TopicConfig("TopicA"), TopicConfig("TopicB"))
    register(table, TopicConfig("TopicC"), name="broker-x", cluster="Other", addr="10.0.0.9:10911")
    assert table.topics_of_cluster("DefaultCluster") == ["TopicA", "TopicB"]
    table.delete_topic("TopicA")
    assert table.topics() == ["TopicB", "TopicC"]


def test_register_body_round_trips_plain_and_compressed() -> None:
    original = RegisterBrokerBody({"TopicA": TopicConfig("TopicA", 3, 5, 6, "MULTI_TAG")}, DataVersion(T0, 7),
                                  ("10.0.0.5:9999",))
    plain = RegisterBrokerBody.decode(original.encode())
    assert plain == original
    packed = RegisterBrokerBody.decode(original.encode_compressed(), compressed=True)
    assert packed.data_version == original.data_version
    assert packed.topic_configs["TopicA"] == TopicConfig("TopicA", 3, 5, 6, "MULTI_TAG")
    assert packed.filter_server_list == ("10.0.0.5:9999",)


def test_old_brokers_send_the_bare_wrapper() -> None:
    wrapper = {"dataVersion": {"counter": 2, "timestamp": T0},
               "topicConfigTable": {"TopicA": {"topicName": "TopicA", "readQueueNums": 1, "writeQueueNums": 1,
                                               "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSynFlag": 0}}}
    decoded = RegisterBrokerBody.decode(json.dumps(wrapper).encode(), version=30)
    assert decoded.topic_configs["TopicA"].write_queue_nums == 1
    assert decoded.data_version == DataVersion(T0, 2)


def test_unit_topic_lists_select_by_the_first_registered_brokers_sys_flag() -> None:
    table = RouteTable()
    register(table, TopicConfig("Plain", 1, 1, 6), TopicConfig("Unit", 1, 1, 6, "SINGLE_TAG", 0x1),
             TopicConfig("UnitSub", 1, 1, 6, "SINGLE_TAG", 0x2), TopicConfig("Both", 1, 1, 6, "SINGLE_TAG", 0x3))
    # a second broker's flags for the same topics do not count (4.9.3 reads queueDatas.get(0))
    register(table, TopicConfig("Plain", 1, 1, 6, "SINGLE_TAG", 0x3), addr="10.0.0.3:10911", name="broker-b")
    assert table.unit_topics(unit=True) == ["Both", "Unit"]
    assert table.unit_topics(unit_sub=True) == ["Both", "UnitSub"]
    assert table.unit_topics(unit=False, unit_sub=True) == ["UnitSub"]
