"""A push consumer's handler that raises asyncio.CancelledError of its own (it awaited something cancelled
elsewhere; the consumer did not cancel it) fails its batch like any other exception, as 4.9.3 takes any
Throwable from a listener: concurrently the batch is sent back and the offset moves on; orderly the queue
handles it again.  Before, the error ended the consume task: the batch stayed held for good (the offset
stuck before it, nothing retried) or the orderly queue stopped consuming."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually
from test_python_push_consumer import FAST, FAST_DELAYS, SUCCESS, arun, send_all

from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer


async def cancelled_elsewhere() -> None:
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future  # raises CancelledError in the handler; its task was never asked to stop


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def test_a_concurrent_batch_whose_handler_raises_cancelled_error_is_sent_back(cluster: LocalCluster) -> None:
    topic, group = "HuntCancelBatch", "hunt-cancel-batch-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        if len(calls) == 1:
            await cancelled_elsewhere()
        return SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 4)
        # all in the queue before the first pull, so that the batches are m0+m1 and m2+m3 (a dispatcher a
        # moment behind, on a loaded machine, hands the first pull m0 alone)
        await asyncio.to_thread(cluster.wait_dispatched)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=2,
                                **FAST) as consumer:
            await eventually(lambda: sum(len(c) for c in calls) >= 6, 30, "the failed batch retried")
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 4, 10,
                             "the offset past every message")
        assert calls[0] == [(b"m0", 0), (b"m1", 0)]
        retried = sorted(item for c in calls[1:] for item in c if item[1] > 0)
        assert retried == [(b"m0", 1), (b"m1", 1)]

    arun(go)


def test_an_orderly_queue_whose_handler_raises_cancelled_error_handles_the_batch_again(
        cluster: LocalCluster) -> None:
    topic, group = "HuntCancelOrderly", "hunt-cancel-orderly-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        if len(calls) == 1:
            await cancelled_elsewhere()
        return SUCCESS

    async def go() -> None:
        await send_all(cluster, topic, 2)
        await asyncio.to_thread(cluster.wait_dispatched)  # both in the first batch (see above)
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                consume_batch_size=2, **FAST) as consumer:
            await eventually(lambda: consumer.offset_table(topic).get((topic, "broker-a", 0)) == 2, 30,
                             "the batch handled again and committed")
        assert calls == [[(b"m0", 0), (b"m1", 0)], [(b"m0", 1), (b"m1", 1)]]

    arun(go)
