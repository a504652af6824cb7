"""Opening a store at a path that holds none: a read-only open creates nothing, so a missing directory or a
regular file is an error rather than an empty store that hides a typo."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore import Message, MessageStore
from rocketstore.errors import StoreConfigError


def test_a_read_only_open_of_a_missing_directory_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreConfigError, match="does not exist"):
        MessageStore.open(tmp_path / "typo", read_only=True)
    assert not (tmp_path / "typo").exists()


def test_a_regular_file_is_no_store(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a store")
    with pytest.raises(StoreConfigError, match="not a directory"):
        MessageStore.open(path, read_only=True)


def test_a_writable_open_still_creates_the_store_and_a_read_only_one_then_reads_it(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "new") as store:
        assert store.put(Message.create("T", b"x")).ok
    with MessageStore.open(tmp_path / "new", read_only=True) as store:
        assert store.max_offset("T", 0) == 1
