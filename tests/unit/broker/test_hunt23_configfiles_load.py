"""How the broker's and name server's config files load, against 4.9.3's ConfigManager.

- topics.json: the topicConfigTable key names the topic, as in 4.9.3's map (and as subscriptionGroup.json's
  key names the group): an entry copied by hand under a new key, its topicName left as the original's,
  replaced the original topic's config and the new topic was missing.
- A config file that does not parse and has no ``.bak`` stops the broker with an error naming the file: it
  started with an empty table, its first write made the file the ``.bak`` and the next replaced that, so a
  typo in topics.json or consumerOffset.json lost every topic or committed offset.
- A UTF-8 byte order mark (an editor's), which fastjson skips, is skipped too.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.topics import TopicTable
from rocketstore.errors import CorruptFileError
from rocketstore.namesrv.handlers import KVTable
from rocketstore.spark.store_options import configured_topics
from rocketstore.store.config import StoreConfig

TOPICS = {"dataVersion": {"counter": 3, "timestamp": 1},
          "topicConfigTable": {"A": {"topicName": "A", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6},
                               "B": {"topicName": "A", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6}}}


def test_the_topics_json_key_names_the_topic(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "topics.json").write_text(json.dumps(TOPICS), encoding="utf-8")
    table = TopicTable(BrokerConfig(broker_name="b"), str(config_dir))
    table.load()
    a, b = table.get("A"), table.get("B")
    assert a is not None and (a.topic_name, a.read_queue_nums, a.write_queue_nums) == ("A", 4, 4)
    assert b is not None and (b.topic_name, b.read_queue_nums, b.write_queue_nums) == ("B", 8, 8)
    table.persist()
    written = json.loads((config_dir / "topics.json").read_text(encoding="utf-8"))["topicConfigTable"]
    assert (written["A"]["topicName"], written["B"]["topicName"]) == ("A", "B")
    # the Spark source reads the file as the broker does
    (config_dir / "topics.json").write_text(json.dumps(TOPICS), encoding="utf-8")
    assert {"A", "B"} <= configured_topics(str(tmp_path))


def _start(root: Path) -> None:
    async def start() -> None:
        broker = Broker(BrokerConfig(broker_name="b", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1"), StoreConfig(store_path_root_dir=str(root)))
        try:
            await broker.start()
        finally:
            await broker.close()

    asyncio.run(start())


@pytest.mark.parametrize("name, good", [
    ("topics.json", json.dumps(TOPICS, indent=1)),
    ("consumerOffset.json", '{"offsetTable":{"T@g":{0:12,1:34}}}'),
])
def test_an_unparseable_config_file_without_a_bak_stops_the_broker_and_is_kept(tmp_path: Path, name: str,
                                                                                 good: str) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    damaged = good.replace("}", "", 1)  # a hand edit's typo
    (config_dir / name).write_text(damaged, encoding="utf-8")
    for _ in range(2):  # (two starts: the second write of a started broker replaced the .bak too)
        with pytest.raises(CorruptFileError, match=name):
            _start(tmp_path)
    assert (config_dir / name).read_text(encoding="utf-8") == damaged
    (config_dir / name).write_text(good, encoding="utf-8")  # repaired: the broker starts with its content
    _start(tmp_path)
    reread = json.loads((config_dir / name).read_text(encoding="utf-8"))
    if name == "topics.json":
        assert reread["topicConfigTable"]["A"]["readQueueNums"] == 4
    else:
        assert reread["offsetTable"]["T@g"] == {"0": 12, "1": 34}


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(TOPICS).encode())
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    table.load()
    a = table.get("A")
    assert a is not None and a.read_queue_nums == 4
    kv_path = tmp_path / "kvConfig.json"
    kv_path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"configTable": {"ns": {"k": "v"}}}).encode())
    assert KVTable(str(kv_path)).get("ns", "k") == "v"
