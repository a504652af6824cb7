"""``message print-queue`` / ``message print`` with ``--end TIME`` keep the messages stored at or before TIME.

The broker's search by time answers the message stored nearest TIME, and for a TIME past the last message that
last message's offset.  4.9.3's printMsgByQueue / printMsg read from there in pulls of 32 while the offset is
below that answer, so the last message comes out with the batch before it (measured against the 4.9.3 broker:
printMsg -e <later than every message> printed each queue's newest message).  Stopping before the answered
offset left the newest message of every queue out."""

from __future__ import annotations

import time
from typing import Any

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.remoting.transport import run

TOPIC = "EndTimeTopic"
#: messages sent to queue 0, then one to queue 1
COUNT = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("end-time") / "store") as c:
        c.create_topic(TOPIC, queues=2)

        async def traffic() -> None:
            async with Producer(c.namesrv_addr, "end-time-producer") as producer:
                for i in range(COUNT):
                    await producer.send(TOPIC, f"body {i}".encode(), queue_id=0)
                    time.sleep(0.005)  # apart in store time (the expectations below follow whatever is stored)
                await producer.send(TOPIC, b"other", queue_id=1)
        run(traffic())
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 0) == COUNT, 20, "every message in queue 0")
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 1) == 1, 20, "the message in queue 1")
        c.wait_dispatched()
        yield c


QUEUE = ("-t", TOPIC, "-b", "broker-a", "-i", "0")


def _stored(capsys: pytest.CaptureFixture[str], cluster: LocalCluster) -> list[int]:
    return [m["storeTimestamp"] for m in ok_json(capsys, cluster, "message", "print-queue", *QUEUE)["messages"]]


def test_an_end_past_the_last_message_reads_to_the_queues_end(cluster: LocalCluster,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    stored = _stored(capsys, cluster)
    for end in (stored[-1] + 60_000, stored[-1]):
        found = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--end", str(end))
        assert [m["queueOffset"] for m in found["messages"]] == list(range(COUNT))
        assert (found["endOffset"], found["nextOffset"]) == (COUNT, COUNT)
    everything = ok_json(capsys, cluster, "message", "print", "-t", TOPIC, "--end", str(stored[-1] + 60_000))
    assert sorted((m["queueId"], m["queueOffset"]) for m in everything["messages"]) == \
        [(0, i) for i in range(COUNT)] + [(1, 0)]


def test_an_end_keeps_exactly_the_messages_stored_at_or_before_it(cluster: LocalCluster,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    stored = _stored(capsys, cluster)
    for end in (stored[0] - 1, stored[0], stored[1], stored[2] - 1, stored[2]):
        found = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--end", str(end))
        expected = [i for i, ts in enumerate(stored) if ts <= end]
        assert [m["queueOffset"] for m in found["messages"]] == expected, (end, stored)
        assert found["endOffset"] == len(expected)
    # --begin by time and --end-offset are unchanged
    assert [m["queueOffset"] for m in ok_json(capsys, cluster, "message", "print-queue", *QUEUE,
                                              "--end-offset", "2")["messages"]] == [0, 1]
