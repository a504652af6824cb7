"""Busy polling end to end: ``rocketstore serve --busy-poll-us`` and a client whose loop busy-polls too
serve one-at-a-time sends and long-polling pulls as usual (the broker's loop naps for its dispatch thread,
so a long poll still hears of every message), the loops did poll, and the server shuts down cleanly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from serve_process import ServeProcess, write_broker_conf

from rocketstore.client import MessageQueue, Producer, PullConsumer, PullStatus
from rocketstore.client.errors import NoRouteError
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import busy_poll
from rocketstore.remoting.transport import new_event_loop

#: busy polling keeps the loop spinning with call_soon: asyncio's loop and uvloop's
pytestmark = pytest.mark.both_loops

TIMEOUT_S = 120


async def _queue0(consumer: PullConsumer, topic: str) -> MessageQueue:
    for _ in range(300):
        try:
            return next(q for q in await consumer.queues(topic) if q.queue_id == 0)
        except NoRouteError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"no route for {topic}")


def test_a_busy_polling_serve_and_client_deliver_one_at_a_time_sends_to_a_long_poll(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    topic, n = "BusyTopic", 200
    loop = new_event_loop()
    poller = busy_poll.enable(loop, 500)
    assert poller is not None
    try:
        with ServeProcess(tmp_path / "store", conf, extra_args=("--busy-poll-us", "500")) as serve:
            async def scenario() -> tuple[list[str], list[StoredMessage]]:
                async with Producer(serve.namesrv_addr, "busy-producer") as producer, \
                        PullConsumer(serve.namesrv_addr, "busy-consumer") as consumer:
                    first = await producer.send(topic, b"m-0", queue_id=0)
                    mq = await _queue0(consumer, topic)
                    # the consume queue is written by the broker's dispatch thread a moment after the put: a
                    # pull past its end before that is answered "offset moved" to its start, as RocketMQ does
                    for _ in range(300):
                        if await consumer.max_offset(mq) > first.queue_offset:
                            break
                        await asyncio.sleep(0.01)
                    got: list[StoredMessage] = []

                    async def long_poll() -> None:
                        offset = first.queue_offset + 1
                        while len(got) < n - 1:
                            r = await consumer.pull(mq, offset, 32, suspend_ms=5000)
                            if r.status == PullStatus.FOUND:
                                got.extend(r.messages)
                            offset = r.next_begin_offset

                    polling = asyncio.ensure_future(long_poll())
                    await asyncio.sleep(0.2)  # the pull is held on the broker before the sends start
                    statuses = [first.status]
                    for i in range(1, n):
                        statuses.append((await producer.send(topic, b"m-%d" % i, queue_id=0)).status)
                    await asyncio.wait_for(polling, 60)
                    return statuses, got

            statuses, got = loop.run_until_complete(asyncio.wait_for(scenario(), TIMEOUT_S))
            assert statuses == ["SEND_OK"] * n
            assert [m.body for m in got] == [b"m-%d" % i for i in range(1, n)]
            assert poller.spins > n  # the client's loop polled between its round trips
            assert serve.terminate() == 0
    finally:
        busy_poll.enable(loop, 0)
        loop.close()
