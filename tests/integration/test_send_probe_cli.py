"""``rocketstore message check-rt``, ``message send-status`` and ``cluster rt`` run in process against a real
name server and broker: they really send (the broker's queues grow by what they report), say where each send
went, and refuse unknown topics, brokers and clusters before sending anything."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_calls import ok, refused
from local_cluster import LocalCluster

from rocketstore.cli.main import main

TOPIC = "ProbeTopic"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("probe-cli") / "store") as c:
        assert main(["topic", "create", TOPIC, "-b", c.broker_addr, "-r", "4", "-w", "4", "-n", c.namesrv_addr]) == 0
        c.wait_until(lambda: c.namesrv.routes.route(TOPIC) is not None, 20, "the topic's route")
        yield c


def stored(cluster: LocalCluster, topic: str, queues: int) -> list[int]:
    """Each queue's max offset (call it on the cluster's loop: through cluster.call or wait_until)."""
    return [cluster.broker.store.max_offset(topic, q) for q in range(queues)]


def test_check_rt_sends_over_every_queue_in_turn(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    before = cluster.call(lambda: stored(cluster, TOPIC, 4))
    found = json.loads(ok(capsys, cluster, "message", "check-rt", "-t", TOPIC, "-a", "8", "-s", "64", "--json"))
    samples = found["samples"]
    assert [(s["brokerName"], s["queueId"], s["ok"]) for s in samples] == \
        [("broker-a", i % 4, True) for i in range(8)]
    assert all(s["rtMs"] >= 0 for s in samples) and found["avgRtMs"] >= 0
    cluster.wait_until(lambda: stored(cluster, TOPIC, 4) == [b + 2 for b in before], 20, "two more per queue")
    lines = ok(capsys, cluster, "message", "check-rt", "-t", TOPIC, "-a", "2").splitlines()
    assert lines[0].split() == ["BROKER", "QID", "SENT", "RT", "ms"]
    assert lines[1].split()[:3] == ["broker-a", "0", "true"] and lines[2].split()[:3] == ["broker-a", "1", "true"]
    assert lines[3].startswith("Avg RT: ") and lines[3].endswith(" ms")


def test_check_rt_refuses_an_unknown_topic_without_sending(cluster: LocalCluster,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert "NoSuchProbeTopic" in refused(capsys, cluster, "message", "check-rt", "-t", "NoSuchProbeTopic", "-a", "2")
    assert cluster.call(lambda: cluster.broker.topics.get("NoSuchProbeTopic")) is None


def test_send_status_sends_to_the_brokers_own_topic(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    before = sum(cluster.call(lambda: stored(cluster, "broker-a", 1)))
    found = json.loads(ok(capsys, cluster, "message", "send-status", "-b", "broker-a", "-c", "3", "--json"))
    assert [(s["brokerName"], s["status"]) for s in found["samples"]] == [("broker-a", "SEND_OK")] * 3
    assert all(s["msgId"] for s in found["samples"])
    cluster.wait_until(lambda: sum(stored(cluster, "broker-a", 1)) == before + 4, 20, "the warm-up and 3 sends")
    lines = ok(capsys, cluster, "message", "send-status", "-b", "broker-a", "-c", "2").splitlines()
    assert lines[0].split() == ["N", "RT", "ms", "STATUS", "MSG", "ID", "QUEUE"]
    assert [line.split()[2] for line in lines[1:]] == ["SEND_OK", "SEND_OK"]
    assert "broker-z" in refused(capsys, cluster, "message", "send-status", "-b", "broker-z", "-c", "1")


def test_cluster_rt_reports_each_broker_per_round(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(ok(capsys, cluster, "cluster", "rt", "-a", "3", "--rounds", "2", "--interval-s", "0",
                         "--json"))
    assert [(r["round"], r["clusterName"], r["brokerName"], r["successCount"], r["failCount"]) for r in rows] == \
        [(1, "DefaultCluster", "broker-a", 3, 0), (2, "DefaultCluster", "broker-a", 3, 0)]
    lines = ok(capsys, cluster, "cluster", "rt", "-c", "DefaultCluster", "-a", "2").splitlines()
    assert lines[0].split() == ["ROUND", "CLUSTER", "BROKER", "AVG", "RT", "ms", "OK", "FAILED"]
    assert [lines[1].split()[i] for i in (0, 1, 2, 4, 5)] == ["1", "DefaultCluster", "broker-a", "2", "0"]
    assert "NoSuchCluster" in refused(capsys, cluster, "cluster", "rt", "-c", "NoSuchCluster", "-a", "1")
