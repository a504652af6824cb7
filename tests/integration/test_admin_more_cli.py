"""``rocketstore topic delete|route|clusters|perm|allocate``, ``group delete|connections|config``, ``producer
connections``, ``cluster list`` and ``broker-admin wipe-write-perm|add-write-perm``, run in process
(``rocketstore.cli.main.main([...])``) against a real name server and broker: what they print as tables and
as ``--json``, what they change on the broker and name server, and their one-line refusals."""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, ok_json, refused
from local_cluster import LocalCluster

from rocketstore.cli.main import main
from rocketstore.client import PullConsumer
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.transport import run

CLUSTER = "DefaultCluster"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("admin-more-cli") / "store") as c:
        yield c


def create_topic(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, topic: str, queues: int = 4) -> None:
    ok(capsys, cluster, "topic", "create", topic, "-b", cluster.broker_addr, "-r", str(queues), "-w", str(queues))
    cluster.wait_until(lambda: cluster.namesrv.routes.route(topic) is not None, 20,
                       f"the name server's route of {topic}")


# --- topic ----------------------------------------------------------------------------------------------------


def test_topic_route_prints_each_broker_and_the_totals(cluster: LocalCluster,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "RouteTopic", 3)
    route = ok_json(capsys, cluster, "topic", "route", "RouteTopic")
    assert route["brokerDatas"] == [{"brokerAddrs": {"0": cluster.broker_addr}, "brokerName": "broker-a",
                                     "cluster": CLUSTER}]
    [queue_data] = route["queueDatas"]
    assert (queue_data["brokerName"], queue_data["readQueueNums"], queue_data["writeQueueNums"],
            queue_data["perm"]) == ("broker-a", 3, 3, 6)
    lines = [line.split() for line in ok(capsys, cluster, "topic", "route", "RouteTopic").splitlines()]
    assert lines[0][:2] == ["CLUSTER", "BROKER"]
    assert lines[1] == [CLUSTER, "broker-a", f"0={cluster.broker_addr}", "3", "3", "6"]
    assert lines[2] == ["Total:", "1", "3", "3"]


def test_topic_clusters_names_the_cluster_holding_it(cluster: LocalCluster,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "ClusterTopic")
    assert ok(capsys, cluster, "topic", "clusters", "ClusterTopic").splitlines() == [CLUSTER]
    assert ok_json(capsys, cluster, "topic", "clusters", "ClusterTopic") == [CLUSTER]


def test_topic_list_with_consumers_names_each_topics_cluster_and_groups(cluster: LocalCluster,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """mqadmin topicList -c: a row per (topic, consuming group), the topic's cluster beside it; a topic nobody
    consumes gets one row without a group; retry and DLQ topics are left out."""
    create_topic(capsys, cluster, "ListedTopic", 1)
    create_topic(capsys, cluster, "UnconsumedTopic", 1)
    cluster.call(lambda: cluster.broker.offsets.commit("listing-group", "ListedTopic", 0, 1))
    ok(capsys, cluster, "group", "update", "listing-group")
    cluster.call(lambda: cluster.broker.topics.create_retry_or_dlq("%RETRY%listing-group", 1))
    cluster.call(lambda: cluster.broker.registrar.request_registration())
    cluster.wait_until(lambda: cluster.namesrv.routes.route("%RETRY%listing-group") is not None, 20,
                       "the retry topic's route")
    rows = {r["topic"]: r for r in ok_json(capsys, cluster, "topic", "list", "-c")}
    assert rows["ListedTopic"] == {"clusterName": CLUSTER, "topic": "ListedTopic", "consumerGroups": ["listing-group"]}
    assert rows["UnconsumedTopic"] == {"clusterName": CLUSTER, "topic": "UnconsumedTopic", "consumerGroups": []}
    assert not [t for t in rows if t.startswith(("%RETRY%", "%DLQ%"))]
    lines = [line.split() for line in ok(capsys, cluster, "topic", "list", "--consumers").splitlines()]
    assert lines[0] == ["CLUSTER", "TOPIC", "CONSUMER", "GROUP"]
    assert [CLUSTER, "ListedTopic", "listing-group"] in lines and [CLUSTER, "UnconsumedTopic", "-"] in lines


def test_topic_perm_changes_the_masters_topic_config(cluster: LocalCluster,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "PermTopic", 2)
    out = ok(capsys, cluster, "topic", "perm", "PermTopic", "-p", "4")
    assert out.strip() == f"topic PermTopic on broker-a ({cluster.broker_addr}): perm 6 -> 4"
    config = cluster.call(lambda: cluster.broker.topics.get("PermTopic"))
    assert config is not None and (config.perm, config.read_queue_nums, config.write_queue_nums) == (4, 2, 2)
    cluster.wait_until(lambda: cluster.namesrv.routes.route("PermTopic").queue_datas[0].perm == 4, 20,
                       "the re-registered perm")
    [same] = ok_json(capsys, cluster, "topic", "perm", "PermTopic", "-p", "4", "-b", cluster.broker_addr)
    assert (same["oldPerm"], same["newPerm"], same["changed"]) == (4, 4, False)
    with pytest.raises(SystemExit) as usage:
        main(["topic", "perm", "PermTopic", "-p", "5", "-n", cluster.namesrv_addr])
    assert usage.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert "is not the master" in refused(capsys, cluster, "topic", "perm", "PermTopic", "-p", "6",
                                          "-b", "127.0.0.1:1")


def test_topic_allocate_shares_the_queues_averagely(cluster: LocalCluster,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "AllocTopic", 5)
    shares = ok_json(capsys, cluster, "topic", "allocate", "AllocTopic", "--ip-list", "10.0.0.2,10.0.0.1")
    assert {cid: [q["queueId"] for q in queues] for cid, queues in shares["result"].items()} == \
        {"10.0.0.1": [0, 1, 2], "10.0.0.2": [3, 4]}
    rows = [line.split() for line in ok(capsys, cluster, "topic", "allocate", "AllocTopic", "-i",
                                        "10.0.0.1,10.0.0.2").splitlines()]
    assert rows == [["CLIENT", "BROKER", "QUEUES"], ["10.0.0.1", "broker-a", "0,1,2"], ["10.0.0.2", "broker-a", "3,4"]]
    # ids sorted as Java members sort them (by UTF-16 unit): U+1F600 (a surrogate pair) before U+FFFF
    shares = ok_json(capsys, cluster, "topic", "allocate", "AllocTopic", "--ip-list", "\uffff,\U0001f600")
    assert {cid: [q["queueId"] for q in queues] for cid, queues in shares["result"].items()} == \
        {"\U0001f600": [0, 1, 2], "\uffff": [3, 4]}


def test_topic_delete_removes_it_from_broker_and_name_server(cluster: LocalCluster,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "DoomedTopic")
    out = ok(capsys, cluster, "topic", "delete", "DoomedTopic")
    assert out.splitlines() == [f"deleted topic DoomedTopic from broker {cluster.broker_addr}",
                                f"deleted topic DoomedTopic from name server {cluster.namesrv_addr}"]
    assert cluster.call(lambda: cluster.broker.topics.get("DoomedTopic")) is None
    assert cluster.call(lambda: cluster.namesrv.routes.route("DoomedTopic")) is None
    assert "DoomedTopic" not in ok_json(capsys, cluster, "topic", "list")
    create_topic(capsys, cluster, "DoomedTopic2")
    done = ok_json(capsys, cluster, "topic", "delete", "DoomedTopic2", "-c", CLUSTER)
    assert done == {"topic": "DoomedTopic2", "clusters": [CLUSTER], "brokers": [cluster.broker_addr],
                    "namesrvs": [cluster.namesrv_addr]}


@pytest.mark.parametrize("action", [("route",), ("clusters",), ("delete",), ("perm", "-p", "6"),
                                    ("allocate", "-i", "a,b")])
def test_topic_commands_refuse_an_unknown_topic(cluster: LocalCluster, capsys: pytest.CaptureFixture[str],
                                                action: tuple[str, ...]) -> None:
    err = refused(capsys, cluster, "topic", action[0], "NoSuchTopic", *action[1:])
    assert "NoSuchTopic" in err


def test_topic_delete_refuses_an_unknown_cluster(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not known" in refused(capsys, cluster, "topic", "delete", "RouteTopic", "-c", "NoSuchCluster")


# --- group ----------------------------------------------------------------------------------------------------


def test_group_config_prints_the_brokers_subscription_group(cluster: LocalCluster,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, cluster, "group", "update", "config-group", "--retry-max-times", "5")
    [found] = ok_json(capsys, cluster, "group", "config", "config-group")
    assert (found["clusterName"], found["brokerName"], found["brokerAddr"]) == (CLUSTER, "broker-a",
                                                                               cluster.broker_addr)
    assert found["config"]["groupName"] == "config-group" and found["config"]["retryMaxTimes"] == 5
    lines = ok(capsys, cluster, "group", "config", "config-group").splitlines()
    assert lines[0] == f"{CLUSTER}:broker-a ({cluster.broker_addr})"
    assert ["retryMaxTimes", "=", "5"] in [line.split() for line in lines]
    assert "no-such-group" in refused(capsys, cluster, "group", "config", "no-such-group")


def test_group_update_sets_every_field_mqadmin_update_sub_group_sets(cluster: LocalCluster,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The broker ids a slaveReadEnable master suggests (-i / -w), consumeFromMinEnable (-m) and
    notifyConsumerIdsChangedEnable (-a), as the broker's own subscription group config holds them."""
    ok(capsys, cluster, "group", "update", "fields-group", "--broker-id", "2", "--slow-broker-id", "3",
       "--no-consume-from-min", "--no-notify-ids-changed")
    config = cluster.call(lambda: cluster.broker.groups.get("fields-group"))
    assert config is not None
    assert (config.broker_id, config.which_broker_when_consume_slowly, config.consume_from_min_enable,
            config.notify_consumer_ids_changed_enable) == (2, 3, False, False)
    ok(capsys, cluster, "group", "update", "fields-group")  # the defaults again
    config = cluster.call(lambda: cluster.broker.groups.get("fields-group"))
    assert config is not None
    assert (config.broker_id, config.which_broker_when_consume_slowly, config.consume_from_min_enable,
            config.notify_consumer_ids_changed_enable) == (0, 1, True, True)


def test_group_delete_drops_config_offsets_and_retry_topic(cluster: LocalCluster,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    group = "doomed-group"
    create_topic(capsys, cluster, "GroupTopic", 1)
    create_topic(capsys, cluster, f"%RETRY%{group}", 1)
    ok(capsys, cluster, "group", "update", group)

    async def commit() -> None:
        async with PullConsumer(cluster.namesrv_addr, group) as consumer:
            await consumer.commit_offset(MessageQueue("GroupTopic", "broker-a", 0), 0)
    run(commit())
    cluster.wait_until(lambda: cluster.broker.offsets.query(group, "GroupTopic", 0) == 0, 20, "the committed offset")

    done = ok_json(capsys, cluster, "group", "delete", group, "--remove-offsets")
    assert done == {"group": group, "brokers": [cluster.broker_addr], "removeOffset": True,
                    "deletedTopics": [f"%RETRY%{group}"]}
    assert group not in cluster.call(lambda: cluster.broker.groups.table)
    assert cluster.call(lambda: cluster.broker.offsets.query(group, "GroupTopic", 0)) < 0
    assert cluster.call(lambda: cluster.broker.topics.get(f"%RETRY%{group}")) is None
    assert group in refused(capsys, cluster, "group", "delete", group)

    ok(capsys, cluster, "group", "update", "kept-offsets-group")
    out = ok(capsys, cluster, "group", "delete", "kept-offsets-group", "-b", cluster.broker_addr)
    assert out.splitlines() == [f"deleted subscription group kept-offsets-group from broker {cluster.broker_addr}"]


def test_group_delete_with_remove_offsets_clears_a_group_that_has_only_offsets(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    """A group with committed offsets but no subscription config (clone-offset makes one): without
    --remove-offsets a delete is refused as a likely typo, with it the offsets go (4.9.3 answers SUCCESS)."""
    group = "offsets-only-group"
    create_topic(capsys, cluster, "OffsetsOnlyTopic", 1)

    async def commit() -> None:
        async with PullConsumer(cluster.namesrv_addr, group) as consumer:
            await consumer.commit_offset(MessageQueue("OffsetsOnlyTopic", "broker-a", 0), 0)
    run(commit())
    cluster.wait_until(lambda: cluster.broker.offsets.query(group, "OffsetsOnlyTopic", 0) == 0, 20,
                       "the committed offset")
    assert group not in cluster.call(lambda: cluster.broker.groups.table)
    assert group in refused(capsys, cluster, "group", "delete", group)
    done = ok_json(capsys, cluster, "group", "delete", group, "--remove-offsets")
    assert done["removeOffset"] is True and done["brokers"] == [cluster.broker_addr]
    assert cluster.call(lambda: cluster.broker.offsets.query(group, "OffsetsOnlyTopic", 0)) < 0


def test_group_and_producer_connections_show_the_connected_clients(cluster: LocalCluster,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer
    from rocketstore.client.request_producer import RequestProducer

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    create_topic(capsys, cluster, "ConnTopic", 2)
    consumer = PushConsumer(cluster.namesrv_addr, "conn-group", {"ConnTopic": "TagA || TagB"}, handle,
                            heartbeat_interval_s=0.5, rebalance_interval_s=0.5)
    producer = RequestProducer(cluster.namesrv_addr, "conn-producers")
    cluster.run(consumer.start())
    try:
        cluster.run(producer.start())
        try:
            cluster.wait_until(lambda: cluster.broker.clients.group("conn-group") is not None, 20, "the heartbeat")
            info = ok_json(capsys, cluster, "group", "connections", "conn-group")
            assert info["broker"] == cluster.broker_addr
            [client] = info["connectionSet"]
            assert (client["clientId"], client["language"], client["versionDesc"]) == \
                (consumer.client_id, "JAVA", "V4_9_3")
            assert info["subscriptionTable"]["ConnTopic"]["subString"] == "TagA || TagB"
            assert (info["consumeType"], info["messageModel"]) == ("CONSUME_PASSIVELY", "CLUSTERING")
            text = ok(capsys, cluster, "group", "connections", "conn-group").splitlines()
            assert text[0].split() == ["CLIENT", "ID", "CLIENT", "ADDR", "LANGUAGE", "VERSION"]
            assert text[1].split()[0] == consumer.client_id and text[1].split()[-2:] == ["JAVA", "V4_9_3"]
            assert ["ConnTopic", "TagA", "||", "TagB"] in [line.split() for line in text]
            assert "ConsumeType: CONSUME_PASSIVELY" in text and "MessageModel: CLUSTERING" in text

            made = ok_json(capsys, cluster, "producer", "connections", "conn-producers", "-t", "ConnTopic")
            assert made["broker"] == cluster.broker_addr
            assert [c["clientId"] for c in made["connectionSet"]] == [producer.client_id]
            lines = ok(capsys, cluster, "producer", "connections", "conn-producers", "-t", "ConnTopic").splitlines()
            assert lines[1].split()[0] == producer.client_id
            assert "not online" in refused(capsys, cluster, "producer", "connections", "nobody-sends", "-t",
                                           "ConnTopic")
        finally:
            cluster.run(producer.close())
    finally:
        cluster.run(consumer.shutdown())
    assert "not online" in refused(capsys, cluster, "group", "connections", "nobody-consumes")


# --- cluster and write perms ----------------------------------------------------------------------------------


def test_cluster_list_prints_each_brokers_runtime_figures(cluster: LocalCluster,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    [row] = ok_json(capsys, cluster, "cluster", "list")
    assert (row["clusterName"], row["brokerName"], row["brokerId"], row["brokerAddr"], row["version"]) == \
        (CLUSTER, "broker-a", 0, cluster.broker_addr, "V4_9_3")
    assert row["inTps"] >= 0 and row["outTps"] >= 0 and isinstance(row["commitLogDiskRatio"], float)
    lines = [line.split() for line in ok(capsys, cluster, "cluster", "list", "-c", CLUSTER).splitlines()]
    assert lines[0][:5] == ["CLUSTER", "BROKER", "BID", "ADDR", "VERSION"]
    assert lines[1][:5] == [CLUSTER, "broker-a", "0", cluster.broker_addr, "V4_9_3"]
    assert "NoSuchCluster" in refused(capsys, cluster, "cluster", "list", "-c", "NoSuchCluster")


def test_wipe_and_add_write_perm_change_the_routes_on_the_name_server(cluster: LocalCluster,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(capsys, cluster, "WipeTopic", 1)

    def perm() -> int:
        return int(cluster.namesrv.routes.route("WipeTopic").queue_datas[0].perm)

    wiped = ok_json(capsys, cluster, "broker-admin", "wipe-write-perm", "broker-a")
    [change] = wiped["namesrvs"]
    assert change["namesrvAddr"] == cluster.namesrv_addr and change["wipeTopicCount"] >= 1
    assert cluster.call(perm) == 4
    out = ok(capsys, cluster, "broker-admin", "add-write-perm", "broker-a")
    assert out.startswith(f"name server {cluster.namesrv_addr} gave the write perm to ")
    assert out.rstrip().endswith("topic(s) of broker broker-a")
    assert int(out.split()[8]) >= 1
    assert cluster.call(perm) == 6
    assert "broker-z" in refused(capsys, cluster, "broker-admin", "wipe-write-perm", "broker-z")
