"""Damaged config/*.json: a field of the wrong type falls back to the ``.bak`` (4.9.3's ConfigManager.load
reads the .bak whenever decode throws), and a number JSON reads as infinite is left out of the consumer
offsets like any other entry that is no number, instead of stopping the broker with an OverflowError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.groups import SubscriptionGroupTable
from rocketstore.broker.offsets import ConsumerOffsetTable
from rocketstore.broker.topics import TopicTable
from rocketstore.errors import CorruptFileError

GOOD_TOPICS = {"dataVersion": {"counter": 3, "timestamp": 1},
               "topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4,
                                          "perm": 6}}}


@pytest.mark.parametrize("damage", [
    ('"readQueueNums": 4', '"readQueueNums": "x"'),
    ('"readQueueNums": 4', '"readQueueNums": 1e400'),
    ('"counter": 3', '"counter": [3]'),
])
def test_a_topics_json_field_of_the_wrong_type_loads_the_bak(tmp_path: Path, damage: tuple[str, str]) -> None:
    good = json.dumps(GOOD_TOPICS)
    assert damage[0] in good
    (tmp_path / "topics.json").write_text(good.replace(*damage), encoding="utf-8")
    (tmp_path / "topics.json.bak").write_text(good, encoding="utf-8")
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    table.load()
    loaded = table.get("T")
    assert loaded is not None and (loaded.read_queue_nums, loaded.write_queue_nums) == (4, 4)
    assert table.data_version.counter == 3


def test_a_topics_json_and_bak_both_of_the_wrong_type_refuse_to_load(tmp_path: Path) -> None:
    bad = json.dumps(GOOD_TOPICS).replace('"perm": 6', '"perm": "rw"')
    (tmp_path / "topics.json").write_text(bad, encoding="utf-8")
    (tmp_path / "topics.json.bak").write_text(bad, encoding="utf-8")
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    with pytest.raises(CorruptFileError):
        table.load()
    assert table.get("T") is None, "nothing of a file that failed to load is taken"


def test_a_subscription_group_field_of_the_wrong_type_loads_the_bak(tmp_path: Path) -> None:
    good = {"dataVersion": {"counter": 2, "timestamp": 1},
            "subscriptionGroupTable": {"G": {"groupName": "G", "retryQueueNums": 1, "retryMaxTimes": 5}}}
    text = json.dumps(good)
    damaged = text.replace('"retryMaxTimes": 5', '"retryMaxTimes": {}')
    (tmp_path / "subscriptionGroup.json").write_text(damaged, encoding="utf-8")
    (tmp_path / "subscriptionGroup.json.bak").write_text(text, encoding="utf-8")
    table = SubscriptionGroupTable(str(tmp_path))
    table.load()
    assert table.data_version.counter == 2
    assert table.table["G"].retry_max_times == 5


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "1e400"])
def test_an_infinite_consumer_offset_is_left_out_not_an_overflow(tmp_path: Path, number: str) -> None:
    table = ConsumerOffsetTable(str(tmp_path))
    Path(table.path).write_text('{"offsetTable":{"T@g":{"0":%s,"1":7}}}' % number, encoding="utf-8")
    table.load()
    assert table.offsets("g", "T") == {1: 7}
