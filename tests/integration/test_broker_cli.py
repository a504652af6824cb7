"""``rocketstore broker-admin status|stats|consume-stats|config get|config set`` run in process
(``rocketstore.cli.main.main([...])``) against a real broker and name server: tables, ``--json`` and the
one-line errors."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.cli.main import main
from rocketstore.client import Producer, PullConsumer
from rocketstore.remoting.transport import run

TOPIC = "CliStatsTopic"
GROUP = "cli-stats-group"
COUNT = 7


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("broker-cli") / "store") as c:
        async def traffic() -> None:
            async with Producer(c.namesrv_addr, "cli-stats-producer") as producer:
                for i in range(COUNT):
                    await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)
        run(traffic())
        c.wait_dispatched()
        c.wait_until(lambda: c.broker.store.max_offset(TOPIC, 0) == COUNT, 20, "every message in queue 0")

        async def consume() -> None:
            async with PullConsumer(c.namesrv_addr, GROUP) as consumer:
                [mq] = [q for q in await consumer.queues(TOPIC) if q.queue_id == 0]
                result = await consumer.pull(mq, 0, 32)
                assert len(result.messages) == COUNT
                await consumer.commit_offset(mq, COUNT - 2)  # two left to consume
        run(consume())
        c.wait_until(lambda: c.broker.offsets.query(GROUP, TOPIC, 0) == COUNT - 2, 20, "the committed offset")
        c.call(lambda: c.broker.stats.sample_windows(int(time.time() * 1000)))
        yield c


def rocketstore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def ok_json(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, *args: str) -> Any:
    status, out, err = rocketstore(capsys, "broker-admin", *args, "-n", cluster.namesrv_addr, "--json")
    assert status == 0, err
    return json.loads(out)


def test_status_prints_each_masters_runtime_figures(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    tables = ok_json(capsys, cluster, "status")
    assert list(tables) == [cluster.broker_addr]
    assert tables[cluster.broker_addr]["msgPutTotalTodayNow"] == str(COUNT)
    assert tables[cluster.broker_addr]["msgGetTotalTodayNow"] == str(COUNT)
    status, out, err = rocketstore(capsys, "broker-admin", "status", "-b", cluster.broker_addr,
                                   "-n", cluster.namesrv_addr)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["BROKER", "KEY", "VALUE"]
    assert [cluster.broker_addr, "msgPutTotalTodayNow", str(COUNT)] in [line.split() for line in lines]


def test_stats_prints_the_minute_hour_and_day_rows(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    found = ok_json(capsys, cluster, "stats", "-s", "GROUP_GET_NUMS", "-k", f"{TOPIC}@{GROUP}")
    windows = found[cluster.broker_addr]
    assert [windows[w]["sum"] for w in ("minute", "hour", "day")] == [COUNT, COUNT, COUNT]
    assert windows["minute"]["avgpt"] == COUNT  # one pull
    status, out, err = rocketstore(capsys, "broker-admin", "stats", "-s", "TOPIC_PUT_NUMS", "-k", TOPIC,
                                   "-n", cluster.namesrv_addr)
    assert status == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["TOPIC_PUT_NUMS", TOPIC] and rows[1] == ["BROKER", "WINDOW", "SUM", "TPS", "AVGPT"]
    assert [(r[1], r[2], r[4]) for r in rows[2:]] == [(w, str(COUNT), "1.00") for w in ("minute", "hour", "day")]


def test_an_unknown_stat_is_one_line_on_stderr(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = rocketstore(capsys, "broker-admin", "stats", "-s", "NO_SUCH_STATS", "-k", TOPIC,
                                   "-n", cluster.namesrv_addr)
    assert status == 1 and out == ""
    assert err.strip().splitlines() == [
        f"rocketstore: error: SYSTEM_ERROR (1): The stats <NO_SUCH_STATS> <{TOPIC}> not exist"]


def test_consume_stats_prints_each_queues_lag(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    [answer] = ok_json(capsys, cluster, "consume-stats")
    assert answer["brokerAddr"] == cluster.broker_addr and answer["totalDiff"] == 2
    [progress] = answer["groups"][GROUP]
    assert progress["queues"][0] | {"lastTimestamp": 0} == {
        "topic": TOPIC, "brokerName": cluster.broker_name, "queueId": 0, "brokerOffset": COUNT,
        "consumerOffset": COUNT - 2, "diff": 2, "lastTimestamp": 0}
    status, out, err = rocketstore(capsys, "broker-admin", "consume-stats", "-n", cluster.namesrv_addr)
    assert status == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0][:4] == ["TOPIC", "GROUP", "BROKER", "QID"]
    assert rows[1][:7] == [TOPIC, GROUP, cluster.broker_name, "0", str(COUNT), str(COUNT - 2), "2"]
    assert out.splitlines()[-1] == "Diff Total: 2"


def test_config_set_then_get_shows_the_new_value(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    before = ok_json(capsys, cluster, "config", "get")[cluster.broker_addr]
    assert before["shortPollingTimeMills"] == "1000"
    done = ok_json(capsys, cluster, "config", "set", "shortPollingTimeMills=1500", "-b", cluster.broker_addr)
    assert done == {"brokers": [cluster.broker_addr], "properties": {"shortPollingTimeMills": "1500"}}
    assert ok_json(capsys, cluster, "config", "get")[cluster.broker_addr]["shortPollingTimeMills"] == "1500"
    status, out, err = rocketstore(capsys, "broker-admin", "config", "get", "-n", cluster.namesrv_addr)
    assert status == 0, err
    assert [cluster.broker_addr, "shortPollingTimeMills", "1500"] in [line.split() for line in out.splitlines()]


def test_config_set_refusals_are_one_line(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = rocketstore(capsys, "broker-admin", "config", "set", "listenPort=70000",
                                   "-n", cluster.namesrv_addr)
    assert status == 1 and out == ""
    assert err.strip() == "rocketstore: error: SYSTEM_ERROR (1): listenPort 70000 out of range (nothing was changed)"
    # as 4.9.3: an unknown key or a value that does not convert is left as it was, the update answered
    # SUCCESS; the broker's remark is printed as one warning line
    status, out, err = rocketstore(capsys, "broker-admin", "config", "set", "listenPort=ten",
                                   "-n", cluster.namesrv_addr)
    assert status == 0 and "listenPort: 'ten' is not a Java int" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as usage:  # not KEY=VALUE: a usage error from argparse
        main(["broker-admin", "config", "set", "justakey", "-n", cluster.namesrv_addr])
    assert usage.value.code == 2
    assert "not KEY=VALUE" in capsys.readouterr().err
