"""A push consumer's handler that returns no ConsumeStatus (None: a forgotten ``return``) has its batch
retried, as 4.9.3 takes a listener's null for RECONSUME_LATER, and, as 4.9.3 does, the consumer says so in
a warning; before, the messages came back and went on to the DLQ with no word of why."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually
from test_python_push_consumer import FAST, FAST_DELAYS, SUCCESS, arun, send_all

from rocketstore.client import ConsumedMessage, PushConsumer

CONSUME_LOGGER = "rocketstore.client.consume"


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def test_a_handler_returning_none_is_warned_of_and_its_batch_retried(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = "HuntReturnsNone", "hunt-returns-none-group"
    cluster.create_topic(topic, queues=1)
    calls: list[list[tuple[bytes, int]]] = []

    def handle(messages: list[ConsumedMessage]) -> str | None:
        calls.append([(m.body, m.reconsume_times) for m in messages])
        # then the status's plain string value, as good as the enum: no warning
        return None if len(calls) == 1 else SUCCESS.value

    arun(lambda: send_all(cluster, topic, 2))
    # both in the queue before the first pull, so that they come as one batch (a dispatcher a moment behind,
    # on a loaded machine, handed the first pull m0 alone)
    cluster.wait_dispatched()

    async def go() -> None:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, consume_batch_size=2,
                                **FAST):
            await eventually(lambda: sum(len(c) for c in calls) >= 4, 30, "the batch retried")

    with caplog.at_level(logging.WARNING, logger=CONSUME_LOGGER):
        arun(go)
    assert sorted(item for c in calls[1:] for item in c) == [(b"m0", 1), (b"m1", 1)]
    warned = [r.getMessage() for r in caplog.records if r.name == CONSUME_LOGGER]
    assert len(warned) == 1 and "returned None for 2 message(s)" in warned[0], warned

