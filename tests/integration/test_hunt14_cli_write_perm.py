"""``rocketstore broker-admin wipe-write-perm|add-write-perm`` take the broker name as mqadmin 4.9.3's
wipeWritePerm / addWritePerm do (``-b BROKER_NAME``), and still positionally; neither, or two different
names, is a usage error as a missing argument is."""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, ok_json, refused, rocketstore
from local_cluster import LocalCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("hunt14-cli-write-perm") / "store") as c:
        yield c


def test_write_perm_takes_mqadmins_b_option_and_the_positional_name(cluster: LocalCluster,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, cluster, "topic", "create", "PermTopic", "-b", cluster.broker_addr, "-r", "1", "-w", "1")
    cluster.wait_until(lambda: cluster.namesrv.routes.route("PermTopic") is not None, 20, "the topic's route")

    def perm() -> int:
        return int(cluster.namesrv.routes.route("PermTopic").queue_datas[0].perm)

    wiped = ok_json(capsys, cluster, "broker-admin", "wipe-write-perm", "-b", "broker-a")
    assert wiped["brokerName"] == "broker-a" and wiped["namesrvs"][0]["wipeTopicCount"] >= 1
    assert cluster.call(perm) == 4
    out = ok(capsys, cluster, "broker-admin", "add-write-perm", "--broker-name", "broker-a")
    assert out.rstrip().endswith("topic(s) of broker broker-a")
    assert cluster.call(perm) == 6
    ok(capsys, cluster, "broker-admin", "wipe-write-perm", "broker-a")  # the positional form still works
    assert cluster.call(perm) == 4
    ok(capsys, cluster, "broker-admin", "add-write-perm", "-b", "broker-a", "broker-a")  # the same name twice
    assert cluster.call(perm) == 6


@pytest.mark.parametrize("names", [(), ("-b", "broker-a", "broker-b"), ("-b", " ")])
def test_write_perm_without_one_name_is_a_usage_error(cluster: LocalCluster, capsys: pytest.CaptureFixture[str],
                                                      names: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as exited:  # as argparse refuses a missing argument
        rocketstore(capsys, cluster, "broker-admin", "add-write-perm", *names)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.splitlines()[-1].startswith("rocketstore broker-admin add-write-perm: error")
    assert "broker name" in err


def test_write_perm_of_an_unknown_broker_is_one_error_line(cluster: LocalCluster,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert "broker-z" in refused(capsys, cluster, "broker-admin", "wipe-write-perm", "-b", "broker-z")
