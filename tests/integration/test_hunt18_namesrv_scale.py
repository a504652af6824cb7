"""A name server under a broker with thousands of topics: a re-registration whose data version did not change
is taken without reading its topics (4.9.3 reads them and drops them: isBrokerTopicConfigChanged), the
cases where the topics must still be taken (first registration, a new version, a broker back after it
was dropped), and route queries answered, consistent, while big registrations come in.

Real name servers, registrars and clients on 127.0.0.1 port 0, on the test's loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from local_cluster import run_within

from rocketstore.broker.registration import Registrar
from rocketstore.client.admin import AdminClient
from rocketstore.client.route import RouteCache
from rocketstore.namesrv import NameServer
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import DeleteTopicRequestHeader
from rocketstore.remoting.transport import ConnectionPool


def _body(topic_count: int, counter: int, queues: int = 4, filters: tuple[str, ...] = (),
          prefix: str = "Topic") -> RegisterBrokerBody:
    configs = {f"{prefix}{i}": TopicConfig(f"{prefix}{i}", queues, queues) for i in range(topic_count)}
    return RegisterBrokerBody(configs, DataVersion(1_700_000_000_000, counter), filters)


def _registrar(namesrv: NameServer, body: Callable[[], RegisterBrokerBody], *, broker_name: str = "broker-a",
               broker_id: int = 0, port: int = 10911, compressed: bool = False) -> Registrar:
    return Registrar([namesrv.address], cluster_name="DefaultCluster", broker_name=broker_name,
                     broker_id=broker_id, broker_addr=f"127.0.0.1:{port}", ha_server_addr=f"127.0.0.1:{port + 1}",
                     body=body, period_s=3600, compressed=compressed)


def _queue_nums(namesrv: NameServer, topic: str) -> dict[str, int]:
    return {name: q.write_queue_nums for name, q in namesrv.routes.topic_queues.get(topic, {}).items()}


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "compressed"])
def test_an_unchanged_table_is_registered_again_without_reading_its_topics(
        monkeypatch: pytest.MonkeyPatch, compressed: bool) -> None:
    """The name server decoded every one of a broker's 30-s registrations whole (10,000 topics: ~100 ms of
    CPU, mostly building TopicConfigs) only to drop the topics, the data version being unchanged.  Now it
    reads the data version and filter servers and leaves the topics unread; the filter servers it still
    takes from each registration, as 4.9.3 does."""
    whole_decodes: list[int] = []
    real_decode = RegisterBrokerBody.decode.__func__  # type: ignore[attr-defined]

    def counting_decode(cls: type[RegisterBrokerBody], body: bytes, **kwargs: object) -> RegisterBrokerBody:
        whole_decodes.append(len(body))
        return real_decode(cls, body, **kwargs)

    monkeypatch.setattr(RegisterBrokerBody, "decode", classmethod(counting_decode))
    current = [_body(2000, 1)]

    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        registrar = _registrar(namesrv, lambda: current[0], compressed=compressed)
        try:
            await registrar.register_all()
            assert registrar.registered[namesrv.address] is True
            assert len(whole_decodes) == 1 and _queue_nums(namesrv, "Topic1999") == {"broker-a": 4}

            # same data version, a filter server now, and (as 4.9.3 ignores them) topics that differ
            current[0] = _body(2000, 1, queues=8, filters=("127.0.0.1:30000",), prefix="Other")
            await registrar.register_all()
            assert registrar.registered[namesrv.address] is True
            assert len(whole_decodes) == 1, "an unchanged table was decoded whole again"
            assert namesrv.routes.filter_servers == {"127.0.0.1:10911": ["127.0.0.1:30000"]}
            assert _queue_nums(namesrv, "Topic1999") == {"broker-a": 4} and "Other0" not in namesrv.routes.topic_queues

            # a new data version: the topics are read and taken
            current[0] = _body(2000, 2, queues=8)
            await registrar.register_all()
            assert len(whole_decodes) == 2
            assert _queue_nums(namesrv, "Topic1999") == {"broker-a": 8}
            assert namesrv.routes.filter_servers == {}
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "compressed"])
def test_the_topics_are_taken_whenever_4_9_3_takes_them(compressed: bool) -> None:
    """With an unchanged data version the topics are still taken when the master registers first: after
    it unregistered, and under a new address (registerFirst / no live entry for the address).  A slave's
    topics are never taken."""
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        body = _body(300, 5)
        master = _registrar(namesrv, lambda: body, compressed=compressed)
        slave = _registrar(namesrv, lambda: _body(300, 5, queues=9, prefix="SlaveOnly"), broker_id=1, port=10921,
                           compressed=compressed)
        moved = _registrar(namesrv, lambda: body, port=10931, compressed=compressed)
        try:
            await master.register_all()
            await slave.register_all()
            assert _queue_nums(namesrv, "Topic0") == {"broker-a": 4}
            assert "SlaveOnly0" not in namesrv.routes.topic_queues
            assert namesrv.routes.brokers["broker-a"].addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}

            await master.close()  # unregisters: the slave keeps broker-a, its topics' queue data stays
            await slave.close()  # the last address: broker-a and its queue data go
            assert namesrv.routes.topic_queues == {}
            master = _registrar(namesrv, lambda: body, compressed=compressed)
            await master.register_all()  # the same data version as before it unregistered
            assert _queue_nums(namesrv, "Topic299") == {"broker-a": 4}

            namesrv.routes.delete_topic("Topic299")
            await moved.register_all()  # the master under a new address, same version: registers first there
            assert namesrv.routes.brokers["broker-a"].addrs == {0: "127.0.0.1:10931"}
            assert _queue_nums(namesrv, "Topic299") == {"broker-a": 4}
        finally:
            for registrar in (master, slave, moved):
                await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)


def test_route_queries_are_answered_and_consistent_while_big_registrations_come_in() -> None:
    """Three masters with 3,000 topics each register over and over, each time with a new data version and a
    new queue count; meanwhile clients ask for routes.  Every answer is whole (one QueueData per broker
    that registered the topic, a BrokerData for each), every queue count one its broker registered, the
    queries are answered while registrations are still coming in, and the table ends as the last
    registrations say."""
    brokers = ["broker-a", "broker-b", "broker-c"]
    rounds = 4
    topic_count = 3000

    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        versions = {name: 0 for name in brokers}

        def body_of(name: str) -> Callable[[], RegisterBrokerBody]:
            def body() -> RegisterBrokerBody:
                versions[name] += 1
                return _body(topic_count, versions[name], queues=versions[name])
            return body

        registrars = [_registrar(namesrv, body_of(name), broker_name=name, port=10911 + 100 * i,
                                 compressed=i == 1) for i, name in enumerate(brokers)]
        pool = ConnectionPool()
        routes = RouteCache([namesrv.address], pool)
        answers_during: list[int] = []
        registering = True
        try:
            await registrars[0].register_all()

            async def register_rounds(registrar: Registrar) -> None:
                for _ in range(rounds):
                    await registrar.register_all()
                    assert registrar.registered[namesrv.address] is True

            async def query() -> None:
                n = 0
                while registering:
                    topic = f"Topic{(n * 997) % topic_count}"
                    route = await routes.fetch(topic)
                    assert route is not None
                    names = [q.broker_name for q in route.queue_datas]
                    assert len(names) == len(set(names)) and set(names) <= set(brokers)
                    assert sorted(names) == sorted(b.broker_name for b in route.broker_datas)
                    for q in route.queue_datas:
                        assert 1 <= q.write_queue_nums <= rounds + 1 and q.read_queue_nums == q.write_queue_nums
                    answers_during.append(len(names))
                    n += 1
                    await asyncio.sleep(0)

            queries = [asyncio.get_running_loop().create_task(query()) for _ in range(3)]
            await asyncio.gather(*(register_rounds(r) for r in registrars))
            registering = False
            await asyncio.gather(*queries)
            assert answers_during, "no route query was answered while the registrations came in"
            final = {name: versions[name] for name in brokers}
            for i in (0, 1234, topic_count - 1):
                assert _queue_nums(namesrv, f"Topic{i}") == final
            async with AdminClient(namesrv.address) as admin:
                assert len(await admin.topic_list()) == topic_count
                info = await admin.cluster_info()
                assert sorted(info.clusters["DefaultCluster"]) == brokers
        finally:
            registering = False
            for registrar in registrars:
                await registrar.close(unregister=False)
            await pool.close()
            await namesrv.close()

    run_within(go, 120)


def test_the_topic_list_follows_every_change_of_the_topic_set() -> None:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (a Spark stream subscribed by pattern asks at every trigger) is
    answered from the last encoded list while the topic set stays the same; each way a topic comes or goes
    shows in the next answer: a registration with a new version, DELETE_TOPIC_IN_NAMESRV, an
    unregistration, a broker expiring."""
    async def go() -> None:
        namesrv = NameServer(broker_expiry_ms=300, scan_interval_s=3600)
        await namesrv.start("127.0.0.1", 0)
        current = [_body(3, 1)]
        a = _registrar(namesrv, lambda: current[0])
        b = _registrar(namesrv, lambda: _body(2, 1, prefix="OnB"), broker_name="broker-b", port=11911)
        pool = ConnectionPool()
        admin = AdminClient(namesrv.address)
        try:
            await a.register_all()
            assert await admin.topic_list() == ["Topic0", "Topic1", "Topic2"]
            assert await admin.topic_list() == ["Topic0", "Topic1", "Topic2"]
            current[0] = _body(4, 2)
            await a.register_all()
            await b.register_all()
            assert await admin.topic_list() == ["OnB0", "OnB1", "Topic0", "Topic1", "Topic2", "Topic3"]
            connection = await pool.get(namesrv.address)
            response = await connection.request(RemotingCommand.request(
                RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicRequestHeader(topic="Topic1").to_ext_fields()), 5)
            assert response.code == ResponseCode.SUCCESS
            assert await admin.topic_list() == ["OnB0", "OnB1", "Topic0", "Topic2", "Topic3"]
            await b.close()  # unregisters broker-b: its topics go
            assert await admin.topic_list() == ["Topic0", "Topic2", "Topic3"]
            gone = namesrv.routes.expire(namesrv.routes.live["127.0.0.1:10911"].last_update_ms + 1000)
            assert gone == ["127.0.0.1:10911"]
            assert await admin.topic_list() == []
        finally:
            await admin.close()
            await pool.close()
            for registrar in (a, b):
                await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)
