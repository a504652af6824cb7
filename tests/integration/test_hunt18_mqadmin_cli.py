"""mqadmin commands our CLI lacked, run in process against one real name server and broker.

``message print`` (printMsg): the messages of every readable queue of a topic, nothing committed, filtered by
tag, cut at --max over all queues together, bounded by store times as printMsg bounds each queue, refused
for an unknown topic.  ``send --broker`` / ``--trace`` (sendMessage -b -i -m): to one broker's queue or its
queues in turn, with a trace record that ``trace`` finds.  ``cluster list -m`` (clusterList -m): the messages
in / out today.  ``group progress -s`` (consumerProgress -s true): the IP of each queue's holder."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from cli_calls import ok, ok_json, refused, rocketstore
from local_cluster import LocalCluster

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.remoting.transport import run

TOPIC = "PrintMsgCliTopic"
SEND_TOPIC = "SendBrokerCliTopic"
#: (queue id, tag) of each message sent, in order
SENDS = [(0, "TagA"), (1, "TagB"), (0, "TagB"), (1, "TagA"), (0, "TagA"), (2, "TagC")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("print-msg-cli") / "store") as c:
        async def traffic() -> None:
            async with Producer(c.namesrv_addr, "print-msg-cli-producer") as producer:
                for i, (queue_id, tag) in enumerate(SENDS):
                    await producer.send(TOPIC, f"body {i}".encode(), tags=tag, keys=f"key-{i}", queue_id=queue_id)
        run(traffic())
        c.wait_until(lambda: sum(c.broker.store.max_offset(TOPIC, q) for q in range(3)) == len(SENDS), 20,
                     "every message stored")
        c.wait_dispatched()
        yield c


def test_print_reads_every_queue_of_the_topic(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    found = ok_json(capsys, cluster, "message", "print", "-t", TOPIC)
    bounds = {q["queueId"]: (q["beginOffset"], q["endOffset"], q["nextOffset"]) for q in found["queues"]}
    assert bounds == {0: (0, 3, 3), 1: (0, 2, 2), 2: (0, 1, 1), 3: (0, 0, 0)}
    assert {q["brokerName"] for q in found["queues"]} == {"broker-a"}
    assert [(m["queueId"], m["queueOffset"], m["body"]) for m in found["messages"]] == [
        (0, 0, "body 0"), (0, 1, "body 2"), (0, 2, "body 4"), (1, 0, "body 1"), (1, 1, "body 3"), (2, 0, "body 5")]
    assert all(m["brokerName"] == "broker-a" for m in found["messages"])
    # the tools group pulls without committing: no group appears with offsets for the topic
    assert "TOOLS_CONSUMER" not in ok(capsys, cluster, "group", "progress")


def test_print_filters_by_tag_and_stops_at_max(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    only_a = ok_json(capsys, cluster, "message", "print", "-t", TOPIC, "-s", "TagA")
    assert [m["body"] for m in only_a["messages"]] == ["body 0", "body 4", "body 3"]

    capped = ok_json(capsys, cluster, "message", "print", "-t", TOPIC, "--max", "4")
    assert [(m["queueId"], m["queueOffset"]) for m in capped["messages"]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [q["nextOffset"] for q in capped["queues"]] == [3, 1, 0, 0]

    lines = ok(capsys, cluster, "message", "print", "-t", TOPIC, "--max", "2").splitlines()
    assert lines[0].split() == ["BROKER", "QUEUE", "OFFSET", "MSG", "ID", "TAGS", "KEYS", "STORED", "BODY"]
    assert lines[1].split()[:3] == ["broker-a", "0", "0"] and lines[1].split()[4:6] == ["TagA", "key-0"]
    assert lines[3] == f"2 message(s) of {TOPIC} from 4 queue(s) (stopped at --max)"


def test_print_bounds_each_queue_by_store_time(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    # an end past every message is found as each queue's last message, which 4.9.3's printMsg prints too (its
    # pulls of 32 from below it; measured on 4.9.3 in session 30: 10 of 10; this test said "leaves out", which
    # 969c80c found wrong): every message, queue by queue
    later = ok_json(capsys, cluster, "message", "print", "-t", TOPIC, "--end", "2999-01-01T00:00:00")
    assert [m["body"] for m in later["messages"]] == ["body 0", "body 2", "body 4", "body 1", "body 3", "body 5"]
    # a begin before every message starts at each queue's first
    early = ok_json(capsys, cluster, "message", "print", "-t", TOPIC, "--begin", "1")
    assert len(early["messages"]) == len(SENDS)


def test_print_refuses_an_unknown_topic(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert "NoSuchPrintTopic" in refused(capsys, cluster, "message", "print", "-t", "NoSuchPrintTopic")


def test_send_to_a_broker_queue_and_to_its_queues_in_turn(cluster: LocalCluster,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, cluster, "topic", "create", SEND_TOPIC, "-b", cluster.broker_addr, "-w", "3", "-r", "3")
    chosen = ok_json(capsys, cluster, "send", SEND_TOPIC, "to two {i}", "-b", "broker-a", "--queue", "2",
                     "--count", "2")
    assert [(r["brokerName"], r["queueId"], r["queueOffset"]) for r in chosen] == [("broker-a", 2, 0),
                                                                                   ("broker-a", 2, 1)]
    turns = ok_json(capsys, cluster, "send", SEND_TOPIC, "turn {i}", "-b", "broker-a", "--count", "4")
    assert [r["queueId"] for r in turns] == [0, 1, 2, 0]
    assert "broker-z" in refused(capsys, cluster, "send", SEND_TOPIC, "x", "-b", "broker-z")
    assert "broker-z" in refused(capsys, cluster, "send", SEND_TOPIC, "x", "-b", "broker-z", "--queue", "0")


def test_send_with_trace_records_a_pub_the_trace_command_shows(cluster: LocalCluster,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    sent = ok_json(capsys, cluster, "send", SEND_TOPIC, "traced", "--keys", "traced-key", "--trace")
    msg_id = sent[0]["msgId"]
    deadline = time.monotonic() + 30  # the trace record is sent in the background after the send
    while True:
        status, out, err = rocketstore(capsys, cluster, "trace", msg_id, "--json")
        if status == 0 and "Pub" in out or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 0, err
    pubs = [v for v in json.loads(out)["traces"] if v["type"] == "Pub"]
    assert [(v["msgId"], v["keys"], v["status"]) for v in pubs] == [(msg_id, "traced-key", "success")], out


def test_cluster_list_more_stats_counts_todays_puts_and_gets(cluster: LocalCluster,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def today() -> tuple[int, int]:
        rows = ok_json(capsys, cluster, "cluster", "list", "-m")
        assert [(r["brokerName"], r["brokerId"]) for r in rows] == [("broker-a", 0)]
        assert (rows[0]["inTotalYest"], rows[0]["outTotalYest"]) == (0, 0)  # a broker started today
        return rows[0]["inTotalToday"], rows[0]["outTotalToday"]

    put_before, got_before = today()
    ok(capsys, cluster, "send", "MoreStatsCliTopic", "m {i}", "--count", "5")
    assert today() == (put_before + 5, got_before)
    cluster.wait_dispatched()  # in the consume queue the print reads (built a moment after each send)
    assert len(ok_json(capsys, cluster, "message", "print", "-t", "MoreStatsCliTopic")["messages"]) == 5
    assert today() == (put_before + 5, got_before + 5)

    lines = ok(capsys, cluster, "cluster", "list", "-m").splitlines()
    assert lines[0].split() == ["CLUSTER", "BROKER", "BID", "ADDR", "IN", "YESTERDAY", "OUT", "YESTERDAY", "IN",
                                "TODAY", "OUT", "TODAY"]
    assert lines[1].split()[4:] == ["0", "0", str(put_before + 5), str(got_before + 5)]


def test_group_progress_shows_the_client_ip_holding_each_queue(cluster: LocalCluster,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    topic, group = "ProgressIpCliTopic", "progress-ip-cli-group"
    ok(capsys, cluster, "topic", "create", topic, "-b", cluster.broker_addr, "-w", "2", "-r", "2")
    ok(capsys, cluster, "send", topic, "p {i}", "--count", "4")
    seen: list[bytes] = []

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in batch)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> tuple[Any, str, str]:
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, heartbeat_interval_s=0.5,
                                rebalance_interval_s=0.5, persist_interval_s=0.2) as consumer:
            deadline = time.monotonic() + 30
            while len(seen) < 4 or len(consumer.assignment(topic)) < 2:
                assert time.monotonic() < deadline, "the consumer never took both queues and every message"
                await asyncio.sleep(0.1)
            await consumer.persist_offsets()
            found = await asyncio.to_thread(ok_json, capsys, cluster, "group", "progress", group, "-t", topic, "-s")
            table = await asyncio.to_thread(ok, capsys, cluster, "group", "progress", group, "-t", topic, "-s")
            return found, table, consumer.client_id

    found, table, client_id = run(go())
    ip = client_id.split("@")[0]
    assert [(q["queueId"], q["clientIp"]) for q in found["queues"]] == [(0, ip), (1, ip)]
    lines = table.splitlines()
    assert lines[0].split()[:8] == ["TOPIC", "BROKER", "QID", "BROKER", "OFFSET", "CONSUMER", "OFFSET", "CLIENT"]
    assert [line.split()[5] for line in lines[1:3]] == [ip, ip]
    # no client online: each queue's IP is unknown
    offline = ok_json(capsys, cluster, "group", "progress", group, "-t", topic, "-s")
    assert [q["clientIp"] for q in offline["queues"]] == [None, None]
    # without -s the answer is as before
    assert "clientIp" not in ok_json(capsys, cluster, "group", "progress", group, "-t", topic)["queues"][0]
