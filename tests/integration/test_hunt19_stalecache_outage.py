"""A name server outage once the cached route is older than its freshness: sends and pulls go on with the last
route, and ask the name servers again only after a back-off, not on every call (4.9.3's sends use the
TopicPublishInfo they have while a background task asks the name servers every 30 s).  Asked on every call,
a refused name server cost a connect per send, and one that hangs made every send wait the look-up's timeout.
A real broker and clients; the name server's address is then served by a socket that counts the route
look-ups it is sent and answers none."""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

from local_cluster import LocalCluster, eventually

from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.codes import RequestCode

TOPIC = "Hunt19StaleCacheTopic"


class SilentNameServer:
    """Listens where the name server was; records the topic of each GET_ROUTEINFO_BY_TOPIC request and never
    answers.  *drop*: close each connection after its first request (a name server gone: the look-up fails at
    once); otherwise keep reading and say nothing (a hanging one: the look-up waits for its timeout)."""

    def __init__(self, drop: bool) -> None:
        self.drop = drop
        self.route_lookups: list[str] = []
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    @classmethod
    async def in_place_of(cls, cluster: LocalCluster, drop: bool) -> SilentNameServer:
        """*cluster*'s name server stops and a silent one takes its port (the clients keep its address)."""
        port = cluster.namesrv.port
        await cluster.namesrv.server.close()
        silent = cls(drop)
        await silent.start(port)
        return silent

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while True:
                total, = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(total)
                header_len = struct.unpack(">i", frame[:4])[0] & 0xFFFFFF
                header = json.loads(frame[4:4 + header_len])
                if header["code"] == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                    self.route_lookups.append(header["extFields"]["topic"])
                if self.drop:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()


async def _learn_route(cluster: LocalCluster, producer: Producer, consumer: PullConsumer) -> None:
    first = await producer.send(TOPIC, b"before")
    assert first.status == "SEND_OK"
    await eventually(lambda: cluster.namesrv.routes.route(TOPIC), 10, "the topic's registration")
    await producer.routes.route(TOPIC, refresh=True)
    await consumer.routes.route(TOPIC, refresh=True)


def test_sends_and_pulls_during_an_outage_ask_the_name_servers_once_not_each_time(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[list[str], list[str], list[str]]:
            async with Producer(cluster.namesrv_addr, "hunt19-stale-producer", timeout_s=3) as producer, \
                    PullConsumer(cluster.namesrv_addr, "hunt19-stale-consumer", timeout_s=3) as consumer:
                await _learn_route(cluster, producer, consumer)
                silent = await SilentNameServer.in_place_of(cluster, drop=True)
                try:
                    producer.routes.expire()  # as 30 s of waiting would leave them
                    consumer.routes.expire()
                    sent = [await producer.send(TOPIC, f"during {i}".encode()) for i in range(10)]
                    mq = sent[0].message_queue
                    for _ in range(10):
                        await consumer.pull(mq, 0, 32)
                    during = list(silent.route_lookups)
                    # a look-up that is told to ask now (a broker may have moved) still asks
                    producer.routes.expire()
                    await producer.send(TOPIC, b"after expire")
                    return [s.status for s in sent], during, list(silent.route_lookups)
                finally:
                    await silent.close()

        statuses, during, after_expire = cluster.run(go())
    assert statuses == ["SEND_OK"] * 10
    assert during == [TOPIC, TOPIC]  # the producer's first send and the consumer's first pull; was 20
    assert after_expire == [TOPIC] * 3


def test_sends_do_not_each_wait_for_a_hanging_name_server(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[list[str], list[str]]:
            async with Producer(cluster.namesrv_addr, "hunt19-hang-producer", timeout_s=5,
                                mq_client_api_timeout_s=0.3) as producer, \
                    PullConsumer(cluster.namesrv_addr, "hunt19-hang-consumer", timeout_s=3) as consumer:
                await _learn_route(cluster, producer, consumer)
                silent = await SilentNameServer.in_place_of(cluster, drop=False)
                try:
                    producer.routes.expire()
                    sent = [await producer.send(TOPIC, f"during {i}".encode()) for i in range(10)]
                    return [s.status for s in sent], list(silent.route_lookups)
                finally:
                    await silent.close()

        statuses, lookups = cluster.run(go())
    assert statuses == ["SEND_OK"] * 10
    assert lookups == [TOPIC]  # one look-up waited for; each send waited for its own before
