"""A group consumer's rebalance and its name servers.

* A round of route look-ups (a rebalance, a start's) no longer asks the name servers once per subscribed topic
  when none answers: before, with every name server hanging (accepting, never answering), each topic's
  look-up waited its whole timeout in turn, so a consumer with N topics rebalanced N look-up timeouts late (a
  member leaving: its queues taken over that late).  Now the round stops asking at the first look-up no name
  server answered and goes on with the routes known (as a producer's route re-reads do since session 20).
* With a hanging name server and a healthy one, the healthy one answers the round's look-ups after the first
  wait (the chosen name server moves to it): checked here for a consumer of three topics.
* ``update_namesrv_addr`` closes the pooled connections of the name servers no longer listed (4.9.3 keeps
  them until the client shuts down).

Real brokers, name servers and consumers on 127.0.0.1; a hanging name server is a socket that reads the
requests and never answers (test_hunt19_stalecache_outage.SilentNameServer).  Counted, not timed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually
from test_hunt19_stalecache_outage import SilentNameServer

import rocketstore.client.route as route_module
from rocketstore.client import ConsumedMessage, ConsumeStatus, PullConsumer, PushConsumer
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.transport import run

TOPICS = ["Hunt21RebalNsA", "Hunt21RebalNsB", "Hunt21RebalNsC"]


async def _handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def _queues_of(consumer: PushConsumer) -> set[MessageQueue]:
    return {mq for mq in consumer.process_queues if mq.topic in TOPICS}


ALL = {MessageQueue(topic, "broker-a", i) for topic in TOPICS for i in range(2)}


def test_a_rebalance_behind_hanging_name_servers_waits_once_a_round_not_once_a_topic(tmp_path: Path) -> None:
    """Two members; the first knows only the first name server, which then hangs; the second leaves (its
    name server is healthy): the first takes over all the queues, its rebalance rounds each asking the
    hanging name server once (before: once per topic, the retry topic too, each waiting 1 s)."""
    with LocalCluster(tmp_path / "store", namesrv_count=2) as cluster:
        for topic in TOPICS:
            cluster.create_topic(topic, queues=2)
            cluster.wait_until(lambda topic=topic: cluster.namesrvs[1].routes.route(topic) is not None, 20,
                               f"{topic}'s route on the second name server")

        def member(namesrv_addr: str) -> PushConsumer:
            return PushConsumer(namesrv_addr, "hunt21-rebalns-cg", {t: "*" for t in TOPICS}, _handle,
                                rebalance_interval_s=0.3, heartbeat_interval_s=0.5, route_refresh_interval_s=0.1,
                                mq_client_api_timeout_s=1)

        async def go() -> tuple[int, int]:
            first, second = member(cluster.namesrvs[0].address), member(cluster.namesrvs[1].address)
            async with first:
                await second.start()
                await eventually(lambda: _queues_of(first) and _queues_of(second)
                                 and len(_queues_of(first) | _queues_of(second)) == 6, 20, "the queues shared")
                silent = await SilentNameServer.in_place_of(cluster, drop=False)
                try:
                    # the first member's look-ups reach the hanging one (its old connection closed first)
                    await eventually(lambda: silent.route_lookups, 20, "a look-up on the hanging name server")
                    rounds_before, lookups_before = first.rebalance_count, len(silent.route_lookups)
                    await second.shutdown()
                    await eventually(lambda: _queues_of(first) == ALL, 30, "all queues taken over by the first")
                    rounds = first.rebalance_count - rounds_before
                    lookups = len(silent.route_lookups) - lookups_before
                finally:
                    await silent.close()
            return rounds, lookups

        rounds, lookups = cluster.run(go(), 120)
        # each round: at most one look-up that waited, and one maybe in progress (before: four a round)
        assert lookups <= rounds + 1, (rounds, lookups)


def test_a_consumer_of_three_topics_is_assigned_after_one_wait_for_a_hanging_name_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hanging name server listed first and chosen first (the random pick forced): the first look-up
    waits for it, the others go to the healthy one."""
    with LocalCluster(tmp_path / "store") as cluster:
        for topic in TOPICS:
            cluster.create_topic(topic, queues=2)

        async def go() -> tuple[set[MessageQueue], list[str]]:
            silent = SilentNameServer(drop=False)
            await silent.start(0)
            try:
                assert silent._server is not None
                hanging = f"127.0.0.1:{silent._server.sockets[0].getsockname()[1]}"
                monkeypatch.setattr(route_module.random, "randrange", lambda n: 0)
                consumer = PushConsumer(f"{hanging};{cluster.namesrv_addr}", "hunt21-rebalns-two", {
                    t: "*" for t in TOPICS}, _handle, rebalance_interval_s=0.3, mq_client_api_timeout_s=1)
                monkeypatch.undo()
                async with consumer:
                    await eventually(lambda: _queues_of(consumer) == ALL, 30, "all queues assigned")
                    return _queues_of(consumer), list(silent.route_lookups)
            finally:
                await silent.close()

        assigned, lookups = cluster.run(go(), 60)
        assert assigned == ALL
        assert len(lookups) <= 1, lookups


def _client_peers(cluster: LocalCluster, index: int) -> set[str]:
    return cluster.call(lambda: {c.peer_address for c in cluster.namesrvs[index].server.connections})


def test_a_name_server_dropped_by_update_namesrv_addr_sees_its_connection_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(tmp_path / "store", namesrv_count=2) as cluster:
        cluster.create_topic(TOPICS[0])
        cluster.wait_until(lambda: cluster.namesrvs[1].routes.route(TOPICS[0]) is not None, 20, "the route")
        first, second = cluster.namesrvs[0].address, cluster.namesrvs[1].address
        before = _client_peers(cluster, 0)  # the broker's registration connection

        async def go() -> None:
            monkeypatch.setattr(route_module.random, "randrange", lambda n: 0)  # the first name server asked
            consumer = PullConsumer(f"{first};{second}", "hunt21-rebalns-update")
            monkeypatch.undo()
            async with consumer:
                await consumer.queues(TOPICS[0])
                await eventually(lambda: _client_peers(cluster, 0) - before, 10, "the consumer's connection")
                mine = _client_peers(cluster, 0) - before
                consumer.update_namesrv_addr(f"{second};{first}")  # both still listed: kept
                assert mine <= _client_peers(cluster, 0)
                consumer.update_namesrv_addr(second)
                await eventually(lambda: not (mine & _client_peers(cluster, 0)), 10,
                                 "the dropped name server's connection closed")
                assert _client_peers(cluster, 0) >= before  # the broker's stays
                assert (await consumer.routes.route(TOPICS[0], refresh=True)).queue_datas

        # the client on a loop of its own: the name server's connections are read on the cluster's
        result: list[BaseException] = []

        def runner() -> None:
            try:
                run(go())
            except BaseException as exc:  # noqa: BLE001 -- re-raised in the test's thread
                result.append(exc)

        thread = threading.Thread(target=runner)
        thread.start()
        thread.join(60)
        assert not thread.is_alive()
        if result:
            raise result[0]
