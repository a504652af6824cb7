"""The store's first clean-up pass comes 60 s after it opens whatever cleanResourceInterval says, as
4.9.3's scheduleAtFixedRate(cleanFilesPeriodically, 60 s, cleanResourceInterval): a long interval does not
put off the first pass."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store import background


class _CleanThreadStartedLongAgo:
    """``time`` for the background module: the clean thread's first clock reading is 61 s in the past (the
    store has been open for 61 s when the thread next looks); every other reading is the real one."""

    def __init__(self) -> None:
        self.shifted = False

    def monotonic(self) -> float:
        if not self.shifted and threading.current_thread().name == "rocketstore-clean":
            self.shifted = True
            return time.monotonic() - 61.0
        return time.monotonic()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_the_first_pass_comes_after_60_s_even_with_a_longer_interval(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    every_hour = ";".join(str(h) for h in range(24))
    config = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                         max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                         file_reserved_time_h=1, delete_when=every_hour, clean_resource_interval_ms=300_000)
    # the segments exist, 100 hours old, before the store (and its clean thread) opens
    with MessageStore.open(tmp_path, config, background=False) as store:
        for i in range(40):
            assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
    past = time.time() - 100 * 3600
    for name in os.listdir(tmp_path / "commitlog"):
        os.utime(tmp_path / "commitlog" / name, (past, past))
    monkeypatch.setattr(background, "time", _CleanThreadStartedLongAgo())
    with MessageStore.open(tmp_path, config) as store:
        deadline = time.monotonic() + 30
        while store.min_commit_log_offset == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.min_commit_log_offset > 0, "no clean-up pass 61 s after the open (interval 300 s)"
