"""A consumer ahead of the slave it reads from is not sent back to the start of the queue.

The master dies before its last messages reached the slave (asynchronous replication), so a consumer that
read them from the master asks the slave for offsets past the slave's end.  4.9.3's getMessage corrects a
next offset only on a master (nextOffsetCorrection: a slave keeps the requested offset unless
offsetCheckInSlave), and a slave answers PULL_RETRY_IMMEDIATELY: the consumer waits where it is until the
messages arrive.  A slave answering the master's correction (0 for a queue whose minimum offset is 0) made
the Java and C++ consumers, which take nextBeginOffset from a PULL_RETRY_IMMEDIATELY answer, consume the
whole queue again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, TOPIC, caught_up, send, start_slave, stop

from rocketstore.client import PullConsumer
from rocketstore.remoting.transport import run


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as c:
        yield c


def test_a_consumer_ahead_of_the_slave_stays_where_it_is(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        run(send(cluster, 16))
        caught_up(cluster, slave)
        assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
        end = cluster.call(lambda: slave.store.max_offset(TOPIC, 0))
        assert end > 0
        # the master had more for queue 0 when it died; the consumer had read them there
        cluster.run(cluster.broker.close())

        async def pull_past_the_slave() -> list[tuple[str, int]]:
            async with PullConsumer(cluster.namesrv_addr, "ahead-group") as consumer:
                for _ in range(100):  # until the name server's route shows the slave alone
                    queues = [q for q in await consumer.queues(TOPIC) if q.queue_id == 0]
                    if queues:
                        break
                    await asyncio.sleep(0.05)
                answers = []
                for offset in (end, end + 1, end + 4):  # at the slave's end, one past it, further on
                    result = await consumer.pull(queues[0], offset, 32)
                    assert not result.messages
                    answers.append((result.status, result.next_begin_offset))
                return answers

        answers = run(pull_past_the_slave())
        assert [next_offset for _, next_offset in answers] == [end, end + 1, end + 4], answers
    finally:
        stop(cluster, slave)
