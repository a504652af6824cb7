"""The CLI prints a range of queue offsets one way: both ends included.

``message by-offset`` past the end said the queue "holds offsets 0 .. 2" (three messages), while
``message print-queue`` closed with "queue offsets 0 .. 3" and ``topic cq`` with "queue offsets 0 .. 3" for
the same queue: the end excluded, as mqadmin's numbers are (printMsg's ``maxOffset=3``, queryCq's ``max: 3``: the
offset the next message gets), but written as a range a reader takes as inclusive.  Now all three say
``0 .. 2``; an empty range is ``none``; --json keeps mqadmin's end-excluded numbers (endOffset,
maxQueueIndex).
"""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, ok_json, refused
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.remoting.transport import run

TOPIC = "Hunt31SmallfixRanges"
QUEUE = ("-t", TOPIC, "-b", "broker-a", "-i", "0")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("ranges") / "store") as c:
        c.create_topic(TOPIC, 2)

        async def traffic() -> None:
            async with Producer(c.namesrv_addr, "hunt31-smallfix-ranges") as producer:
                for i in range(3):
                    await producer.send(TOPIC, f"body {i}".encode(), queue_id=0)

        run(traffic())
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 0) == 3, 20, "three messages in queue 0")
        c.wait_dispatched()
        yield c


def test_by_offset_print_queue_and_cq_print_one_range(cluster: LocalCluster,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert "it holds offsets 0 .. 2" in refused(capsys, cluster, "message", "by-offset", *QUEUE, "-o", "5")
    last = ok(capsys, cluster, "message", "print-queue", *QUEUE).splitlines()[-1]
    assert last == f"3 message(s) of {TOPIC} queue 0 on broker-a, queue offsets 0 .. 2"
    cq = ok(capsys, cluster, "topic", "cq", TOPIC, "-q", "0").splitlines()
    assert cq[0] == f"{TOPIC} queue 0 on {cluster.broker_addr}: queue offsets 0 .. 2"
    # --json: the end excluded, as mqadmin prints maxOffset
    assert ok_json(capsys, cluster, "message", "print-queue", *QUEUE)["endOffset"] == 3
    assert ok_json(capsys, cluster, "topic", "cq", TOPIC, "-q", "0")["maxQueueIndex"] == 3


def test_an_empty_range_prints_none(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    empty = ok(capsys, cluster, "message", "print-queue", "-t", TOPIC, "-b", "broker-a", "-i", "1")
    assert empty.splitlines()[-1] == f"0 message(s) of {TOPIC} queue 1 on broker-a, queue offsets none"
    part = ok(capsys, cluster, "message", "print-queue", *QUEUE, "--begin-offset", "1", "--end-offset", "2")
    assert part.splitlines()[-1] == f"1 message(s) of {TOPIC} queue 0 on broker-a, queue offsets 1 .. 1"
