"""A push consumer shut down from outside while a handler is running (a real name server and broker, real
Python push consumers, async and sync handlers, concurrent and orderly).

A slow handler is waited for and its message committed (nothing handled twice after the restart).  A
handler that never returns used to make shutdown wait for ever (BlockingPushConsumer's shutdown raised
TimeoutError and left the consumer half shut); ``await_termination_when_shutdown_s`` (4.9.3's
awaitTerminationMillisWhenShutdown) now bounds the wait: the handler is abandoned, its message is not
committed, and the group's next consumer handles it again (at least once, never lost).  Deadlines only."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    BlockingPushConsumer,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
)

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "lock_renew_interval_s": 0.5,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
BODIES = [b"m0", b"m1", b"m2"]
#: the message whose handler is slow, or never returns
STUCK = b"m1"


def committed(cluster: LocalCluster, group: str, topic: str) -> int:
    return cluster.call(lambda: cluster.broker.offsets.query(group, topic, 0))


def locks_held(cluster: LocalCluster, group: str) -> list[str]:
    return cluster.call(lambda: [lock.client_id for key, lock in cluster.broker.queue_locks.locks.items()
                                 if key[0] == group])


async def send_all(cluster: LocalCluster, topic: str) -> None:
    async with Producer(cluster.namesrv_addr, "hunt20-shutdown-producer") as producer:
        for body in BODIES:
            await producer.send(topic, body, queue_id=0)


async def handled_by_the_next_member(cluster: LocalCluster, group: str, topic: str, orderly: bool,
                                     wanted: list[bytes]) -> list[bytes]:
    """What a fresh member of *group* handles once the one shut down is gone (waits until *wanted* came)."""
    handled: list[bytes] = []

    async def take(messages: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, take, orderly=orderly, **FAST):
        await eventually(lambda: set(wanted) <= set(handled), 20, f"the next member to handle {wanted}")
    return handled


def make_handler(is_async: bool, started: threading.Event, release: threading.Event, handled: list[bytes]
                 ) -> Any:
    """A handler that waits for *release* on STUCK (having set *started*) and takes the rest at once."""
    if is_async:
        async def handle_async(messages: list[ConsumedMessage]) -> ConsumeStatus:
            if messages[0].body == STUCK:
                started.set()
                while not release.is_set():
                    await asyncio.sleep(0.05)
            handled.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS
        return handle_async

    def handle_sync(messages: list[ConsumedMessage]) -> ConsumeStatus:
        if messages[0].body == STUCK:
            started.set()
            release.wait(60)
        handled.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS
    return handle_sync


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrently", "orderly"])
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
def test_shutdown_waits_for_a_slow_handler_and_commits_it(tmp_path: Path, orderly: bool,
                                                          is_async: bool) -> None:
    topic, group = "Hunt20SlowShutdown", "hunt20-slow-shutdown"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def go() -> None:
            await send_all(cluster, topic)
            started, release, handled = threading.Event(), threading.Event(), []
            consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"},
                                    make_handler(is_async, started, release, handled), orderly=orderly,
                                    consume_batch_size=1, **FAST)
            await consumer.start()
            await eventually(started.is_set, 20, "the slow handler to start")
            asyncio.get_running_loop().call_later(0.5, release.set)  # it returns while shutdown waits
            await consumer.shutdown()
            assert STUCK in handled
            assert committed(cluster, group, topic) == (2 if orderly else 3)  # orderly: m2 not handled yet
            assert locks_held(cluster, group) == []
            again = await handled_by_the_next_member(cluster, group, topic, orderly,
                                                     [b"m2"] if orderly else [])
            assert STUCK not in again

        run_within(go, 60)


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrently", "orderly"])
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
def test_shutdown_abandons_a_handler_that_never_returns_after_the_await_setting(
        tmp_path: Path, orderly: bool, is_async: bool) -> None:
    topic, group = "Hunt20StuckShutdown", "hunt20-stuck-shutdown"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        release = threading.Event()

        async def go() -> None:
            await send_all(cluster, topic)
            started, handled = threading.Event(), []
            consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"},
                                    make_handler(is_async, started, release, handled), orderly=orderly,
                                    consume_batch_size=1, await_termination_when_shutdown_s=0.5, **FAST)
            await consumer.start()
            await eventually(started.is_set, 20, "the stuck handler to start")
            await consumer.shutdown()  # returns: the stuck handler is abandoned
            assert STUCK not in handled
            # its message is not committed: the offset stays before it, and the next member handles it
            assert committed(cluster, group, topic) == 1
            assert locks_held(cluster, group) == []
            again = await handled_by_the_next_member(cluster, group, topic, orderly, [STUCK, b"m2"])
            assert b"m0" not in again

        try:
            run_within(go, 60)
        finally:
            release.set()


def test_blocking_shutdown_from_another_thread_abandons_a_stuck_sync_handler(tmp_path: Path) -> None:
    topic, group = "Hunt20BlockingStuck", "hunt20-blocking-stuck"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        run_within(lambda: send_all(cluster, topic), 30)
        started, release, handled = threading.Event(), threading.Event(), []
        consumer = BlockingPushConsumer(cluster.namesrv_addr, group, {topic: "*"},
                                        make_handler(False, started, release, handled), call_timeout_s=30,
                                        await_termination_when_shutdown_s=0.5, **FAST)
        try:
            consumer.start()
            assert started.wait(20), "the stuck handler did not start"
            stopper = threading.Thread(target=consumer.shutdown)
            stopper.start()
            stopper.join(30)
            assert not stopper.is_alive(), "shutdown() did not return"
            assert not consumer.is_running
            assert not consumer._thread.is_alive()  # the consumer's loop thread is gone
            assert committed(cluster, group, topic) == 1
            again = run_within(
                lambda: handled_by_the_next_member(cluster, group, topic, False, [STUCK, b"m2"]), 60)
            assert b"m0" not in again
        finally:
            release.set()
            consumer.shutdown()
