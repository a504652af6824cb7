"""A config/*.json file that is JSON but whose table has the wrong shape (the table an array, a string or
null; an entry of it no object) loads the ``.bak``, as 4.9.3's ConfigManager.load does when fastjson cannot
decode the file into the manager's maps: the broker started with an empty table instead, and the next
rewrite put the damaged file in the ``.bak``, losing the good copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.groups import SubscriptionGroupTable
from rocketstore.broker.offsets import ConsumerOffsetTable
from rocketstore.broker.schedule import ScheduleService
from rocketstore.broker.topics import TopicTable
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutResult

TOPIC = {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}
GROUP = {"groupName": "g", "retryMaxTimes": 3}


@pytest.mark.parametrize("table", [[], "x", None, 5, {"T": 5}, {"T": [1]}, {"T": None}, {"T": "x"}])
def test_a_topics_table_of_the_wrong_shape_loads_the_bak(tmp_path: Path, table: object) -> None:
    (tmp_path / "topics.json").write_text(json.dumps({"dataVersion": {"counter": 9, "timestamp": 1},
                                                      "topicConfigTable": table}), encoding="utf-8")
    (tmp_path / "topics.json.bak").write_text(json.dumps({"dataVersion": {"counter": 3, "timestamp": 1},
                                                          "topicConfigTable": {"T": TOPIC}}), encoding="utf-8")
    topics = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    topics.load()
    loaded = topics.get("T")
    assert loaded is not None and loaded.read_queue_nums == 4
    assert topics.data_version.counter == 3


@pytest.mark.parametrize("table", [[], "x", None, {"g": 1}, {"g": [GROUP]}])
def test_a_subscription_group_table_of_the_wrong_shape_loads_the_bak(tmp_path: Path, table: object) -> None:
    (tmp_path / "subscriptionGroup.json").write_text(json.dumps({"subscriptionGroupTable": table}),
                                                     encoding="utf-8")
    (tmp_path / "subscriptionGroup.json.bak").write_text(json.dumps({"subscriptionGroupTable": {"g": GROUP}}),
                                                         encoding="utf-8")
    groups = SubscriptionGroupTable(str(tmp_path))
    groups.load()
    loaded = groups.get("g")
    assert loaded is not None and loaded.retry_max_times == 3


@pytest.mark.parametrize("table", ["[]", '"x"', "5", '{"T@g":5}', '{"T@g":[1]}', '{"T@g":null}'])
def test_an_offset_table_of_the_wrong_shape_loads_the_bak(tmp_path: Path, table: str) -> None:
    (tmp_path / "consumerOffset.json").write_text('{"offsetTable":' + table + "}", encoding="utf-8")
    (tmp_path / "consumerOffset.json.bak").write_text('{"offsetTable":{"T@g":{0:7}}}', encoding="utf-8")
    offsets = ConsumerOffsetTable(str(tmp_path))
    offsets.load()
    assert offsets.query("g", "T", 0) == 7


@pytest.mark.parametrize("table", ["[]", '"x"', "5"])
def test_a_delay_offset_table_of_the_wrong_shape_loads_the_bak(tmp_path: Path, table: str) -> None:
    path = tmp_path / "store"
    config = StoreConfig(store_path_root_dir=str(path), mapped_file_size_commit_log=64 * 1024,
                         mapped_file_size_consume_queue=100, max_hash_slot_num=16, max_index_num=64)
    (path / "config").mkdir(parents=True)
    (path / "config" / "delayOffset.json").write_text('{"offsetTable":' + table + "}", encoding="utf-8")
    (path / "config" / "delayOffset.json.bak").write_text('{"offsetTable":{3:5}}', encoding="utf-8")
    with MessageStore.open(path, config) as store:
        async def put(message: Message) -> PutResult:
            return store.put(message, apply_delay=False)

        service = ScheduleService(store, config.config_dir, put, lambda: 0)
        service.load()
        assert service.offsets == {3: 5}
