"""``await consumer.shutdown()`` from the consumer's own async handler (a real name server and broker, real
Python push consumers): the shutdown waits for the handlers in progress, and the one awaiting it is among
them, so it used to wait for itself for ever: nothing committed, an orderly queue's broker lock kept (the
group's next member waits for it to expire) and the client never unregistered.  As DefaultMQPushConsumer's
shutdown called from a listener, and BlockingPushConsumer.shutdown from a handler, it now returns at once;
the shutdown goes on once the handler is done (its batch committed, nothing more handled), and the queue
is handed over to the group's next member.  Deadlines only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 2000, "pull_delay_on_error_s": 0.2,
                        "lock_renew_interval_s": 0.5,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


@pytest.mark.parametrize("orderly", [True, False], ids=["orderly", "concurrently"])
def test_shutdown_awaited_in_the_consumers_own_handler_returns_and_hands_the_queue_over(
        tmp_path: Path, orderly: bool) -> None:
    topic, group = "Hunt19SelfShutdown", "hunt19-self-shutdown"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, queues=1)

        async def go() -> None:
            bodies = [f"m{i}".encode() for i in range(4)]
            async with Producer(cluster.namesrv_addr, "hunt19-self-shutdown-producer") as producer:
                for body in bodies:
                    await producer.send_orderly(topic, body, "one-order")
            box: list[PushConsumer] = []
            started = asyncio.Event()
            returned = asyncio.Event()
            first: list[bytes] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                first.extend(m.body for m in messages)
                if messages[0].body == b"m1":
                    await started.wait()
                    await box[0].shutdown()  # returns at once; the shutdown waits for this handler
                    returned.set()
                return ConsumeStatus.CONSUME_SUCCESS

            consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=orderly,
                                    consume_concurrency=1, **FAST)
            box.append(consumer)
            await consumer.start()
            started.set()
            await eventually(returned.is_set, 20, "shutdown() awaited in the handler to return")
            await consumer.shutdown()  # from outside: waits for the shutdown under way to finish
            # what was handled is committed (orderly: the batch in hand, nothing after it), and the queue's
            # broker lock is released
            committed = cluster.call(lambda: cluster.broker.offsets.query(group, topic, 0))
            assert first == bodies[:committed]
            if orderly:
                assert committed == 2
            assert not cluster.call(lambda: dict(cluster.broker.queue_locks.locks))

            second: list[bytes] = []

            async def handle_second(messages: list[ConsumedMessage]) -> ConsumeStatus:
                second.extend(m.body for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            async with Producer(cluster.namesrv_addr, "hunt19-self-shutdown-producer") as producer:
                await producer.send_orderly(topic, b"later", "one-order")
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle_second, orderly=orderly,
                                    consume_concurrency=1, **FAST):
                await eventually(lambda: b"later" in second, 20, "the group's next member to take the queue")
            assert second == [*bodies[committed:], b"later"]

        run_within(go, 60.0)
