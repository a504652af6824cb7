"""The per-file write locks of rocketstore.files live only while a thread holds or waits for them: a process
that writes many different files (a broadcasting consumer per temporary directory, a test run) used to keep a
lock for every path it ever wrote."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from rocketstore import files
from rocketstore.files import path_lock, write_text_atomically

DEADLINE_S = 10.0


def test_writing_many_files_leaves_no_lock_behind(tmp_path: Path) -> None:
    before = len(files._write_locks)
    for i in range(200):
        write_text_atomically(str(tmp_path / f"f{i}.json"), "{}")
    assert len(files._write_locks) == before


def test_the_lock_is_reentrant_for_a_holder_that_writes_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    with path_lock(path):
        write_text_atomically(str(path), '{"a":1}')  # would deadlock on a plain Lock
        assert os.path.abspath(path) in files._write_locks
    assert path.read_text(encoding="utf-8") == '{"a":1}'
    assert os.path.abspath(path) not in files._write_locks


def test_a_waiter_keeps_the_entry_until_it_has_written(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    entered = threading.Event()
    order: list[str] = []

    def waiter() -> None:
        entered.set()
        write_text_atomically(str(path), "second")
        order.append("second")

    with path_lock(path):
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        entered.wait(DEADLINE_S)
        write_text_atomically(str(path), "first")
        order.append("first")
    t.join(DEADLINE_S)
    assert not t.is_alive()
    assert order == ["first", "second"]
    assert path.read_text(encoding="utf-8") == "second"
    assert os.path.abspath(path) not in files._write_locks
