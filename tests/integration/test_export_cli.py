"""``rocketstore export metadata|configs|metrics`` and ``broker-admin stats-all``, run in process against a real
name server and two master brokers of one cluster (broker-a from LocalCluster, broker-b started beside it):
the files' JSON against what RocketMQ 4.9.3's classes serialise (TopicConfigSerializeWrapper,
SubscriptionGroupWrapper, exportMetadata's map, exportConfigs' and exportMetrics' maps), what stats-all
prints, and the one-line refusals."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok, ok_json, refused, rocketstore
from local_cluster import LocalCluster

from rocketstore.broker import Broker
from rocketstore.cli.export_cmds import fastjson_pretty
from rocketstore.cli.main import main
from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PullConsumer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.transaction_producer import LocalTransactionState, TransactionProducer
from rocketstore.remoting.transport import run

CLUSTER = "DefaultCluster"
SHARED_TOPIC = "ExpShared"  # 4 queues on broker-a, 2 on broker-b
ONLY_A_TOPIC = "ExpOnlyA"  # 3 queues on broker-a: the delayed and the transactional message go here
STATS_TOPIC = "ExpStats"  # 1 queue on broker-a: 6 messages, 4 of them pulled by STATS_GROUP
LONELY_TOPIC = "ExpLonely"  # 1 queue on broker-a: 1 message, nobody consumes it
IDLE_TOPIC = "ExpIdle"  # 1 queue on broker-a: nothing sent
GROUP = "exp-group"  # made on both masters with retryQueueNums 1
PUSH_GROUP = "exp-push"  # a push consumer of SHARED_TOPIC, connected while the tests run
STATS_GROUP = "exp-stats-group"
SYS_GROUP = "CID_RMQ_SYS_EXPORT"  # a group 4.9.3 counts as a system one
SENT, PULLED = 6, 4


@dataclass
class Setup:
    cluster: LocalCluster
    broker_b: Broker
    push: PushConsumer


def admin_call(cluster: LocalCluster, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await fn(admin)

    return run(go())


def _send(cluster: LocalCluster, topic: str, count: int, properties: dict[str, str] | None = None) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "exp-producer") as producer:
            for i in range(count):
                result = await producer.send(topic, f"message {i}".encode(), properties=properties, queue_id=0)
                assert result.status == "SEND_OK"

    run(go())


def _prepare(cluster: LocalCluster, broker_b: Broker) -> None:
    """Topics, groups and messages: what the exports and stats-all then report."""
    for addr, topic, queues in ((cluster.broker_addr, SHARED_TOPIC, 4), (broker_b.address, SHARED_TOPIC, 2),
                                (cluster.broker_addr, ONLY_A_TOPIC, 3), (cluster.broker_addr, STATS_TOPIC, 1),
                                (cluster.broker_addr, LONELY_TOPIC, 1), (cluster.broker_addr, IDLE_TOPIC, 1)):
        admin_call(cluster, lambda a, addr=addr, topic=topic, queues=queues: a.create_topic(
            topic, broker_addr=addr, read_queue_nums=queues, write_queue_nums=queues))
    for topic in (SHARED_TOPIC, ONLY_A_TOPIC, STATS_TOPIC, LONELY_TOPIC, IDLE_TOPIC):
        cluster.wait_until(lambda topic=topic: cluster.namesrv.routes.route(topic) is not None, 20, f"{topic}'s route")
    cluster.wait_until(lambda: len(cluster.namesrv.routes.route(SHARED_TOPIC).queue_datas) == 2, 20,
                       "both brokers' queues of the shared topic")
    admin_call(cluster, lambda a: a.update_subscription_group(GROUP, cluster=CLUSTER, retry_queue_nums=1,
                                                              retry_max_times=5))
    admin_call(cluster, lambda a: a.update_subscription_group(SYS_GROUP, cluster=CLUSTER))

    _send(cluster, STATS_TOPIC, SENT)
    _send(cluster, LONELY_TOPIC, 1)
    _send(cluster, ONLY_A_TOPIC, 1, {"DELAY": "1"})  # stored in SCHEDULE_TOPIC_XXXX first

    async def in_transaction() -> None:
        async with TransactionProducer(cluster.namesrv_addr, "exp-tx", lambda m: LocalTransactionState.COMMIT_MESSAGE
                                       ) as producer:
            await producer.send_in_transaction(ONLY_A_TOPIC, b"tx", lambda m, arg: LocalTransactionState.COMMIT_MESSAGE)

    run(in_transaction())
    # the delayed message and the committed one both reach their topic: nothing changes after this
    cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(ONLY_A_TOPIC, q) for q in range(3)) == 2, 30,
                       "the delayed and the committed message in their topic")

    async def pull() -> None:
        async with PullConsumer(cluster.namesrv_addr, STATS_GROUP) as consumer:
            [mq] = await consumer.queues(STATS_TOPIC)
            result = await consumer.pull(mq, 0, PULLED)
            assert len(result.messages) == PULLED
            await consumer.commit_offset(mq, result.next_begin_offset)

    run(pull())
    cluster.wait_until(lambda: cluster.broker.offsets.query(STATS_GROUP, STATS_TOPIC, 0) == PULLED, 20,
                       "the committed offset")
    cluster.wait_dispatched()
    now_ms = int(time.time() * 1000)
    cluster.call(lambda: cluster.broker.stats.sample_windows(now_ms))
    cluster.call(lambda: broker_b.stats.sample_windows(now_ms))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("export-cli")
    with LocalCluster(root / "store-a") as cluster:
        broker_b = cluster.start_broker(root / "store-b")
        try:
            cluster.wait_until(lambda: "broker-b" in cluster.namesrv.routes.cluster_info()["brokerAddrTable"], 20,
                               "broker-b's registration")
            _prepare(cluster, broker_b)

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.CONSUME_SUCCESS

            push = PushConsumer(cluster.namesrv_addr, PUSH_GROUP, {SHARED_TOPIC: "*"}, handle,
                                heartbeat_interval_s=0.5, rebalance_interval_s=0.5)
            cluster.run(push.start())
            try:
                for broker in (cluster.broker, broker_b):
                    cluster.wait_until(lambda b=broker: b.clients.group(PUSH_GROUP) is not None
                                       and b.topics.get(f"%RETRY%{PUSH_GROUP}") is not None, 20,
                                       f"{broker.config.broker_name}: the push consumer's heartbeat")
                yield Setup(cluster, broker_b, push)
            finally:
                cluster.run(push.shutdown())
        finally:
            cluster.run(broker_b.close())


def topic_json(name: str, queues: int) -> dict[str, Any]:
    """A TopicConfig as 4.9.3 serialises it (fastjson: its seven fields)."""
    return {"order": False, "perm": 6, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG", "topicName": name,
            "topicSysFlag": 0, "writeQueueNums": queues}


def group_json(name: str, retry_queue_nums: int, retry_max_times: int = 16) -> dict[str, Any]:
    """A SubscriptionGroupConfig as 4.9.3 serialises it."""
    return {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True, "consumeFromMinEnable": True,
            "groupName": name, "notifyConsumerIdsChangedEnable": True, "retryMaxTimes": retry_max_times,
            "retryQueueNums": retry_queue_nums, "whichBrokerWhenConsumeSlowly": 1}


def read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    document = json.loads(text)
    assert text == fastjson_pretty(document) and text.startswith("{\n\t\"")  # fastjson's pretty layout
    return document


# --- export metadata ----------------------------------------------------------------------------------------


def test_metadata_of_a_cluster_merges_its_masters_user_topics_and_groups(
        setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before_ms = int(time.time() * 1000)
    out = ok(capsys, setup.cluster, "export", "metadata", "-c", CLUSTER, "-f", str(tmp_path))
    assert out == f"export {tmp_path / 'metadata.json'} success\n"
    document = read(tmp_path / "metadata.json")
    assert set(document) == {"topicConfigTable", "subscriptionGroupTable", "exportTime"}
    assert before_ms <= document["exportTime"] <= int(time.time() * 1000)
    # system topics (TBW102, SELF_TEST_TOPIC, SCHEDULE_TOPIC_XXXX, the cluster's and brokers' own, ...) and
    # the %RETRY% topic of the push consumer are left out; the shared topic's queues are summed
    assert document["topicConfigTable"] == {
        SHARED_TOPIC: topic_json(SHARED_TOPIC, 6), ONLY_A_TOPIC: topic_json(ONLY_A_TOPIC, 3),
        STATS_TOPIC: topic_json(STATS_TOPIC, 1), LONELY_TOPIC: topic_json(LONELY_TOPIC, 1),
        IDLE_TOPIC: topic_json(IDLE_TOPIC, 1)}
    # TOOLS_CONSUMER, SELF_TEST_C_GROUP, CID_RMQ_SYS_* ... left out; retryQueueNums summed over both masters
    groups = document["subscriptionGroupTable"]
    assert set(groups) == {GROUP, PUSH_GROUP, STATS_GROUP}
    assert groups[GROUP] == group_json(GROUP, 2, retry_max_times=5)
    assert groups[PUSH_GROUP] == group_json(PUSH_GROUP, 2)
    assert groups[STATS_GROUP] == group_json(STATS_GROUP, 1)  # auto-created by its pull on broker-a only

    answer = ok_json(capsys, setup.cluster, "export", "metadata", "-c", CLUSTER, "-f", str(tmp_path / "j"),
                     "--special-topics")
    assert answer == {"path": str(tmp_path / "j" / "metadata.json"), "topics": 6, "groups": 3}
    special = read(tmp_path / "j" / "metadata.json")["topicConfigTable"]
    assert special[f"%RETRY%{PUSH_GROUP}"] == topic_json(f"%RETRY%{PUSH_GROUP}", 2)  # one queue on each master


def test_metadata_topics_or_groups_only(setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, setup.cluster, "export", "metadata", "-c", CLUSTER, "-f", str(tmp_path), "-t")  # mqadmin's letter
    assert out == f"export {tmp_path / 'topic.json'} success\n"
    topics = read(tmp_path / "topic.json")
    assert set(topics) == {"topicConfigTable", "exportTime"} and len(topics["topicConfigTable"]) == 5
    ok(capsys, setup.cluster, "export", "metadata", "-c", CLUSTER, "-f", str(tmp_path), "--groups-only")
    groups = read(tmp_path / "subscriptionGroup.json")
    assert set(groups) == {"subscriptionGroupTable", "exportTime"} and len(groups["subscriptionGroupTable"]) == 3
    assert not (tmp_path / "metadata.json").exists()


def test_metadata_of_one_broker_writes_its_wrappers(setup: Setup, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cluster, broker_b = setup.cluster, setup.broker_b
    ok(capsys, cluster, "export", "metadata", "-b", broker_b.address, "-f", str(tmp_path), "--topics-only")
    wrapper = read(tmp_path / "topic.json")  # TopicConfigSerializeWrapper, as the broker keeps it
    assert wrapper == {"dataVersion": cluster.call(lambda: broker_b.topics.data_version.to_json()),
                       "topicConfigTable": {SHARED_TOPIC: topic_json(SHARED_TOPIC, 2)}}
    assert set(wrapper["dataVersion"]) == {"counter", "timestamp"}
    ok(capsys, cluster, "export", "metadata", "-b", broker_b.address, "-f", str(tmp_path), "-g")
    groups = read(tmp_path / "subscriptionGroup.json")  # SubscriptionGroupWrapper
    assert groups == {"dataVersion": cluster.call(lambda: broker_b.groups.data_version.to_json()),
                      "subscriptionGroupTable": {GROUP: group_json(GROUP, 1, retry_max_times=5),
                                                 PUSH_GROUP: group_json(PUSH_GROUP, 1)}}
    # neither flag: that broker's metadata.json (4.9.3 writes nothing for -b alone)
    answer = ok_json(capsys, cluster, "export", "metadata", "-b", cluster.broker_addr, "-f", str(tmp_path))
    assert answer == {"path": str(tmp_path / "metadata.json"), "topics": 5, "groups": 3}
    assert read(tmp_path / "metadata.json")["topicConfigTable"][SHARED_TOPIC] == topic_json(SHARED_TOPIC, 4)


def test_metadata_goes_to_export_in_the_working_directory_by_default(
        setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert ok(capsys, setup.cluster, "export", "metadata", "-c", CLUSTER) == "export export/metadata.json success\n"
    assert len(read(tmp_path / "export" / "metadata.json")["topicConfigTable"]) == 5


# --- export configs / metrics -------------------------------------------------------------------------------


def test_configs_keeps_4_9_3s_broker_properties_and_the_cluster_scale(
        setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, setup.cluster, "export", "configs", "-c", CLUSTER, "-f", str(tmp_path))
    assert out == f"export {tmp_path / 'configs.json'} success\n"

    def kept(name: str) -> dict[str, str]:  # 4.9.3's defaults, as a broker of that name reports them
        return {"brokerClusterName": CLUSTER, "brokerId": "0", "brokerName": name, "brokerRole": "ASYNC_MASTER",
                "fileReservedTime": "72", "filterServerNums": "0", "flushDiskType": "ASYNC_FLUSH",
                "maxMessageSize": "4194304",
                "messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
                "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC", "slaveReadEnable": "false", "traceOn": "true",
                "traceTopicEnable": "false", "useTLS": "false", "autoCreateTopicEnable": "true",
                "autoCreateSubscriptionGroup": "true"}

    assert read(tmp_path / "configs.json") == {
        "brokerConfigs": {"broker-a": kept("broker-a"), "broker-b": kept("broker-b")},
        "clusterScale": {"namesrvSize": 1, "masterBrokerSize": 2, "slaveBrokerSize": 0}}


def test_metrics_report_each_master_and_the_totals(setup: Setup, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cluster = setup.cluster
    answer = ok_json(capsys, cluster, "export", "metrics", "-c", CLUSTER, "-f", str(tmp_path))
    assert answer == {"path": str(tmp_path / "metrics.json"), "brokers": ["broker-a", "broker-b"]}
    document = read(tmp_path / "metrics.json")
    assert set(document) == {"evaluateReport", "totalData"}
    report = document["evaluateReport"]
    assert set(report) == {"broker-a", "broker-b"}
    table = admin_call(cluster, lambda a: a.runtime_info(cluster.broker_addr))
    a = report["broker-a"]
    # cpuNum is the broker's clientCallbackExecutorThreads; a 4.9.3 broker has no totalMemKBytes figure, so
    # fastjson leaves the null out
    assert a["runtimeEnv"] == {"cpuNum": str(os.cpu_count())}
    quota = a["runtimeQuota"]
    assert set(quota) == {"diskRatio", "tps", "oneDayNum", "messageAverageSize", "topicSize", "groupSize"}
    assert set(quota["diskRatio"]) == {"commitLogDiskRatio", "consumeQueueDiskRatio"}
    assert float(quota["diskRatio"]["commitLogDiskRatio"]) == pytest.approx(float(table["commitLogDiskRatio"]),
                                                                           abs=0.02)
    assert set(quota["tps"]) == {"normalInTps", "normalOutTps", "transInTps", "scheduleInTps"}
    assert all(isinstance(v, float) and v >= 0 for v in quota["tps"].values())
    assert quota["tps"]["transInTps"] > 0 and quota["tps"]["scheduleInTps"] > 0  # one put each this minute
    # no midnight since the broker started: the normal day counts are 0; the half message and the delayed
    # one are the day's puts of RMQ_SYS_TRANS_HALF_TOPIC and SCHEDULE_TOPIC_XXXX
    assert quota["oneDayNum"] == {"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 1,
                                  "scheduleOneDayInNum": 1}
    assert quota["messageAverageSize"] == table["putMessageAverageSize"]
    assert (quota["topicSize"], quota["groupSize"]) == (5, 3)
    assert a["runtimeVersion"] == {"rocketmqVersion": "V4_9_3", "clientInfo": ["JAVA%V4_9_3"]}

    b = report["broker-b"]["runtimeQuota"]
    assert b["oneDayNum"] == {"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 0,
                              "scheduleOneDayInNum": 0}
    assert (b["tps"]["transInTps"], b["tps"]["scheduleInTps"]) == (0.0, 0.0)  # no such stat item there
    assert (b["topicSize"], b["groupSize"]) == (1, 2)
    totals = document["totalData"]
    assert totals["totalOneDayNum"] == {"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 1,
                                        "scheduleOneDayInNum": 1}
    tps = {name: report[name]["runtimeQuota"]["tps"] for name in report}
    assert totals["totalTps"] == pytest.approx({
        "totalNormalInTps": tps["broker-a"]["normalInTps"] + tps["broker-b"]["normalInTps"],
        "totalNormalOutTps": tps["broker-a"]["normalOutTps"] + tps["broker-b"]["normalOutTps"],
        "totalTransInTps": tps["broker-a"]["transInTps"], "totalScheduleInTps": tps["broker-a"]["scheduleInTps"]})


# --- stats-all ----------------------------------------------------------------------------------------------


def test_stats_all_of_a_topic_shows_its_group_lag_rates_and_day_counts(
        setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    [row] = ok_json(capsys, setup.cluster, "broker-admin", "stats-all", "-t", STATS_TOPIC)
    assert (row["topic"], row["group"], row["accumulation"], row["inMsg24Hour"], row["outMsg24Hour"]) == \
        (STATS_TOPIC, STATS_GROUP, SENT - PULLED, SENT, PULLED)
    assert 0 < row["inTps"] <= SENT / 10 and 0 < row["outTps"] <= PULLED / 10  # over at least 10 s
    lines = ok(capsys, setup.cluster, "broker-admin", "stats-all", "-t", STATS_TOPIC).splitlines()
    assert lines[0].split() == ["#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS",
                                "#InMsg24Hour", "#OutMsg24Hour"]
    [fields] = [line.split() for line in lines[1:]]
    assert fields[:3] == [STATS_TOPIC, STATS_GROUP, str(SENT - PULLED)] and fields[5:] == [str(SENT), str(PULLED)]
    assert all(len(f.split(".")[1]) == 2 for f in fields[3:5])  # rates with two decimals, as statsAll prints


def test_stats_all_marks_a_topic_nobody_consumes(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    [row] = ok_json(capsys, setup.cluster, "broker-admin", "stats-all", "-t", LONELY_TOPIC)
    assert row == {"topic": LONELY_TOPIC, "group": None, "accumulation": 0, "inTps": row["inTps"], "outTps": None,
                   "inMsg24Hour": 1, "outMsg24Hour": None}
    [line] = ok(capsys, setup.cluster, "broker-admin", "stats-all", "-t", LONELY_TOPIC).splitlines()[1:]
    assert line.split()[0] == LONELY_TOPIC and line.split()[-2:] == ["1", "NO_CONSUMER"]


def test_stats_all_lists_every_topic_but_retry_and_dlq_and_active_keeps_the_busy_ones(
        setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    rows = ok_json(capsys, setup.cluster, "broker-admin", "stats-all")
    pairs = {(r["topic"], r["group"]) for r in rows}
    assert {(STATS_TOPIC, STATS_GROUP), (LONELY_TOPIC, None), (IDLE_TOPIC, None), (SHARED_TOPIC, PUSH_GROUP),
            ("TBW102", None)} <= pairs
    assert not any(r["topic"].startswith(("%RETRY%", "%DLQ%")) for r in rows)
    active = {(r["topic"], r["group"]) for r in ok_json(capsys, setup.cluster, "broker-admin", "stats-all",
                                                        "--active")}
    assert {(STATS_TOPIC, STATS_GROUP), (LONELY_TOPIC, None)} <= active
    assert not {(IDLE_TOPIC, None), (SHARED_TOPIC, PUSH_GROUP), ("TBW102", None)} & active


# --- refusals -----------------------------------------------------------------------------------------------


def test_unknown_clusters_brokers_and_topics_are_refused_in_one_line(
        setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = setup.cluster
    for what in ("metadata", "configs", "metrics"):
        err = refused(capsys, cluster, "export", what, "-c", "NoSuchCluster", "-f", str(tmp_path))
        assert "cluster 'NoSuchCluster' is not known" in err
    refused(capsys, cluster, "export", "metadata", "-b", "127.0.0.1:1", "-f", str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    refused(capsys, cluster, "export", "metadata", "-c", CLUSTER, "-f", str(blocker))
    assert "is not known" in refused(capsys, cluster, "broker-admin", "stats-all", "-t", "NoSuchTopic")


@pytest.mark.parametrize("args", [["export", "metadata"], ["export", "configs"],
                                  ["export", "metadata", "-c", CLUSTER, "--topics-only", "--groups-only"],
                                  ["export", "metadata", "-c", CLUSTER, "-b", "127.0.0.1:1"]])
def test_bad_arguments_are_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main([*args, "-n", "127.0.0.1:1"])
    assert usage.value.code == 2 and "usage:" in capsys.readouterr().err


def test_stats_all_answers_without_rows_for_an_empty_filter(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = rocketstore(capsys, setup.cluster, "broker-admin", "stats-all", "-t", IDLE_TOPIC, "--active")
    assert (status, err) == (0, "") and out.splitlines()[1:] == []
