"""The embedded store as a library user meets it: a file where the store's directory should be is a
StoreConfigError naming the setting (as a read-only open says it), and close() called from a dispatch or
durable listener closes the store instead of hanging or failing half-way (4.9.3 has no listener API: what
a Python user expects), and an open whose lock file cannot be written lets go of the lock."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

SMALL = StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=200, max_hash_slot_num=16,
                    max_index_num=64)
SYNC = SMALL.replace(flush_disk_type="SYNC_FLUSH")


# --- a file where a directory goes ---------------------------------------------------------------------------


def test_a_file_as_the_root_dir_is_a_store_config_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a store")
    with pytest.raises(StoreConfigError, match="storePathRootDir .* is not a directory"):
        MessageStore.open(path, SMALL)
    assert path.read_text() == "not a store"


def test_a_root_dir_below_a_file_is_a_store_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreConfigError, match="storePathRootDir"):
        MessageStore.open(tmp_path / "file" / "store", SMALL)


def test_an_empty_root_dir_is_a_store_config_error() -> None:
    with pytest.raises(StoreConfigError, match="storePathRootDir is empty"):
        MessageStore.open("", SMALL)


def test_a_file_as_the_commitlog_dir_is_a_store_config_error_and_leaves_the_store_unlocked(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir()
    (root / "commitlog").write_text("x")
    with pytest.raises(StoreConfigError, match="storePathCommitLog"):
        MessageStore.open(root, SMALL)
    (root / "commitlog").unlink()
    with MessageStore.open(root, SMALL) as store:  # the failed open let go of the lock
        assert store.put(Message.create("T", b"x")).ok


# --- close() from a listener --------------------------------------------------------------------------------


def _close_within(store: MessageStore, timeout_s: float = 30) -> None:
    """store.close() on a thread of its own: a close that hangs fails the test instead of hanging it."""
    closer = threading.Thread(target=store.close, daemon=True)
    closer.start()
    closer.join(timeout_s)
    assert not closer.is_alive(), "close() hung"


def _reopened_cleanly(root: Path, config: StoreConfig, topic: str) -> int:
    with MessageStore.open(root, config) as store:
        assert store.last_exit_ok
        return store.max_offset(topic, 0)


def test_a_durable_listener_closing_the_store_on_the_putting_thread_does_not_hang(tmp_path: Path) -> None:
    # the put leads the group commit and calls the listener; close then calls the listeners once more, on
    # this same thread: that close waited for its own close lock for ever
    store = MessageStore.open(tmp_path / "store", SYNC)
    errors: list[BaseException] = []

    def listener() -> None:
        try:
            store.close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    store.add_durable_listener(listener)
    results = []
    putter = threading.Thread(target=lambda: results.append(store.put(Message.create("T", b"x"))), daemon=True)
    putter.start()
    putter.join(30)
    assert not putter.is_alive(), "put (and the close its listener called) hung"
    assert results[0].ok
    _close_within(store)
    assert errors == []
    assert _reopened_cleanly(tmp_path / "store", SYNC, "T") == 1


def test_a_durable_listener_closing_the_store_on_the_group_commit_thread_closes_it(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SYNC)
    errors: list[BaseException] = []
    called = threading.Event()

    def listener() -> None:
        try:
            store.close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)
        called.set()

    store.add_durable_listener(listener)
    assert store.put(Message.create("T", b"x"), flush="ask").ok  # the group commit thread syncs it
    assert called.wait(30)
    _close_within(store)  # waits for the close the listener started
    assert errors == []
    assert _reopened_cleanly(tmp_path / "store", SYNC, "T") == 1


def test_a_dispatch_listener_closing_the_store_closes_it(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SMALL)
    errors: list[BaseException] = []
    called = threading.Event()

    def listener(topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int) -> None:
        try:
            store.close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)
        called.set()

    store.add_dispatch_listener(listener)
    assert store.put(Message.create("T", b"x")).ok
    assert called.wait(30)
    _close_within(store)
    assert errors == []
    assert _reopened_cleanly(tmp_path / "store", SMALL, "T") == 1


# --- a lock file that cannot be written ------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_lock_file_write_that_fails_lets_go_of_the_lock(tmp_path: Path) -> None:
    # <root>/lock -> /dev/full: every write is ENOSPC, as on a full disk.  The failed open kept the lock (and its
    # descriptor), so every later open in this process was a StoreLockedError naming a writer that is no more
    root = tmp_path / "store"
    root.mkdir()
    (root / "lock").symlink_to("/dev/full")
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(2):
        with pytest.raises(OSError) as caught:
            MessageStore.open(root, SMALL)
        assert caught.value.errno == errno.ENOSPC
    assert len(os.listdir("/proc/self/fd")) == fds
    (root / "lock").unlink()
    with MessageStore.open(root, SMALL) as store:
        assert store.put(Message.create("T", b"x")).ok
