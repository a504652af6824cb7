"""``rocketstore topic create -o true|false`` as mqadmin updateTopic takes it (``-o`` alone still means true)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

from rocketstore.cli.main import main


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_topic_create_takes_mqadmins_order_value(capsys: pytest.CaptureFixture[str], cluster: LocalCluster) -> None:
    b = ("-b", cluster.broker_addr)
    assert ok_json(capsys, cluster, "topic", "create", "OrderTrue", *b, "-o", "true", "-w", "2", "-r", "2")["order"]
    assert not ok_json(capsys, cluster, "topic", "create", "OrderFalse", *b, "-o", "false")["order"]
    assert ok_json(capsys, cluster, "topic", "create", "OrderFlag", *b, "-o")["order"]
    assert not ok_json(capsys, cluster, "topic", "create", "OrderNone", *b)["order"]
    assert ok_json(capsys, cluster, "kv", "get", "ORDER_TOPIC_CONFIG", "OrderTrue")["value"] == "broker-a:2"
    with pytest.raises(SystemExit) as exit_info:
        main(["topic", "create", "OrderBad", *b, "-o", "maybe", "-n", cluster.namesrv_addr])
    assert exit_info.value.code == 2
    assert "argument -o/--order: not true or false: 'maybe'" in capsys.readouterr().err
