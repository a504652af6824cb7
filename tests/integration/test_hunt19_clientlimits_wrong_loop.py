"""A consumer's pull used from another event loop than its connections' stops at once (LoopBoundError is a
programming error every try would repeat, as the producer treats it) instead of retrying every
``pull_delay_on_error_s`` for as long as that loop runs.  Real name server and broker: a lite pull consumer
runs on the cluster's loop and a queue is assigned to it from a coroutine on another loop, so that queue's
pull task runs there."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_lite_pull_consumer import FAST

from rocketstore.client import LitePullConsumer, MessageQueue, Producer
from rocketstore.client.push_types import MessageModel

WAIT_S = 15.0


def _assign_from_another_loop(consumer: LitePullConsumer, queues: list[MessageQueue], added: MessageQueue) -> bool:
    """Assign *queues* from a fresh loop; True when *added*'s pull task ended there by itself."""
    async def go() -> bool:
        consumer.assign(queues)
        task = consumer._states[added].task
        assert task is not None
        try:
            await asyncio.wait_for(asyncio.shield(task), WAIT_S)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return False
        return True

    return asyncio.run(go())


@pytest.mark.parametrize("model", [MessageModel.BROADCASTING, MessageModel.CLUSTERING])
def test_a_pull_task_on_another_loop_stops_at_once(cluster: LocalCluster, tmp_path: Path, model: MessageModel,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # BROADCASTING finds its start offset in the local file, so its pull is what meets the wrong loop;
    # CLUSTERING asks the broker for the committed offset, so the look-up of where to start meets it first
    topic = f"Hunt19WrongLoop{model}"
    cluster.create_topic(topic, 2)
    first, second = MessageQueue(topic, cluster.broker_name, 0), MessageQueue(topic, cluster.broker_name, 1)
    consumer = LitePullConsumer(cluster.namesrv_addr, f"hunt19-wrong-loop-{model}", message_model=model,
                                offset_dir=str(tmp_path / "offsets"), **{**FAST, "pull_delay_on_error_s": 0.05})

    async def on_own_loop() -> list[bytes]:
        async with Producer(cluster.namesrv_addr, "hunt19-wrong-loop-producer") as producer:
            await producer.send(topic, b"to the first queue", queue_id=0)
        consumer.assign([first])
        await consumer.start()
        got: list[bytes] = []
        while not got:
            got += [m.body for m in await consumer.poll(1.0)]
        return got

    assert cluster.run(on_own_loop(), WAIT_S) == [b"to the first queue"]
    try:
        with caplog.at_level(logging.WARNING, logger="rocketstore.client"):
            ended = _assign_from_another_loop(consumer, [first, second], second)
        assert ended, "the pull task on the wrong loop kept retrying"
        stops = [r for r in caplog.records if r.levelno == logging.ERROR and "pulling" in r.getMessage()]
        assert len(stops) == 1 and "another event loop" in stops[0].getMessage(), caplog.text
    finally:
        consumer._states.pop(second, None)  # its task is the other loop's (closed): close() cannot await it
        cluster.run(consumer.close(), WAIT_S)
