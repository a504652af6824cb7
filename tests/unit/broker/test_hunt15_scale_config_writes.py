"""topics.json and subscriptionGroup.json at scale: a change made on the event loop is written off it, and
changes made while a write runs are taken by one next write (config_files.BackgroundWriter).

Each change used to rewrite the whole file on the loop (2 MB and two fsyncs for 10,000 topics, over 100 ms),
stalling every send and pull that long, once per created topic.  The tests count the writes and the thread
they run on, never time them.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from rocketstore.broker import config_files
from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.groups import SubscriptionGroupConfig, SubscriptionGroupTable
from rocketstore.broker.topics import TopicTable
from rocketstore.remoting.bodies import TopicConfig

CHANGES = 300


def _count_writes(monkeypatch: pytest.MonkeyPatch, file_name: str) -> list[int]:
    """The thread of every write of the config file *file_name*, in order (the real write still happens)."""
    threads: list[int] = []
    real = config_files.write_text_atomically

    def counted(path: str, obj: Any) -> None:
        if os.path.basename(path) == file_name:
            threads.append(threading.get_ident())
        real(path, obj)

    monkeypatch.setattr(config_files, "write_text_atomically", counted)
    return threads


def test_topic_changes_on_the_loop_are_written_off_it_in_few_writes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    writes = _count_writes(monkeypatch, "topics.json")

    async def main() -> int:
        for i in range(CHANGES):
            table.update(TopicConfig(f"T{i}", 4, 4))
        assert writes == [], "a topic change wrote the whole file on the event loop"
        await table.flush()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert writes and loop_thread not in writes
    assert len(writes) <= 2, f"{CHANGES} changes in one loop turn took {len(writes)} whole-file writes"
    saved = json.loads(Path(table.path).read_text(encoding="utf-8"))
    assert {f"T{i}" for i in range(CHANGES)} <= set(saved["topicConfigTable"])
    assert saved["dataVersion"]["counter"] == table.data_version.counter == CHANGES


def test_group_changes_on_the_loop_are_written_off_it_in_few_writes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    table = SubscriptionGroupTable(str(tmp_path))
    writes = _count_writes(monkeypatch, "subscriptionGroup.json")

    async def main() -> int:
        for i in range(CHANGES):
            assert table.find_or_create(f"G{i}") is not None
        table.update(SubscriptionGroupConfig("G0", retry_max_times=3))
        table.delete("G1")
        assert writes == [], "a group change wrote the whole file on the event loop"
        await table.flush()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert writes and loop_thread not in writes and len(writes) <= 2
    saved = json.loads(Path(table.path).read_text(encoding="utf-8"))["subscriptionGroupTable"]
    assert {f"G{i}" for i in range(2, CHANGES)} <= set(saved) and "G1" not in saved
    assert saved["G0"]["retryMaxTimes"] == 3


def test_changes_made_while_a_write_runs_are_written_by_one_more_write(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    writes = _count_writes(monkeypatch, "topics.json")

    async def main() -> None:
        table.update(TopicConfig("First", 1, 1))
        first = asyncio.ensure_future(table.flush())
        await asyncio.sleep(0)  # the first write is under way on the executor
        for i in range(50):
            table.update(TopicConfig(f"Later{i}", 1, 1))
        await asyncio.gather(first, table.flush())

    asyncio.run(main())
    assert len(writes) <= 2
    saved = json.loads(Path(table.path).read_text(encoding="utf-8"))["topicConfigTable"]
    assert "First" in saved and "Later49" in saved


def test_without_a_running_loop_a_change_is_written_at_once(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    writes = _count_writes(monkeypatch, "topics.json")
    table.update(TopicConfig("Now", 1, 1))
    assert writes == [threading.get_ident()]
    assert "Now" in json.loads(Path(table.path).read_text(encoding="utf-8"))["topicConfigTable"]


def test_an_older_snapshot_never_replaces_a_newer_one(tmp_path: Path) -> None:
    """The write at close (newest) may run while a background write of an older snapshot waits for the
    file: the older one is then dropped."""
    table = TopicTable(BrokerConfig(broker_name="b"), str(tmp_path))
    old = table.writer._snapshot()
    table.writer.generation += 1  # as a change on the loop counts itself
    table.table["Newer"] = TopicConfig("Newer", 1, 1)
    table.persist()
    table.writer._write_generation(0, old)  # the background write of the older snapshot, late
    assert "Newer" in json.loads(Path(table.path).read_text(encoding="utf-8"))["topicConfigTable"]


def test_a_failed_write_fails_flush_and_the_next_flush_writes_again(tmp_path: Path) -> None:
    blocker = tmp_path / "config"
    blocker.write_text("a file where the directory should be")
    table = TopicTable(BrokerConfig(broker_name="b"), str(blocker))

    async def main() -> None:
        table.update(TopicConfig("T", 1, 1))
        with pytest.raises(OSError):
            await table.flush()
        blocker.unlink()
        await table.flush()

    asyncio.run(main())
    assert "T" in json.loads((blocker / "topics.json").read_text(encoding="utf-8"))["topicConfigTable"]
