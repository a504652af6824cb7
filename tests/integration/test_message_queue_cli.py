"""``rocketstore message by-offset`` and ``message print-queue`` run in process against a real name server and
broker holding a queue of tagged messages: the message at an offset, a range by offsets and by store times,
tag filtering, the tag counts, and the one-line refusals."""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, ok_json, refused
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.producer import SendResult
from rocketstore.remoting.transport import run

TOPIC = "QueueCliTopic"
#: the tags of the messages sent to queue 0, in order (None: untagged)
TAGS = ["TagA", "TagB", "TagA", "TagA", None, "TagB", "TagC"]


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("queue-cli") / "store") as c:
        async def traffic() -> list[SendResult]:
            async with Producer(c.namesrv_addr, "queue-cli-producer") as producer:
                return [await producer.send(TOPIC, f"body {i}".encode(), tags=tag, keys=f"key-{i}", queue_id=0)
                        for i, tag in enumerate(TAGS)]
        results = run(traffic())
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 0) == len(TAGS), 20, "every message in queue 0")
        c.wait_dispatched()
        yield c, results


QUEUE = ("-t", TOPIC, "-b", "broker-a", "-i", "0")


def test_by_offset_prints_the_message_at_that_queue_offset(sent: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, results = sent
    found = ok_json(capsys, cluster, "message", "by-offset", *QUEUE, "-o", "2")
    assert (found["queueOffset"], found["tags"], found["keys"], found["body"]) == (2, "TagA", "key-2", "body 2")
    assert found["msgId"] == results[2].msg_id and found["offsetMsgId"] == results[2].offset_msg_id
    # the broker may be named by its master's address too
    text = ok(capsys, cluster, "message", "by-offset", "-t", TOPIC, "-b", cluster.broker_addr, "-i", "0", "-o", "5")
    assert "Queue:" in text and "0 @ offset 5" in text and "body 5" in text


def test_by_offset_refuses_an_offset_past_the_end_and_unknown_queues(sent: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = sent
    assert "no message at offset 7" in refused(capsys, cluster, "message", "by-offset", *QUEUE, "-o", "7")
    assert "no queues on broker 'broker-z'" in refused(capsys, cluster, "message", "by-offset", "-t", TOPIC,
                                                       "-b", "broker-z", "-i", "0", "-o", "0")
    assert "not 99" in refused(capsys, cluster, "message", "by-offset", "-t", TOPIC, "-b", "broker-a",
                               "-i", "99", "-o", "0")
    assert "NoSuchTopic" in refused(capsys, cluster, "message", "by-offset", "-t", "NoSuchTopic", "-b", "broker-a",
                                    "-i", "0", "-o", "0")


def test_print_queue_lists_the_range_and_counts_tags(sent: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = sent
    everything = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--tags-stats")
    assert (everything["beginOffset"], everything["endOffset"], everything["nextOffset"]) == (0, 7, 7)
    assert [m["body"] for m in everything["messages"]] == [f"body {i}" for i in range(7)]
    assert everything["tagCounts"] == {"TagA": 3, "TagB": 2, "TagC": 1}

    middle = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--begin-offset", "2", "--end-offset", "5")
    assert [m["queueOffset"] for m in middle["messages"]] == [2, 3, 4] and "tagCounts" not in middle

    only_b = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "-s", "TagB", "--tags-stats")
    assert [m["queueOffset"] for m in only_b["messages"]] == [1, 5] and only_b["tagCounts"] == {"TagB": 2}

    capped = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--max", "4")
    assert [m["queueOffset"] for m in capped["messages"]] == [0, 1, 2, 3] and capped["nextOffset"] == 4

    lines = ok(capsys, cluster, "message", "print-queue", *QUEUE, "--tags-stats", "--max", "3").splitlines()
    assert lines[0].split() == ["OFFSET", "MSG", "ID", "TAGS", "KEYS", "STORED", "BODY"]
    assert lines[1].split()[0] == "0" and lines[1].split()[2:4] == ["TagA", "key-0"]
    assert lines[4] == f"3 message(s) of {TOPIC} queue 0 on broker-a, queue offsets 0 .. 6 (stopped at --max)"
    assert [line.split() for line in lines[6:]] == [["TAG", "COUNT"], ["TagA", "2"], ["TagB", "1"]]


def test_print_queue_by_store_time(sent: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = sent
    stored = [m["storeTimestamp"] for m in ok_json(capsys, cluster, "message", "print-queue", *QUEUE)["messages"]]
    # a time past every message: 4.9.3's SEARCH_OFFSET_BY_TIMESTAMP answers the last message's offset
    later = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--begin", str(stored[-1] + 1))
    assert later["beginOffset"] == 6 and [m["queueOffset"] for m in later["messages"]] == [6]
    since_first = ok_json(capsys, cluster, "message", "print-queue", *QUEUE, "--begin", str(stored[0]))
    assert since_first["beginOffset"] == 0 and len(since_first["messages"]) == 7
    assert "not a time" in refused(capsys, cluster, "message", "print-queue", *QUEUE, "--begin", "yesterday")
