"""A client with a cached route never waits for the name servers to send or pull: its background task re-reads
the routes (a producer's heartbeat rounds, a group consumer's rebalances, as 4.9.3's MQClientInstance every
pollNameServerInterval), and a send or pull goes on with the route it has, however old.  Before, the first
send or pull after the route's 30 s freshness asked the name servers itself: one that accepts and never
answers made it wait the whole look-up, and a send whose look-up outlasted its timeout failed
(SendCallTimeoutError) although the broker of its cached route was up.  A route changed still reaches the
client with the background task's next round.

A real broker, name server and clients on 127.0.0.1; the name server's port then taken over by one that
reads and never answers."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, eventually
from test_hunt19_stalecache_outage import SilentNameServer
from test_route_outage import _age

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient

TOPIC = "Hunt20ClientRouteTopic"


async def _hang_name_server(cluster: LocalCluster) -> SilentNameServer:
    """The name server stops; one that accepts look-ups and never answers takes its port."""
    return await SilentNameServer.in_place_of(cluster, drop=False)


async def _four_queues(cluster: LocalCluster, topic: str) -> None:
    """*topic*, created with one queue, gets four; returns once the name server routes them."""
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=4,
                                 write_queue_nums=4)

    def four_queues_routed() -> bool:
        route = cluster.namesrv.routes.route(topic)
        return route is not None and route.queue_datas[0].write_queue_nums == 4

    await eventually(four_queues_routed, 20, "the name server routes 4 queues")


def test_sends_with_an_old_route_do_not_wait_for_a_hanging_name_server(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def go() -> list[str]:
            # a look-up is bounded by 5 s, a send by 2 s: a send that waits for the name server times out
            async with Producer(cluster.namesrv_addr, "hunt20-route-pg", timeout_s=2,
                                mq_client_api_timeout_s=5) as producer:
                assert (await producer.send(TOPIC, b"before")).status == "SEND_OK"
                silent = await _hang_name_server(cluster)
                try:
                    _age(producer.routes)  # as 30 s of waiting would leave it
                    return [(await producer.send(TOPIC, f"during {i}".encode())).status for i in range(5)]
                finally:
                    await silent.close()  # before the producer's close, so nothing waits on it

        assert cluster.run(go(), 60) == ["SEND_OK"] * 5


def test_pulls_with_an_old_route_do_not_wait_for_a_hanging_name_server(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)
        got: list[bytes] = []

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            got.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS

        async def go() -> None:
            # a look-up is bounded by 60 s: a pull that waits for the name server does not get the message in
            # the 20 s waited for it
            consumer = PushConsumer(cluster.namesrv_addr, "hunt20-route-cg", {TOPIC: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    rebalance_interval_s=0.5, heartbeat_interval_s=0.5, long_poll_ms=500,
                                    pull_delay_on_error_s=0.2, mq_client_api_timeout_s=60)
            async with Producer(cluster.namesrv_addr, "hunt20-route-cg-pg") as producer, consumer:
                await producer.send(TOPIC, b"m0")
                await eventually(lambda: b"m0" in got, 20, "m0 consumed")
                silent = await _hang_name_server(cluster)
                try:
                    _age(consumer.consumer.routes)  # as 30 s of waiting would leave it
                    # m1 may come on the pull in flight; m2 comes on a pull after the aging
                    for body in (b"m1", b"m2"):
                        assert (await producer.send(TOPIC, body)).status == "SEND_OK"
                        await eventually(lambda body=body: body in got, 20, f"{body!r} consumed")
                finally:
                    await silent.close()

        cluster.run(go(), 120)


def test_a_route_changed_reaches_a_producer_with_an_old_route(tmp_path: Path) -> None:
    """The sends no longer ask the name servers when the route is old; the background re-reads
    (every route_refresh_interval_s) still bring the new one."""
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt20-route-change-pg",
                                route_refresh_interval_s=0.5) as producer:
                assert (await producer.send(TOPIC, b"one queue")).message_queue.queue_id == 0
                _age(producer.routes)
                await _four_queues(cluster, TOPIC)

                async def sent_past_queue_0() -> bool:
                    return (await producer.send(TOPIC, b"four queues")).message_queue.queue_id > 0

                await eventually(sent_past_queue_0, 20, "a send to a queue the new route added")

        cluster.run(go(), 60)
