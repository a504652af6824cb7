"""Name server routing as a cluster operator meets it: two brokers of one name server on 127.0.0.1 port 0,
their topics, one of them vanishing, and the answers the Java admin parses (4.9.3's RouteInfoManager)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from local_cluster import SMALL_STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.registration import Registrar
from rocketstore.client.admin import AdminClient
from rocketstore.namesrv import NameServer
from rocketstore.namesrv.handlers import ORDER_TOPIC_CONFIG
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run
from rocketstore.store.config import StoreConfig

T = TypeVar("T")


def with_two_brokers(tmp_path: Path, fn: Callable[[NameServer, Broker, Broker, ConnectionPool], Awaitable[T]]) -> T:
    """A name server and brokers broker-a and broker-b of DefaultCluster, all on this test's loop."""
    async def go() -> T:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        brokers = []
        pool = ConnectionPool()
        try:
            for name in ("broker-a", "broker-b"):
                config = BrokerConfig(broker_name=name, namesrv_addr=namesrv.address, listen_port=0,
                                      listen_host="127.0.0.1", broker_ip1="127.0.0.1")
                broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / name), **SMALL_STORE))
                await broker.start()
                brokers.append(broker)
            return await fn(namesrv, brokers[0], brokers[1], pool)
        finally:
            await pool.close()
            for broker in brokers:
                await broker.close()
            await namesrv.close()

    return run(go())


async def poll(fn: Callable[[], T], what: str, timeout_s: float = 10.0) -> T:
    deadline = time.monotonic() + timeout_s
    while not (value := fn()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)
    return value


def test_system_topic_list_names_a_broker_to_ask_for_its_own_system_topics(tmp_path: Path) -> None:
    """GET_SYSTEM_TOPIC_LIST_FROM_NS answers a TopicList with ``brokerAddr`` (4.9.3 getSystemTopicList):
    the Java admin (MQClientAPIImpl.getSystemTopicList) asks that broker for its system topics and adds them;
    without the address it silently leaves them out."""
    async def go(namesrv: NameServer, a: Broker, b: Broker, pool: ConnectionPool) -> None:
        request = RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, {})
        response = await pool.request(namesrv.address, request, 10)
        assert response.code == ResponseCode.SUCCESS
        body = json.loads(response.body)
        assert set(body["topicList"]) == {"DefaultCluster", "broker-a", "broker-b"}
        assert body["brokerAddr"] in (a.address, b.address)
        # and that broker answers the second half of the Java admin's question
        request = RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, {})
        from_broker = await pool.request(body["brokerAddr"], request, 10)
        assert from_broker.code == ResponseCode.SUCCESS
        assert "SCHEDULE_TOPIC_XXXX" in json.loads(from_broker.body)["topicList"]

    with_two_brokers(tmp_path, go)


def test_a_broker_whose_connection_closes_takes_its_topics_and_routes_at_once(tmp_path: Path) -> None:
    """A broker that stops without unregistering (its connection to the name server closes): its queue data
    goes at once (4.9.3 onChannelDestroy), a topic only it held leaves the topic list, a shared topic routes
    to the other broker only."""
    async def go(namesrv: NameServer, a: Broker, b: Broker, pool: ConnectionPool) -> None:
        async with AdminClient(namesrv.address) as admin:
            await admin.create_topic("shared", broker_addr=a.address, read_queue_nums=2, write_queue_nums=2)
            await admin.create_topic("shared", broker_addr=b.address, read_queue_nums=3, write_queue_nums=3)
            await admin.create_topic("only-b", broker_addr=b.address, read_queue_nums=1, write_queue_nums=1)

            def both() -> bool:
                route = namesrv.routes.route("shared")
                return route is not None and len(route.queue_datas) == 2 and namesrv.routes.route("only-b") is not None

            await poll(both, "both brokers' topics routed")
            assert b.registrar is not None
            await b.registrar.close(unregister=False)  # as a kill -9: the connection closes, no UNREGISTER
            await poll(lambda: "only-b" not in namesrv.routes.topics(), "only-b dropped")
            assert "only-b" not in await admin.topic_list()
            route = await admin.route("shared")
            assert [q.broker_name for q in route.queue_datas] == ["broker-a"]
            assert [bd.broker_name for bd in route.broker_datas] == ["broker-a"]
            info = await admin.cluster_info()
            assert info.clusters == {"DefaultCluster": ["broker-a"]}

    with_two_brokers(tmp_path, go)


async def namesrv_and_registrar() -> tuple[NameServer, Registrar, list[dict[str, str]]]:
    """A started name server and a (not yet started) broker-a registrar for it, with the order-topic tables
    its registrations were answered with collected in the returned list."""
    namesrv = NameServer()
    await namesrv.start("127.0.0.1", 0)
    seen: list[dict[str, str]] = []
    registrar = Registrar([namesrv.address], cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          broker_addr="127.0.0.1:10911", ha_server_addr="127.0.0.1:10912",
                          body=lambda: RegisterBrokerBody({}, DataVersion()), period_s=600,
                          on_order_topics=seen.append)
    return namesrv, registrar, seen


def test_registration_hands_the_name_servers_order_topic_table_to_the_broker(tmp_path: Path) -> None:
    """4.9.3's REGISTER_BROKER answer carries the ORDER_TOPIC_CONFIG KV table (what ``mqadmin updateOrderConf``
    writes); the broker's registration hands it on (doRegisterBrokerAll -> updateOrderTopicConfig), and a name
    server without such entries hands nothing (the flags stay)."""
    async def go() -> None:
        namesrv, registrar, seen = await namesrv_and_registrar()
        try:
            await registrar.start()
            assert seen == []  # no ORDER_TOPIC_CONFIG entries: no table
            async with AdminClient(namesrv.address) as admin:
                await admin.put_kv(ORDER_TOPIC_CONFIG, "orders", "broker-a:4")
            await registrar.register_all()
            assert seen == [{"orders": "broker-a:4"}]
        finally:
            await registrar.close()
            await namesrv.close()

    run(go())


def test_deleting_the_last_order_topic_entry_still_answers_an_empty_table(tmp_path: Path) -> None:
    """4.9.3's KVConfigManager keeps a namespace whose last key is deleted: GET_KVLIST_BY_NAMESPACE answers
    SUCCESS with ``{"table":{}}`` and so does REGISTER_BROKER, which is how brokers learn that no topic is
    ordered any more (an absent table leaves their order flags as they were)."""
    async def go() -> None:
        namesrv, registrar, seen = await namesrv_and_registrar()
        pool = ConnectionPool()
        try:
            async with AdminClient(namesrv.address) as admin:
                await admin.put_kv(ORDER_TOPIC_CONFIG, "orders", "broker-a:4")
                await admin.delete_kv(ORDER_TOPIC_CONFIG, "orders")
            await registrar.start()
            assert seen == [{}]
            request = RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": ORDER_TOPIC_CONFIG})
            listed = await pool.request(namesrv.address, request, 10)
            assert (listed.code, json.loads(listed.body)) == (ResponseCode.SUCCESS, {"table": {}})
        finally:
            await pool.close()
            await registrar.close()
            await namesrv.close()

    run(go())
