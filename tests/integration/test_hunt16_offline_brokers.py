"""Clients forget a broker that left the cluster for good, as 4.9.3's MQClientInstance.cleanOfflineBroker does
before each round of heartbeats: an address that no route of the client's topics names any more
(isBrokerAddrExistInTopicRouteTable) gets no more heartbeats.  Two real brokers and a name server with a short
broker expiry on 127.0.0.1 port 0; one broker goes away without unregistering (as a killed one), the name
server expires it, and a listener on its old port counts every connection a client still makes there."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from local_cluster import SMALL_STORE, eventually, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import ConsumedMessage, ConsumeStatus, LitePullConsumer, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.namesrv import NameServer
from rocketstore.store.config import StoreConfig

TOPIC = "Hunt16OfflineTopic"
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.3, "pull_delay_on_error_s": 0.2, "timeout_s": 2.0}


async def _broker(tmp_path: Path, name: str, namesrv_addr: str) -> Broker:
    config = BrokerConfig(broker_name=name, namesrv_addr=namesrv_addr, listen_port=0, listen_host="127.0.0.1",
                          broker_ip1="127.0.0.1")
    broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / name), **SMALL_STORE))
    await broker.start()
    assert broker.registrar is not None
    broker.registrar.period_s = 0.2  # within the name server's short expiry while it runs
    broker.registrar.request_registration()
    return broker


class _OldPort:
    """A listener on the address a broker served on: counts the connections made to it, closing each."""

    def __init__(self) -> None:
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def open(self, address: str) -> None:
        host, port = address.rsplit(":", 1)

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            writer.close()

        self.server = await asyncio.start_server(accept, host, int(port))

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def _rounds_seen(last_update: Callable[[], int | None], rounds: int, what: str) -> None:
    """Wait until broker-b has taken *rounds* more heartbeats of the client (its channel's last update
    changed that many times)."""
    seen: list[int | None] = [last_update()]

    def more() -> bool:
        now = last_update()
        if now != seen[-1]:
            seen.append(now)
        return len(seen) > rounds

    await eventually(more, 20, what)


async def _scenario(tmp_path: Path, start_client: Callable[[str], Awaitable[Any]],
                    known: Callable[[Any], set[str]], last_update: Callable[[Broker, Any], int | None],
                    still_works: Callable[[Any, Broker], Awaitable[None]],
                    stop_client: Callable[[Any], Awaitable[None]]) -> None:
    namesrv = NameServer(broker_expiry_ms=1_000, scan_interval_s=0.05)
    await namesrv.start("127.0.0.1", 0)
    broker_a = await _broker(tmp_path, "broker-a", namesrv.address)
    broker_b = await _broker(tmp_path, "broker-b", namesrv.address)
    old_port = _OldPort()
    client = None
    try:
        async with AdminClient(namesrv.address) as admin:
            for broker in (broker_a, broker_b):
                await admin.create_topic(TOPIC, broker_addr=broker.address, read_queue_nums=2, write_queue_nums=2)
        await eventually(lambda: len(getattr(namesrv.routes.route(TOPIC), "queue_datas", ())) == 2, 10,
                         "both brokers in the route")
        client = await start_client(namesrv.address)
        await eventually(lambda: {broker_a.address, broker_b.address} <= known(client), 20,
                         "the client to know both brokers")
        # broker-a goes for good without unregistering (as a killed broker would); the name server expires it
        addr_a = broker_a.address
        assert broker_a.registrar is not None
        broker_a.registrar.namesrv_addrs = []
        await broker_a.close()
        await old_port.open(addr_a)
        await eventually(lambda: "broker-a" not in namesrv.routes.brokers, 10, "broker-a to expire")
        await eventually(lambda: addr_a not in known(client), 20, "the client to forget broker-a")
        assert known(client) == {broker_b.address}
        before = old_port.connections
        await _rounds_seen(lambda: last_update(broker_b, client), 3, "three more heartbeats on broker-b")
        assert old_port.connections == before  # no heartbeat (nor anything else) went to broker-a's address
        await still_works(client, broker_b)
        await stop_client(client)
        client = None
        assert old_port.connections == before  # nor an unregistration at shutdown
    finally:
        if client is not None:
            await stop_client(client)
        await old_port.close()
        await broker_a.close()
        await broker_b.close()
        await namesrv.close()


def _consumer_update(group: str) -> Callable[[Broker, Any], int | None]:
    def last_update(broker: Broker, consumer: Any) -> int | None:
        info = broker.clients.consumers.get(group)
        if info is None:
            return None
        found = [c.last_update_ms for c in info.channels.values() if c.client_id == consumer.client_id]
        return found[0] if found else None
    return last_update


async def _send_to_b(namesrv_addr: str, broker_b: Broker, body: bytes) -> None:
    async with Producer(namesrv_addr, "hunt16-offline-sender", timeout_s=3) as producer:
        result = await producer.send(TOPIC, body)
        assert result.message_queue.broker_name == "broker-b"


def test_a_push_consumer_forgets_a_broker_gone_for_good(tmp_path: Path) -> None:
    group = "hunt16-offline-push"
    got: list[bytes] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def start(namesrv_addr: str) -> PushConsumer:
        consumer = PushConsumer(namesrv_addr, group, {TOPIC: "*"}, handle, long_poll_ms=500, **FAST)
        await consumer.start()
        return consumer

    def known(consumer: PushConsumer) -> set[str]:
        return set(consumer._all_broker_addrs())

    async def still_works(consumer: PushConsumer, broker_b: Broker) -> None:
        await eventually(lambda: {mq.broker_name for mq in consumer.assignment(TOPIC)} == {"broker-b"}, 20,
                         "the queues of broker-b only")
        await _send_to_b(consumer.namesrv_addr, broker_b, b"after broker-a left")
        await eventually(lambda: b"after broker-a left" in got, 20, "the message sent to broker-b consumed")

    async def stop(consumer: PushConsumer) -> None:
        await consumer.shutdown()

    run_within(lambda: _scenario(tmp_path, start, known, _consumer_update(group), still_works, stop), 120)


def test_a_lite_pull_consumer_forgets_a_broker_gone_for_good(tmp_path: Path) -> None:
    group = "hunt16-offline-lite"

    async def start(namesrv_addr: str) -> LitePullConsumer:
        consumer = LitePullConsumer(namesrv_addr, group, long_poll_ms=500, **FAST)
        consumer.subscribe(TOPIC)
        await consumer.start()
        return consumer

    def known(consumer: LitePullConsumer) -> set[str]:
        return set(consumer._all_broker_addrs())

    async def still_works(consumer: LitePullConsumer, broker_b: Broker) -> None:
        await _send_to_b(consumer.namesrv_addr, broker_b, b"after broker-a left")
        got: list[bytes] = []
        for _ in range(40):
            got.extend(m.body for m in await consumer.poll(0.5))
            if b"after broker-a left" in got:
                break
        assert b"after broker-a left" in got

    async def stop(consumer: LitePullConsumer) -> None:
        await consumer.shutdown()

    run_within(lambda: _scenario(tmp_path, start, known, _consumer_update(group), still_works, stop), 120)


def test_a_producer_forgets_a_broker_gone_for_good(tmp_path: Path) -> None:
    group = "hunt16-offline-producer"

    async def start(namesrv_addr: str) -> Producer:
        producer = Producer(namesrv_addr, group, timeout_s=2, heartbeat_interval_s=0.3,
                            route_refresh_interval_s=0.3)
        await producer.start()
        await producer.send(TOPIC, b"before")  # reads the topic's route: both masters get heartbeats
        return producer

    def known(producer: Producer) -> set[str]:
        return set(producer._brokers.values()) | set(producer._heartbeated)

    def last_update(broker: Broker, producer: Any) -> int | None:
        found = [c.last_update_ms for c in broker.clients.producers.get(group, {}).values()
                 if c.client_id == producer.client_id]
        return found[0] if found else None

    async def still_works(producer: Producer, broker_b: Broker) -> None:
        sent = {(await producer.send(TOPIC, b"after")).message_queue.broker_name for _ in range(6)}
        assert sent == {"broker-b"}

    async def stop(producer: Producer) -> None:
        await producer.close()

    run_within(lambda: _scenario(tmp_path, start, known, last_update, still_works, stop), 120)

