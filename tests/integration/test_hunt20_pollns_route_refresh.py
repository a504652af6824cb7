"""A producer re-reads its topics' routes every ``route_refresh_interval_s`` (4.9.3's pollNameServerInterval,
30 s), apart from its heartbeats every ``heartbeat_interval_s`` (heartbeatBrokerInterval, 30 s).  Before,
its heartbeat rounds were its only route re-reads, and a send used the cached route however old while they
ran: a producer given ``heartbeat_interval_s=120`` saw a new broker or a changed queue count only 120 s
later.  Every producer class and blocking wrapper takes the setting.

A real name server, broker and clients on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually
from test_hunt20_clientroute_background import _four_queues

from rocketstore.client import Producer, RequestProducer
from rocketstore.client.blocking_producer import BlockingProducer, BlockingTransactionProducer
from rocketstore.client.transaction_producer import LocalTransactionState, TransactionProducer

TOPIC = "Hunt20PollNsTopic"
#: long enough that no heartbeat round (the old route re-read) comes while a test waits
LONG_S = 600.0
SHORT_S = 0.3




def _commit(message: object, arg: object) -> LocalTransactionState:
    return LocalTransactionState.COMMIT_MESSAGE


@pytest.mark.parametrize("make", [Producer, RequestProducer])
def test_a_queue_count_change_reaches_the_sends_with_the_route_refresh_not_the_heartbeat(
        tmp_path: Path, make: Callable[..., Producer]) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def go() -> None:
            async with make(cluster.namesrv_addr, "hunt20-pollns-pg", heartbeat_interval_s=LONG_S,
                            route_refresh_interval_s=SHORT_S) as producer:
                assert (await producer.send(TOPIC, b"one queue")).message_queue.queue_id == 0
                await _four_queues(cluster, TOPIC)

                async def sent_past_queue_0() -> bool:
                    return (await producer.send(TOPIC, b"four queues")).message_queue.queue_id > 0

                await eventually(sent_past_queue_0, 20, "a send to a queue the new route added")

        cluster.run(go(), 60)


def test_a_transaction_producers_route_refresh_is_its_own(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def go() -> None:
            producer = TransactionProducer(cluster.namesrv_addr, "hunt20-pollns-tx", _commit,
                                           heartbeat_interval_s=LONG_S, route_refresh_interval_s=SHORT_S)
            async with producer:
                first = await producer.send_in_transaction(TOPIC, b"one queue", _commit)
                assert first.message_queue.queue_id == 0
                await _four_queues(cluster, TOPIC)

                async def sent_past_queue_0() -> bool:
                    result = await producer.send_in_transaction(TOPIC, b"four queues", _commit)
                    return result.message_queue.queue_id > 0

                await eventually(sent_past_queue_0, 20, "a half message to a queue the new route added")

        cluster.run(go(), 60)


@pytest.mark.parametrize("make", [
    lambda addr: BlockingProducer(addr, "hunt20-pollns-blocking", heartbeat_interval_s=LONG_S,
                                  route_refresh_interval_s=SHORT_S),
    lambda addr: BlockingTransactionProducer(addr, "hunt20-pollns-blocking-tx", _commit,
                                             heartbeat_interval_s=LONG_S, route_refresh_interval_s=SHORT_S),
], ids=["BlockingProducer", "BlockingTransactionProducer"])
def test_the_blocking_wrappers_pass_the_route_refresh_on(tmp_path: Path, make: Callable[[str], Any]) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)
        with make(cluster.namesrv_addr) as producer:
            def send() -> int:
                if isinstance(producer, BlockingTransactionProducer):
                    return producer.send_in_transaction(TOPIC, b"m", _commit).message_queue.queue_id
                return producer.send(TOPIC, b"m").message_queue.queue_id

            assert send() == 0
            cluster.run(_four_queues(cluster, TOPIC))
            deadline = time.monotonic() + 20
            while send() == 0:
                assert time.monotonic() < deadline, "no send to a queue the new route added"


def test_heartbeats_go_out_on_their_own_interval_when_the_routes_are_re_read_rarely(tmp_path: Path) -> None:
    """The intervals swapped: the heartbeats do not wait for a route re-read; the broker's producer table
    sees each round."""
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)
        group = "hunt20-pollns-hb"

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, group, heartbeat_interval_s=SHORT_S,
                                route_refresh_interval_s=LONG_S) as producer:
                await producer.send(TOPIC, b"m")
                channels = cluster.broker.clients.producer_channels
                await eventually(lambda: channels(group), 10, "the first heartbeat")
                for _ in range(3):
                    seen_ms = channels(group)[0].last_update_ms
                    await eventually(lambda seen_ms=seen_ms: channels(group)[0].last_update_ms > seen_ms, 10,
                                     "a periodic heartbeat")

        cluster.run(go(), 60)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan")])
def test_the_route_refresh_interval_must_be_positive(value: float) -> None:
    with pytest.raises(ValueError, match="route_refresh_interval_s"):
        Producer("127.0.0.1:9876", "hunt20-pollns-bad", route_refresh_interval_s=value)
    with pytest.raises(ValueError, match="route_refresh_interval_s"):
        TransactionProducer("127.0.0.1:9876", "hunt20-pollns-bad", _commit, route_refresh_interval_s=value)

