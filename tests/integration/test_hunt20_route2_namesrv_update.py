"""A running client's name server list can change (4.9.3's setNamesrvAddr / updateNameServerAddressList):
``update_namesrv_addr`` on producers, consumers, the admin client and the blocking wrappers; the routes are
then asked of the new name servers, a trace producer's too.  And a producer's heartbeat round no longer
asks a hanging name server once per topic before heartbeating the brokers.

A real broker registering with two name servers (LocalCluster's ``namesrv_count``), real clients, all on
127.0.0.1; the first name server is stopped, or its port taken over by one that reads and never answers."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, eventually
from test_hunt20_clientroute_background import _hang_name_server

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingTransactionProducer,
    ConsumeFromWhere,
    LocalTransactionState,
    Producer,
    PullConsumer,
    PullStatus,
)
from rocketstore.client.admin import AdminClient

BEFORE = "Hunt20Route2Before"  # used before the update
AFTER = "Hunt20Route2After"  # first used after it


def _two_name_servers(cluster: LocalCluster) -> tuple[str, str]:
    """Create both topics and wait until both name servers route them; their addresses."""
    for topic in (BEFORE, AFTER):
        cluster.create_topic(topic)
        cluster.wait_until(lambda topic=topic: cluster.namesrvs[1].routes.route(topic) is not None, 20,
                           f"{topic}'s route on the second name server")
    return cluster.namesrvs[0].address, cluster.namesrvs[1].address


def test_a_producer_and_a_pull_consumer_go_on_with_the_name_server_they_are_updated_to(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", namesrv_count=2) as cluster:
        first, second = _two_name_servers(cluster)

        async def go() -> tuple[list[str], PullStatus, list[bytes], int, int]:
            producer = Producer(first, "hunt20-route2-pg", enable_trace=True)
            async with producer, PullConsumer(first, "hunt20-route2-cg") as consumer, AdminClient(first) as admin:
                assert (await producer.send(BEFORE, b"before")).status == "SEND_OK"
                await consumer.queues(BEFORE)
                assert producer.trace is not None  # the first send's trace goes out before the first name server
                first_trace = producer.trace.dispatcher  # goes (sent in the background, it would race the close)
                await eventually(lambda: first_trace.sent_messages >= 1, 10, "the first send's trace")
                await cluster.namesrv.close()  # the first name server is gone for good
                for client in (producer, consumer, admin):
                    client.update_namesrv_addr(f"{second};")
                statuses = [(await producer.send(topic, b"after")).status for topic in (BEFORE, AFTER)]
                mq, = await consumer.queues(AFTER)
                pulled = await consumer.pull(mq, 0, suspend_ms=10_000)  # (held until it is dispatched)
                assert admin.namesrv_addrs == [second]
                assert (await admin.route(AFTER)).queue_datas
            assert producer.trace is not None  # its trace producer asked the second one for the trace topic
            dispatcher = producer.trace.dispatcher
            return statuses, pulled.status, [m.body for m in pulled.messages], dispatcher.sent_messages, \
                dispatcher.failed_sends

        statuses, status, bodies, traces_sent, traces_failed = cluster.run(go(), 60)
        assert statuses == ["SEND_OK", "SEND_OK"]
        assert (status, bodies) == (PullStatus.FOUND, [b"after"])
        assert (traces_sent >= 2, traces_failed) == (True, 0)


def test_blocking_clients_go_on_with_the_name_server_they_are_updated_to(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", namesrv_count=2) as cluster:
        first, second = _two_name_servers(cluster)
        with BlockingProducer(first, "hunt20-route2-bpg") as producer, \
                BlockingTransactionProducer(first, "hunt20-route2-tpg",
                                            lambda m: LocalTransactionState.COMMIT_MESSAGE) as tx_producer, \
                BlockingLitePullConsumer(first, "hunt20-route2-lcg", pull_batch_size=1,
                                         consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) as consumer:
            assert producer.send(BEFORE, b"before").status == "SEND_OK"
            cluster.run(cluster.namesrv.close())
            for client in (producer, tx_producer, consumer):
                client.update_namesrv_addr(second)
            assert producer.send(AFTER, b"plain").status == "SEND_OK"
            sent = tx_producer.send_in_transaction(AFTER, b"half", lambda m, a: LocalTransactionState.COMMIT_MESSAGE)
            assert sent.status == "SEND_OK"
            consumer.subscribe(AFTER)
            got: list[bytes] = []
            for _ in range(100):
                got.extend(m.body for m in consumer.poll(0.5))
                if len(got) >= 2:
                    break
            assert sorted(got) == [b"half", b"plain"]


def _heartbeats_seen(cluster: LocalCluster, group: str, seen: set[int]) -> int:
    """Add the broker's last heartbeat time of *group*'s producer (on the cluster's loop); how many seen."""
    for channel in cluster.broker.clients.producer_channels(group):
        seen.add(channel.last_update_ms)
    return len(seen)


def test_a_heartbeat_round_asks_a_hanging_name_server_once_not_once_per_topic(tmp_path: Path) -> None:
    """Eleven topics (ten and TBW102), a look-up bounded by 1 s: before, each round waited 11 s for the name
    server before heartbeating; now it stops at the first look-up that got no answer, and the brokers get
    each round's heartbeat.  Counted, not timed: the look-ups the hanging name server got per heartbeat."""
    topics = [f"Hunt20Route2Topic{i}" for i in range(10)]
    with LocalCluster(tmp_path / "store") as cluster:
        for topic in topics:
            cluster.create_topic(topic)

        async def go() -> tuple[int, int]:
            group = "hunt20-route2-hb-pg"
            async with Producer(cluster.namesrv_addr, group, heartbeat_interval_s=0.5,
                                mq_client_api_timeout_s=1) as producer:
                for topic in topics:
                    assert (await producer.send(topic, b"x")).status == "SEND_OK"
                silent = await _hang_name_server(cluster)
                try:
                    seen: set[int] = set()
                    await eventually(lambda: _heartbeats_seen(cluster, group, seen) >= 4, 120,
                                     "four heartbeats reaching the broker with the name server hanging")
                    lookups = len(silent.route_lookups)
                    return len(seen), lookups
                finally:
                    await silent.close()

        heartbeats, lookups = cluster.run(go(), 180)
        # each round after the hang: one look-up that waits, then the heartbeat (before: eleven of them)
        assert lookups <= heartbeats + 1, (heartbeats, lookups)
