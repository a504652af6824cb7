"""``rocketstore broker-admin consume-stats -l N`` (mqadmin brokerConsumeStats' ``-l`` "threshold of print
diff"): only the queues whose diff is at least N are printed; Diff Total stays the broker's."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.cli.main import main
from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run

TOPIC = "LevelTopic"
GROUP = "level-group"


@pytest.fixture()
def cluster(tmp_path: Any) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        async def traffic() -> None:
            async with Producer(c.namesrv_addr, "level-producer") as producer:
                for queue_id, count in ((0, 5), (1, 2)):
                    for i in range(count):
                        await producer.send(TOPIC, f"m{i}".encode(), queue_id=queue_id)
        run(traffic())
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 1) == 2, 20, "the messages of queue 1")

        async def consume() -> None:
            async with PullConsumer(c.namesrv_addr, GROUP) as consumer:
                for mq in await consumer.queues(TOPIC):
                    if mq.queue_id in (0, 1):
                        await consumer.pull(mq, 0, 1)  # the pull makes the subscription group
                        await consumer.commit_offset(mq, 1)  # diff 4 on queue 0, 1 on queue 1
        run(consume())
        c.wait_until(lambda: c.broker.offsets.query(GROUP, TOPIC, 1) == 1, 20, "the committed offsets")
        c.call(lambda: c.broker.stats.sample_windows(int(time.time() * 1000)))
        yield c


def test_consume_stats_level_leaves_out_queues_below_the_threshold(cluster: LocalCluster,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker-admin", "consume-stats", "-l", "2", "-n", cluster.namesrv_addr]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[1:] if line.startswith(TOPIC)]
    assert [(r[3], r[6]) for r in rows] == [("0", "4")]
    assert out.splitlines()[-1] == "Diff Total: 5"
    assert main(["broker-admin", "consume-stats", "--level", "2", "--json", "-n", cluster.namesrv_addr]) == 0
    [answer] = json.loads(capsys.readouterr().out)
    [progress] = answer["groups"][GROUP]
    assert [(q["queueId"], q["diff"]) for q in progress["queues"]] == [(0, 4)] and answer["totalDiff"] == 5
