"""An assign-mode lite pull consumer's heartbeat rounds and hanging name servers.

Each heartbeat round re-reads the routes of the assigned topics (their brokers are those heartbeated).  With
every name server hanging (accepting, never answering), each topic's look-up waited its whole timeout in
turn, so a consumer assigned queues of N topics heartbeated N look-up timeouts late (its brokers could count
it gone).  Now the round stops asking at the first look-up no name server answered and goes on with the
routes known, as a rebalance round does (group_consumer.LookupRound).

Real broker and name server on 127.0.0.1; the hanging name server is test_hunt19_stalecache_outage's
SilentNameServer.  Counted, not timed."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, eventually
from test_hunt19_stalecache_outage import SilentNameServer

from rocketstore.client import LitePullConsumer, MessageQueue

TOPICS = ["Hunt21LeftLiteA", "Hunt21LeftLiteB", "Hunt21LeftLiteC"]


class _CountingConsumer(LitePullConsumer):
    """Counts the heartbeat rounds begun."""

    rounds = 0

    async def _heartbeat_all(self) -> None:
        self.rounds += 1
        await super()._heartbeat_all()


def test_an_assign_mode_heartbeat_round_behind_a_hanging_name_server_waits_once_not_once_a_topic(
        tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        for topic in TOPICS:
            cluster.create_topic(topic, queues=1)

        async def go() -> tuple[int, int]:
            consumer = _CountingConsumer(cluster.namesrv_addr, "hunt21-leftovers-lite", heartbeat_interval_s=0.3,
                                         route_refresh_interval_s=0.1, mq_client_api_timeout_s=1)
            consumer.assign([MessageQueue(topic, "broker-a", 0) for topic in TOPICS])
            async with consumer:
                await eventually(lambda: consumer.rounds >= 2, 20, "a heartbeat round after the start's")
                silent = await SilentNameServer.in_place_of(cluster, drop=False)
                try:
                    await eventually(lambda: silent.route_lookups, 20, "a look-up on the hanging name server")
                    rounds_before, lookups_before = consumer.rounds, len(silent.route_lookups)
                    await eventually(lambda: consumer.rounds >= rounds_before + 3, 60, "three more rounds")
                    rounds = consumer.rounds - rounds_before
                    lookups = len(silent.route_lookups) - lookups_before
                finally:
                    await silent.close()
            return rounds, lookups

        rounds, lookups = cluster.run(go(), 120)
        # each round: one look-up that waited, and one maybe in progress (before: one per assigned topic)
        assert lookups <= rounds + 1, (rounds, lookups)
