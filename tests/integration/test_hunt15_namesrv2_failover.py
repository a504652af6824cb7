"""Several name servers as clients meet them (4.9.3's NettyRemotingClient and MQClientInstance): which one a
client asks, what it does when that one goes away or comes back empty, and the routes the name servers keep
for brokers that vanish.  Real name servers, brokers and clients on 127.0.0.1 port 0, on the test's loop."""

from __future__ import annotations

from pathlib import Path

from local_cluster import SMALL_STORE, eventually, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.route import RouteCache
from rocketstore.namesrv import NameServer
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.store.config import StoreConfig

TOPIC = "Hunt15NamesrvTopic"


async def _namesrv(port: int = 0, **kwargs: object) -> NameServer:
    namesrv = NameServer(**kwargs)  # type: ignore[arg-type]
    await namesrv.start("127.0.0.1", port)
    return namesrv


async def _broker(tmp_path: Path, name: str, namesrv_addr: str, broker_id: int = 0) -> Broker:
    config = BrokerConfig(broker_name=name, namesrv_addr=namesrv_addr, listen_port=0, listen_host="127.0.0.1",
                          broker_ip1="127.0.0.1", broker_id=broker_id)
    broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / f"{name}-{broker_id}"), **SMALL_STORE))
    await broker.start()
    return broker


def test_clients_spread_over_the_name_servers_and_each_sticks_to_one(tmp_path: Path) -> None:
    """4.9.3 starts each client's name server index at random and keeps the chosen one while its channel is
    open: a fleet of clients given "a;b" does not all ask a, and one client does not switch back and forth."""
    async def go() -> None:
        a, b = await _namesrv(), await _namesrv()
        pools = [ConnectionPool() for _ in range(16)]
        try:
            caches = [RouteCache([a.address, b.address], pool) for pool in pools]
            for _ in range(3):
                for cache in caches:
                    assert await cache.fetch("NoSuchTopic") is None  # TOPIC_NOT_EXIST is an answer too
            # one connection per client, to the one name server it chose
            assert len(a.server.connections) + len(b.server.connections) == len(caches)
            assert a.server.connections and b.server.connections  # 16 clients, not all on a (p = 2**-15)
        finally:
            for pool in pools:
                await pool.close()
            await a.close()
            await b.close()

    run_within(go, 30)


def test_a_client_leaves_its_name_server_when_that_one_restarts_empty(tmp_path: Path) -> None:
    """The chosen name server restarts (it knows no broker until their next registration, up to 30 s later):
    its connection closed, so the client asks the next one, as 4.9.3 moves on from a closed name server
    channel, and learns the route from the name server that still has it."""
    async def go() -> None:
        a, b = await _namesrv(), await _namesrv()
        broker = await _broker(tmp_path, "broker-a", f"{a.address};{b.address}")
        pool = ConnectionPool()
        try:
            producer_routes = RouteCache([a.address, b.address], pool)
            assert await producer_routes.fetch("TBW102") is not None
            # the broker holds one connection to each; the client's is the second on the one it chose
            chosen = a if len(a.server.connections) == 2 else b
            other = b if chosen is a else a
            assert len(other.server.connections) == 1
            port = chosen.port
            await chosen.close()
            restarted = await _namesrv(port)
            try:
                assert restarted.routes.route("TBW102") is None  # empty until the broker registers again
                route = await producer_routes.fetch("TBW102")
                assert route is not None and route.broker_datas[0].broker_name == "broker-a"
                assert len(restarted.server.connections) == 0  # not asked: the client moved on
            finally:
                await restarted.close()
        finally:
            await pool.close()
            await broker.close()
            await a.close()
            await b.close()

    run_within(go, 30)


def test_a_name_server_restarted_empty_does_not_take_a_known_route_away(tmp_path: Path) -> None:
    """One name server, restarted: until the broker registers again (up to 30 s) it answers TOPIC_NOT_EXIST.
    4.9.3's updateTopicRouteInfoFromNameServer keeps the route it has on that answer, so sends and pulls go
    on; they failed with NoRouteError here once the cached route was older than 30 s."""
    async def go() -> None:
        namesrv = await _namesrv()
        broker = await _broker(tmp_path, "broker-a", namesrv.address)
        try:
            async with Producer(namesrv.address, "hunt15-ns-producer", timeout_s=3) as producer, \
                    PullConsumer(namesrv.address, "hunt15-ns-consumer", timeout_s=3) as consumer:
                first = await producer.send(TOPIC, b"before")
                assert first.status == "SEND_OK"
                mq = first.message_queue
                await eventually(lambda: namesrv.routes.route(TOPIC), 10, "the topic's registration")
                # (dispatched in the background: a new queue's first entry waits for its directories' syncs)
                async def first_pulled() -> list[bytes]:
                    return [m.body for m in (await consumer.pull(mq, 0, 1)).messages]

                assert await eventually(first_pulled, 10, "the first message dispatched") == [b"before"]
                port = namesrv.port
                await namesrv.close()
                namesrv = await _namesrv(port)
                producer.routes.expire()  # as 30 s of waiting would leave them
                consumer.routes.expire()
                sent = [await producer.send(TOPIC, f"during {i}".encode(), queue_id=mq.queue_id) for i in range(3)]
                assert [s.status for s in sent] == ["SEND_OK"] * 3
                assert {s.message_queue.broker_name for s in sent} == {"broker-a"}

                async def pulled() -> list[bytes]:
                    found = (await consumer.pull(mq, 0, 32)).messages
                    return [m.body for m in found] if len(found) == 4 else []

                bodies = await eventually(pulled, 10, "four messages")
                assert bodies == [b"before", b"during 0", b"during 1", b"during 2"]
                # once the broker registers again, the name server's answer is taken as before
                assert broker.registrar is not None
                await broker.registrar.register_all()
                assert namesrv.routes.route(TOPIC) is not None
                await producer.routes.route(TOPIC, refresh=True)
        finally:
            await broker.close()
            await namesrv.close()

    run_within(go, 40)


def test_a_broker_that_stops_registering_expires_though_it_stays_connected(tmp_path: Path) -> None:
    """4.9.3's scanNotActiveBroker drops a broker not heard from for BROKER_CHANNEL_EXPIRED_TIME (120 s; a
    NameServer's broker_expiry_ms) even while it is connected (and closes its channel); a producer's next route
    read sends only to
    the broker left (retrying it, sendLatencyFaultEnable off, until then)."""
    async def go() -> None:
        namesrv = await _namesrv(broker_expiry_ms=1_500, scan_interval_s=0.05)
        broker_a = await _broker(tmp_path, "broker-a", namesrv.address)
        broker_b = await _broker(tmp_path, "broker-b", namesrv.address)
        try:
            async with Producer(namesrv.address, "hunt15-expiry-producer", timeout_s=3) as producer:
                async with AdminClient(namesrv.address) as admin:
                    for broker in (broker_a, broker_b):
                        await admin.create_topic(TOPIC, broker_addr=broker.address, read_queue_nums=2,
                                                 write_queue_nums=2)
                await eventually(lambda: len(getattr(namesrv.routes.route(TOPIC), "queue_datas", ())) == 2, 10,
                                 "both brokers in the route")
                sent = {(await producer.send(TOPIC, b"x")).message_queue.broker_name for _ in range(8)}
                assert sent == {"broker-a", "broker-b"}
                # broker-a registers once more, then falls silent, still connected; broker-b goes on
                registrar_a, registrar_b = broker_a.registrar, broker_b.registrar
                assert registrar_a is not None and registrar_b is not None
                registrar_a.period_s = 3600.0
                registrar_a.request_registration()
                registrar_b.period_s = 0.2
                registrar_b.request_registration()
                await eventually(lambda: "broker-a" not in namesrv.routes.brokers, 10, "broker-a to expire")
                route = namesrv.routes.route(TOPIC)
                assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
                assert "broker-b" in namesrv.routes.brokers  # registering every 0.2 s: never expires
                producer.routes.expire()
                sent = {(await producer.send(TOPIC, b"y")).message_queue.broker_name for _ in range(8)}
                assert sent == {"broker-b"}
        finally:
            await broker_a.close()
            await broker_b.close()
            await namesrv.close()

    run_within(go, 40)
