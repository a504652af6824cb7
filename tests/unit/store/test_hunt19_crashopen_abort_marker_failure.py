"""An open that fails writing the abort marker (the last step: out of descriptors, a permission) leaves
nothing open behind it: every segment closed and the lock free, so the store opens once the cause is gone.
It used to keep every file mapped and the lock held: the next open in the process was StoreLockedError."""

from __future__ import annotations

import os

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

CFG = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=6000,
                  preallocate_commit_log=False, warm_ahead_bytes=0, max_hash_slot_num=100, max_index_num=400)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_abort_marker_that_cannot_be_written_leaves_the_store_closed(tmp_path) -> None:
    root = tmp_path / "store"
    store = MessageStore.open(root, CFG)
    assert store.put(Message(topic="T", body=b"kept")).status.name == "PUT_OK"
    assert store.wait_dispatched()
    store.close()
    (root / "abort").mkdir()  # the marker cannot be opened for writing
    before = _open_fds()
    with pytest.raises(IsADirectoryError):
        MessageStore.open(root, CFG, background=False)
    assert _open_fds() == before
    (root / "abort").rmdir()
    with MessageStore.open(root, CFG, background=False) as store:
        assert store.get("T", 0, 0, 1).messages[0].body == b"kept"
