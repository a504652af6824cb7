"""Broker tables and broker.conf: RocketMQ's auto-create rules, system topics, camelCase properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.broker.config import BrokerConfig, load_broker_conf
from rocketstore.broker.groups import SubscriptionGroupTable
from rocketstore.broker.topics import TopicTable, group_problem, topic_problem
from rocketstore.errors import StoreConfigError
from rocketstore.remoting.bodies import Perm, TopicConfig


def test_tbw102_template_auto_creates_topics_with_the_clients_queue_count(tmp_path: Path) -> None:
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    tbw = table.get("TBW102")
    assert tbw is not None and (tbw.read_queue_nums, tbw.write_queue_nums, tbw.perm) == (8, 8, 7)
    created = table.create_for_send("NewTopic", "TBW102", 4)
    assert created == TopicConfig("NewTopic", 4, 4, Perm.READ | Perm.WRITE)
    assert table.create_for_send("Wide", "TBW102", 100).write_queue_nums == 8  # type: ignore[union-attr]
    assert table.create_for_send("FromPlain", "NewTopic", 4) is None, "only PERM_INHERIT topics are templates"
    assert table.create_for_send("X", "NoSuchTemplate", 4) is None
    saved = json.loads(Path(table.path).read_text())
    assert saved["topicConfigTable"]["NewTopic"]["writeQueueNums"] == 4
    assert saved["dataVersion"]["counter"] == 2


def test_without_auto_create_there_is_no_tbw102_and_no_new_topic(tmp_path: Path) -> None:
    table = TopicTable(BrokerConfig(broker_name="b", auto_create_topic_enable=False), str(tmp_path))
    assert table.get("TBW102") is None
    assert table.create_for_send("NewTopic", "TBW102", 4) is None


def test_system_topics_and_file_round_trip(tmp_path: Path) -> None:
    config = BrokerConfig(broker_name="broker-z", broker_cluster_name="C1")
    table = TopicTable(config, str(tmp_path))
    assert {"SELF_TEST_TOPIC", "TBW102", "BenchmarkTest", "C1", "broker-z", "OFFSET_MOVED_EVENT",
            "SCHEDULE_TOPIC_XXXX", "C1_REPLY_TOPIC"} <= table.system_topics
    assert table.get("SCHEDULE_TOPIC_XXXX").read_queue_nums == 18  # type: ignore[union-attr]
    table.update(TopicConfig("Mine", 2, 3, 6, "MULTI_TAG", 0, True))
    again = TopicTable(config, str(tmp_path))
    again.load()
    assert again.get("Mine") == TopicConfig("Mine", 2, 3, 6, "MULTI_TAG", 0, True)
    assert again.data_version == table.data_version


def test_topic_name_rules() -> None:
    assert topic_problem("Good_Topic-1%|") is None
    assert topic_problem("") is not None and topic_problem("   ") is not None
    assert topic_problem("has space") is not None
    assert topic_problem("x" * 128) is not None and topic_problem("x" * 127) is None
    for escaping in ("../x", "..", "a/b", "/abs", "a\\b", "dot.name", "nul\x00", "ünï"):
        assert topic_problem(escaping) is not None, escaping


def test_group_name_rules_are_the_topic_charset_up_to_255_characters() -> None:
    assert group_problem("CID_good-group%|1") is None and group_problem("g" * 255) is None
    assert group_problem("g" * 256) == "the specified group is longer than group max length 255."
    assert group_problem("") == group_problem("  ") == "the specified group is blank"
    for bad in ("../x", "a/b", "has space", "at@sign", "dot.name"):
        problem = group_problem(bad)
        assert problem is not None and "illegal characters" in problem, bad


def test_subscription_groups_auto_create_and_persist(tmp_path: Path) -> None:
    groups = SubscriptionGroupTable(str(tmp_path))
    cfg = groups.find_or_create("g1")
    assert cfg is not None and cfg.retry_max_times == 16 and cfg.retry_queue_nums == 1
    again = SubscriptionGroupTable(str(tmp_path))
    again.load()
    assert again.get("g1") == cfg
    assert json.loads(Path(groups.path).read_text())["subscriptionGroupTable"]["g1"]["consumeEnable"] is True
    strict = SubscriptionGroupTable(str(tmp_path / "other"), auto_create=False)
    assert strict.find_or_create("g2") is None
    # a system group (CID_RMQ_SYS_ prefix) is created anyway, as 4.9.3's findSubscriptionGroupConfig
    system = strict.find_or_create("CID_RMQ_SYS_TRANS")
    assert system is not None and strict.get("CID_RMQ_SYS_TRANS") == system


def test_broker_conf_names_feed_broker_and_store_configs(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("""# comment
brokerClusterName=ProdCluster
brokerName : broker-q
brokerId = 0
namesrvAddr = 10.0.0.1:9876;10.0.0.2:9876
listenPort = 11011
brokerIP1 = 10.0.0.7
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = SYNC_FLUSH
autoCreateTopicEnable = false
defaultTopicQueueNums = 16
shortPollingTimeMills = 500
mappedFileSizeCommitLog = 1048576
busyPollMicros = 300
aclEnable = true
rocketmqHome = /opt/rocketmq
""", encoding="utf-8")
    broker, store, _ = load_broker_conf(str(conf), store_dir=str(tmp_path / "s"))
    assert broker.broker_cluster_name == "ProdCluster" and broker.broker_name == "broker-q"
    assert broker.namesrv_addrs == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert (broker.listen_port, broker.broker_ip1, broker.advertised_ip()) == (11011, "10.0.0.7", "10.0.0.7")
    assert broker.auto_create_topic_enable is False and broker.default_topic_queue_nums == 16
    assert broker.short_polling_time_ms == 500
    assert broker.busy_poll_micros == 300 and BrokerConfig().busy_poll_micros == 0  # off unless asked for
    assert broker.acl_enable is True and broker.acl_home() == "/opt/rocketmq"
    assert BrokerConfig().acl_enable is False
    assert store.is_sync_flush and store.file_reserved_time_h == 48
    assert store.mapped_file_size_commit_log == 1048576
    assert store.store_host == "10.0.0.7:11011"
    assert store.store_path_root_dir == str(tmp_path / "s")


def test_bad_broker_conf_values_are_rejected() -> None:
    with pytest.raises(StoreConfigError):
        BrokerConfig.from_properties({"listenPort": "ten"})
    with pytest.raises(StoreConfigError):
        BrokerConfig.from_properties({"listenPort": "70000"})
    for bad in ("-1", "1000001", "soon"):
        with pytest.raises(StoreConfigError):
            BrokerConfig.from_properties({"busyPollMicros": bad})
