"""topics.json / subscriptionGroup.json rewrites render only the entries that changed.

Every created topic rewrites the whole file (as 4.9.3 does); rendering every entry again made that rewrite
grow with the table (2,000 topics: ~15 ms of CPU a rewrite, once per created topic).  An entry's text is
kept while its (frozen) config is the same object.  The file must stay byte for byte what fastjson's pretty
layout of the whole table is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.config_files import fastjson_plain
from rocketstore.broker.groups import SubscriptionGroupConfig, SubscriptionGroupTable
from rocketstore.broker.topics import TopicTable
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import TopicConfig

# names a file may hold (a slave takes its master's table whole): escapes, non-ASCII, a lone surrogate
ODD_NAMES = ["plain", "caf\u00e9", "\u2028sep", "del\x7f", "ctl\x01", "lone\ud800", 'q"\\', "nl\n", "\u4e2d", "\x85"]


def _expected(table: TopicTable | SubscriptionGroupTable) -> str:
    version, configs = table._snapshot()
    return fastjson.dumps_pretty(fastjson_plain({"dataVersion": version.to_json(),
                                                 table.table_key: {n: c.to_json() for n, c in configs.items()}}))


def _written(table: TopicTable | SubscriptionGroupTable) -> str:
    table.persist()
    return Path(table.path).read_text(encoding="utf-8")


def test_the_file_is_the_pretty_layout_of_the_whole_table(tmp_path: Path) -> None:
    topics = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    groups = SubscriptionGroupTable(str(tmp_path))
    for name in ODD_NAMES:
        topics.table[name] = TopicConfig(name, 3, 5)
        groups.table[name] = SubscriptionGroupConfig(name)
    for table in (topics, groups):
        table.changed()
        assert _written(table) == _expected(table)
        first = next(iter(table.table))
        del table.table[first]  # an entry removed
        table.changed()
        assert _written(table) == _expected(table)
        table.table.clear()  # the empty table: "{}"
        table.changed()
        assert _written(table) == _expected(table)


def test_a_rewrite_renders_only_the_new_and_changed_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topics = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    for i in range(50):
        topics.table[f"T{i}"] = TopicConfig(f"T{i}", 4, 4)
    topics.persist()
    rendered: list[str] = []
    real = TopicConfig.to_json

    def to_json(self: TopicConfig) -> dict[str, Any]:
        rendered.append(self.topic_name)
        return real(self)

    monkeypatch.setattr(TopicConfig, "to_json", to_json)
    topics.update(TopicConfig("New", 2, 2))  # no running loop: written at once
    topics.update(topics.table["T7"].replace(perm=4))  # a changed config is rendered again
    assert rendered == ["New", "T7"]
    monkeypatch.undo()
    assert Path(topics.path).read_text(encoding="utf-8") == _expected(topics)
