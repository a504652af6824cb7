"""messageIndexEnable=false stops only the building of index entries (4.9.3's CommitLogDispatcherBuildIndex
checks it); DefaultMessageStore still loads the index files, answers queryMessage from them and deletes
them with the commitlog (CleanConsumeQueueService), as its IndexService is always there.

Index files whose size the configured geometry does not give are an error with the index enabled; with it
disabled (how the Spark source opens a store whose geometry it cannot tell) they are left alone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import StoreConfigError


def _config(**changes: object) -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                       max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                       file_reserved_time_h=72, delete_when="99").replace(**changes)


def _write(path: Path, count: int) -> None:
    with MessageStore.open(path, _config()) as store:
        for i in range(count):
            assert store.put(Message.create("T", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()


def _index_files(path: Path) -> dict[str, bytes]:
    return {name: (path / "index" / name).read_bytes() for name in sorted(os.listdir(path / "index"))}


def test_queries_answer_from_existing_index_files_and_new_records_add_no_entries(tmp_path: Path) -> None:
    _write(tmp_path, 5)
    before = _index_files(tmp_path)
    with MessageStore.open(tmp_path, _config(message_index_enable=False)) as store:
        assert [m.keys for m in store.query("T", "k3").messages] == ["k3"]
        assert store.put(Message.create("T", b"y", keys="new")).ok
        assert store.wait_dispatched()
        assert not store.query("T", "new").messages
    assert _index_files(tmp_path) == before
    with MessageStore.open(tmp_path, _config(), read_only=True) as store:
        assert [m.keys for m in store.query("T", "k0").messages] == ["k0"]


def test_index_files_expire_with_the_commitlog(tmp_path: Path) -> None:
    _write(tmp_path, 60)
    count = len(os.listdir(tmp_path / "index"))
    assert count >= 3
    with MessageStore.open(tmp_path, _config(message_index_enable=False)) as store:
        report = store.delete_expired_files(force=True, now_ms=int(time.time() * 1000) + 100 * 3_600_000)
        assert report.commit_log_files_deleted > 0
        assert report.index_files_deleted > 0
        assert len(os.listdir(tmp_path / "index")) == count - report.index_files_deleted
        assert not store.query("T", "k0").messages  # its record and its index file are gone
        assert [m.keys for m in store.query("T", "k59").messages] == ["k59"]


def test_index_files_of_another_geometry_are_left_alone_only_when_disabled(tmp_path: Path) -> None:
    _write(tmp_path, 5)
    before = _index_files(tmp_path)
    other = {"max_hash_slot_num": 16, "max_index_num": 32}
    with pytest.raises(StoreConfigError):
        MessageStore.open(tmp_path, _config(**other), read_only=True)
    with MessageStore.open(tmp_path, _config(message_index_enable=False, **other), read_only=True) as store:
        assert not store.query("T", "k1").messages
        assert store.get("T", 0, 0).messages
    with MessageStore.open(tmp_path, _config(message_index_enable=False, **other)) as store:
        assert store.put(Message.create("T", b"y", keys="new")).ok
        assert store.wait_dispatched()
    assert _index_files(tmp_path) == before
