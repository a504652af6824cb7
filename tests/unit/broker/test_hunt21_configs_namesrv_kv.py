"""The name server's kvConfig.json read as the broker's config files are: an empty (or blank) file counts as
missing, so the ``.bak`` its writer keeps is read (the empty file was read as an empty table, and the next
PUT_KV_CONFIG made it the ``.bak``: the good copy was lost), and a configTable or namespace that is no object
is unreadable (``"configTable": []`` was an empty table too) rather than an empty table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.namesrv import NamesrvConfigError
from rocketstore.namesrv.handlers import KVTable

GOOD = json.dumps({"configTable": {"ORDER_TOPIC_CONFIG": {"TopicA": "broker-a:4"}}})


@pytest.mark.parametrize("damaged", ["", "  \n", '{"configTable": []}', '{"configTable": {"ns": 5}}',
                                     '{"configTable": "x"}'])
def test_an_empty_or_misshapen_kv_file_reads_the_bak(tmp_path: Path, damaged: str) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text(damaged, encoding="utf-8")
    (tmp_path / "kvConfig.json.bak").write_text(GOOD, encoding="utf-8")
    kv = KVTable(str(path))
    assert kv.get("ORDER_TOPIC_CONFIG", "TopicA") == "broker-a:4"
    kv.put("ns", "k", "v")  # the table written keeps what the .bak held
    on_disk = json.loads(path.read_text(encoding="utf-8"))["configTable"]
    assert on_disk == {"ORDER_TOPIC_CONFIG": {"TopicA": "broker-a:4"}, "ns": {"k": "v"}}


def test_a_misshapen_kv_file_and_bak_refuse_to_load(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text('{"configTable": []}', encoding="utf-8")
    (tmp_path / "kvConfig.json.bak").write_text('{"configTable": {"ns": [1]}}', encoding="utf-8")
    with pytest.raises(NamesrvConfigError, match="cannot read the KV table"):
        KVTable(str(path))


def test_an_empty_kv_file_without_a_bak_is_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text("", encoding="utf-8")
    assert KVTable(str(path)).table == {}
    path.write_text('{"configTable": null}', encoding="utf-8")
    assert KVTable(str(path)).table == {}
