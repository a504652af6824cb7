"""ConsumeOrderlyStatus's COMMIT and ROLLBACK (deprecated in 4.9.3, still served by
ConsumeMessageOrderlyService.processConsumeResult), as ConsumeStatus.COMMIT / ROLLBACK, with a real name
server and broker:

* auto_commit off: SUCCESS consumes the batch but commits nothing; COMMIT commits everything consumed so
  far; ROLLBACK puts everything consumed since the last commit back (reconsume counts unchanged) and
  suspends the queue, so it is all handed over again.
* auto_commit on: both count as SUCCESS (4.9.3 logs that it takes them for an acknowledgement).
* CONSUME_MESSAGE_DIRECTLY to an orderly consumer answers CR_COMMIT / CR_ROLLBACK for them.
* A concurrent handler cannot return them in Java; ours returning one has its batch retried, not lost.
Deadlines only."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    OrderlyContext,
    Producer,
    PushConsumer,
    current_context,
)
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.consumer_bodies import CMResult

FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 2000, "pull_delay_on_error_s": 0.2,
                        "local_retry_delay_s": 0.5, "lock_renew_interval_s": 0.5,
                        "suspend_current_queue_s": 0.05,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
SUCCESS, COMMIT, ROLLBACK = ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.COMMIT, ConsumeStatus.ROLLBACK


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, 60.0)  # type: ignore[arg-type]


async def send(cluster: LocalCluster, topic: str, bodies: list[bytes]) -> None:
    async with Producer(cluster.namesrv_addr, "hunt17-orderly-producer") as producer:
        for body in bodies:
            await producer.send(topic, body)


def broker_offset(cluster: LocalCluster, group: str, topic: str) -> int:
    return cluster.call(lambda: cluster.broker.offsets.query(group, topic, 0))


def test_commit_commits_what_was_consumed_and_success_without_auto_commit_does_not(
        cluster: LocalCluster) -> None:
    topic, group = "Hunt17OrderlyCommit", "hunt17-orderly-commit"
    cluster.create_topic(topic, queues=1)
    box: list[PushConsumer] = []
    seen: list[tuple[bytes, int, int]] = []  # (body, reconsume times, offset in memory when handed over)
    verdicts = {b"c0": SUCCESS, b"c1": COMMIT, b"c2": SUCCESS}

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        context = current_context()
        assert isinstance(context, OrderlyContext)
        context.auto_commit = False
        m = messages[0]
        seen.append((m.body, m.reconsume_times, box[0].offsets.read_memory(context.message_queue)))
        return verdicts[m.body]

    async def go() -> None:
        await send(cluster, topic, list(verdicts))
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST)
        box.append(consumer)
        async with consumer:
            await eventually(lambda: len(seen) >= 3, 20, "three calls")
            assert consumer.offset_table(topic)[(topic, "broker-a", 0)] == 2
        start = seen[0][2]
        # c0 is committed by c1's COMMIT, not before; c2's SUCCESS commits nothing
        assert seen == [(b"c0", 0, start), (b"c1", 0, start), (b"c2", 0, 2)]
        assert broker_offset(cluster, group, topic) == 2

    arun(go)


def test_rollback_hands_everything_since_the_last_commit_over_again(cluster: LocalCluster) -> None:
    topic, group = "Hunt17OrderlyRollback", "hunt17-orderly-rollback"
    cluster.create_topic(topic, queues=1)
    seen: list[tuple[bytes, int]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        context = current_context()
        assert isinstance(context, OrderlyContext)
        m = messages[0]
        seen.append((m.body, m.reconsume_times))
        context.auto_commit = m.body == b"r2"
        if m.body == b"r1":
            return ROLLBACK if seen.count((b"r1", 0)) == 1 else COMMIT
        return SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"r0", b"r1", b"r2"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 3, 20,
                             "the commit of all three")
        assert seen == [(b"r0", 0), (b"r1", 0), (b"r0", 0), (b"r1", 0), (b"r2", 0)]
        assert broker_offset(cluster, group, topic) == 3

    arun(go)


def test_with_auto_commit_on_commit_and_rollback_count_as_success(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "Hunt17OrderlyAutoCommit", "hunt17-orderly-auto"
    cluster.create_topic(topic, queues=1)
    seen: list[tuple[bytes, int]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.append((messages[0].body, messages[0].reconsume_times))
        return ROLLBACK if messages[0].body == b"a0" else COMMIT

    async def go() -> None:
        await send(cluster, topic, [b"a0", b"a1"])
        with caplog.at_level(logging.WARNING, logger="rocketstore.client.consume"):
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                    **FAST) as consumer:
                await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 2, 20,
                                 "both committed")
        assert seen == [(b"a0", 0), (b"a1", 0)]
        warned = [r.getMessage() for r in caplog.records if "auto_commit on" in r.getMessage()]
        assert len(warned) == 2 and "ROLLBACK" in warned[0] and "COMMIT" in warned[1]

    arun(go)


def test_consume_directly_answers_commit_and_rollback_for_an_orderly_consumer(cluster: LocalCluster) -> None:
    topic = "Hunt17OrderlyDirect"
    cluster.create_topic(topic, queues=1)
    answer: list[ConsumeStatus] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return answer[0]

    async def go() -> list[tuple[bool, str, str]]:
        async with Producer(cluster.namesrv_addr, "hunt17-orderly-producer") as producer:
            sent = await producer.send(topic, b"direct")
        results = []
        for orderly in (True, False):
            group = f"hunt17-orderly-direct-{orderly}"
            answer[:] = [SUCCESS]  # the message itself is consumed first
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=orderly,
                                    **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
                await eventually(lambda c=consumer: c.offset_table(topic).get((topic, "broker-a", 0)) == 1,
                                 20, "the message consumed")
                for status in (COMMIT, ROLLBACK):
                    answer[:] = [status]
                    got = await admin.consume_message_directly(group, consumer.client_id, sent.offset_msg_id)
                    results.append((orderly, str(status), got.consume_result))
        return results

    assert arun(go) == [(True, "COMMIT", CMResult.COMMIT), (True, "ROLLBACK", CMResult.ROLLBACK),
                        (False, "COMMIT", CMResult.LATER), (False, "ROLLBACK", CMResult.LATER)]


def test_a_concurrent_handler_returning_commit_has_its_message_retried(cluster: LocalCluster) -> None:
    topic, group = "Hunt17ConcurrentCommit", "hunt17-concurrent-commit"
    cluster.create_topic(topic, queues=1)
    seen: list[tuple[bytes, int]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.append((messages[0].body, messages[0].reconsume_times))
        return COMMIT if messages[0].reconsume_times == 0 else SUCCESS

    async def go() -> None:
        await send(cluster, topic, [b"k0"])
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
            await eventually(lambda: len(seen) >= 2, 30, "the retry")
        assert seen[:2] == [(b"k0", 0), (b"k0", 1)]

    arun(go)
