"""consumerOffset.json: reads what a Java broker writes (fastjson's bare integer keys), writes atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocketstore.broker.offsets import ConsumerOffsetTable

JAVA_WRITTEN = """{
\t"offsetTable":{
\t\t"TopicTest@please_rename_unique_group_name_4":{0:250,1:249,2:251,3:250
\t\t},
\t\t"%RETRY%please_rename_unique_group_name_4@please_rename_unique_group_name_4":{0:0
\t\t}
\t}
}"""


def table_in(path: Path) -> ConsumerOffsetTable:
    (path / "config").mkdir(parents=True, exist_ok=True)
    return ConsumerOffsetTable(str(path / "config"))


def test_java_written_file_with_unquoted_integer_keys_loads(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    Path(table.path).write_text(JAVA_WRITTEN, encoding="utf-8")
    table.load()
    group = "please_rename_unique_group_name_4"
    assert table.offsets(group, "TopicTest") == {0: 250, 1: 249, 2: 251, 3: 250}
    assert table.query(group, "%RETRY%" + group, 0) == 0
    assert table.query(group, "TopicTest", 9) == -1
    assert table.query("other", "TopicTest", 0) == -1
    assert table.topics_of_group(group) == ["%RETRY%" + group, "TopicTest"]


def test_written_file_is_strict_json_and_round_trips(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    table.commit("g1", "TopicA", 0, 12)
    table.commit("g1", "TopicA", 3, 7)
    table.commit("g2", "TopicA", 1, 1)
    assert table.persist()
    data = json.loads(Path(table.path).read_text(encoding="utf-8"))
    assert data == {"offsetTable": {"TopicA@g1": {"0": 12, "3": 7}, "TopicA@g2": {"1": 1}}}
    again = table_in(tmp_path)
    again.load()
    assert again.offsets("g1", "TopicA") == {0: 12, 3: 7}
    assert not os.path.exists(table.path + ".tmp")


def test_persist_writes_only_after_a_change(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    assert not table.persist()
    assert not os.path.exists(table.path)
    table.commit("g", "T", 0, 1)
    assert table.persist()
    assert not table.persist()
    table.commit("g", "T", 0, 1)  # same value: nothing changed
    assert not table.persist()
    table.commit("g", "T", 0, 2)
    assert table.persist()


def test_a_failed_write_leaves_the_previous_file_whole_and_retries_later(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    table = table_in(tmp_path)
    table.commit("g", "T", 0, 5)
    table.persist()
    before = Path(table.path).read_bytes()
    table.commit("g", "T", 0, 6)

    def crash(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        table.persist()
    monkeypatch.undo()
    assert Path(table.path).read_bytes() == before  # the rename never happened: old content, whole
    reloaded = table_in(tmp_path)
    reloaded.load()
    assert reloaded.query("g", "T", 0) == 5
    assert table.persist()  # still dirty: the next flush writes the new value
    reloaded.load()
    assert reloaded.query("g", "T", 0) == 6


def test_a_torn_main_file_falls_back_to_the_backup(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    table.commit("g", "T", 0, 5)
    table.persist()
    table.commit("g", "T", 0, 9)
    table.persist()
    assert json.loads(Path(table.path + ".bak").read_text())["offsetTable"]["T@g"] == {"0": 5}
    Path(table.path).write_text('{"offsetTable":{"T@g":{0:', encoding="utf-8")  # torn by a crash elsewhere
    reloaded = table_in(tmp_path)
    reloaded.load()
    assert reloaded.query("g", "T", 0) == 5


def test_missing_or_empty_file_means_no_offsets(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    table.load()
    assert table.table == {}
    Path(table.path).write_text("", encoding="utf-8")
    table.load()
    assert table.table == {}


def test_malformed_entries_are_skipped(tmp_path: Path) -> None:
    table = table_in(tmp_path)
    Path(table.path).write_text('{"offsetTable":{"no-separator":{0:1},"T@g":{0:"7",1:"x",2:3}}}', encoding="utf-8")
    table.load()
    assert table.table == {"T@g": {0: 7, 2: 3}}
