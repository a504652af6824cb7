"""CLI details against a real name server and broker (in process, as cli_calls runs the CLI): name and id
options trimmed as mqadmin trims them (``commandLine.getOptionValue(..).trim()``), and ``exporter --once``
refusing a cluster the name server does not know instead of printing a collection without a broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import ok, ok_json, refused
from local_cluster import LocalCluster

TOPIC = "TrimTopic"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    store: Path = tmp_path_factory.mktemp("store")
    with LocalCluster(store) as c:
        c.create_topic(TOPIC, queues=2)
        yield c


def test_trace_trims_its_topic_and_id(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, cluster, "trace", "  AC1100000000000000000000000000AB ", "-t", f" {TOPIC} ")
    assert out.strip() == f"no trace of AC1100000000000000000000000000AB in {TOPIC}"


def test_topic_group_and_cluster_names_are_trimmed(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    route = ok_json(capsys, cluster, "topic", "route", f"  {TOPIC}\t")
    assert [q["writeQueueNums"] for q in route["queueDatas"]] == [2]
    stats = ok_json(capsys, cluster, "topic", "status", f" {TOPIC} ")
    assert stats and all(row["topic"] == TOPIC for row in stats)
    listing = ok_json(capsys, cluster, "cluster", "list", "-c", " DefaultCluster ")
    assert listing and all(row["clusterName"] == "DefaultCluster" for row in listing)


def test_exporter_once_refuses_an_unknown_cluster(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, cluster, "exporter", "-c", "NoSuchCluster", "--once")
    assert "'NoSuchCluster' is not known to the name server (known: DefaultCluster)" in err
    samples = ok_json(capsys, cluster, "exporter", "-c", " DefaultCluster ", "--once")
    assert any(s["name"] == "rocketmq_broker_tps" and s["labels"]["cluster"] == "DefaultCluster" for s in samples)
