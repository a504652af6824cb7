"""A lite pull consumer's close() writes out the offset store as it stands and commits nothing itself, as
4.9.3's DefaultLitePullConsumerImpl.shutdown (persistConsumerOffset, no commitAll).

Differential run (session 28, jlite) of 4.9.3's DefaultLitePullConsumer against the 4.9.3 broker, a queue
of 100 messages, autoCommitIntervalMillis 60000: four polls of 10 then shutdown(), and a new member of the
group read committed(mq) == 0 (the broker's answer for a group without an offset); with
autoCommitIntervalMillis 1000: poll, sleep 1.2 s, poll, poll, shutdown() -> committed 10 (the second poll
committed the first one's batch; the batches of the second and third were not).  Ours committed 40 and 30:
close() copied every polled offset into the store first, so a batch the caller had in hand when it closed
(``async with`` left by an exception while handling it) was committed unprocessed and lost to the group.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import arun, committed, create_topic, send_all

from rocketstore.client import ConsumeFromWhere, LitePullConsumer, MessageQueue

FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


class Handling(Exception):
    """The caller's handling of a batch failed."""


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_close_commits_nothing_polled_since_the_last_commit(cluster: LocalCluster) -> None:
    topic, group = "TLiteClose", "GLiteClose"

    async def main() -> None:
        await create_topic(cluster, topic, 1)
        await send_all(cluster, topic, 40)
        cluster.wait_dispatched()  # every pull then finds a whole batch of 10: 20 handled is two polls
        mq = MessageQueue(topic, cluster.broker_name, 0)
        # the auto commit at the first poll finds nothing polled; the next one is an hour away
        consumer = LitePullConsumer(cluster.namesrv_addr, group, auto_commit_interval_s=3600.0, **FAST)
        consumer.subscribe(topic, "*")
        handled = []
        with pytest.raises(Handling):
            async with consumer:
                while len(handled) < 20:
                    handled += await consumer.poll(5.0)
                await consumer.commit_sync()  # what was handled so far
                batch = await consumer.poll(5.0)
                assert batch
                raise Handling("the batch in hand is not handled")
        assert committed(cluster, group, topic) == {0: 20}, "the batch in hand was committed at close"
        again = LitePullConsumer(cluster.namesrv_addr, group, **FAST)
        again.subscribe(topic, "*")
        async with again:
            assert await again.committed(mq) == 20
            first = []
            while not first:
                first = await again.poll(5.0)
            assert first[0].queue_offset == 20, "the unhandled batch comes again"

    arun(main)
