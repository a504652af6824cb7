"""A 4.9.3 broker.conf that sets storePathRootDir but not storePathCommitLog: 4.9.3 keeps the commitlog in
``<user.home>/store/commitlog`` (its default, whatever storePathRootDir says) and the consume queues under
storePathRootDir.  Started here with the same file, the broker looked for the commitlog under
storePathRootDir, found none and dropped every consume-queue entry (the queue files deleted): the messages
gone from the consumers' view.  Now the start is refused, the store untouched, with an error naming
storePathCommitLog and the directory 4.9.3 used.  And a broker.conf with no store path at all (4.9.3: the
whole store in ~/store; ``rocketstore broker -c``: ./store) starts a new store with a warning naming ~/store.

Found moving a 4.9.3 broker (its store written by the real 4.9.3 broker with such a file) to rocketstore:
the first start logged "5 consume-queue entries past it dropped" and pulls answered NO_MESSAGE_IN_QUEUE."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.broker import Broker, BrokerConfig
from rocketstore.errors import StoreConfigError


def _java_layout(root: Path, home: Path) -> Path:
    """A store as 4.9.3 lays it out for storePathRootDir=<root> alone: commitlog in <home>/store/commitlog."""
    java_commitlog = home / "store" / "commitlog"
    store = MessageStore.open(root, StoreConfig(store_path_root_dir=str(root),
                                                store_path_commit_log=str(java_commitlog),
                                                mapped_file_size_commit_log=1 << 20))
    for i in range(3):
        store.put(Message.create("TM", b"m%d" % i, queue_id=0))
    store.wait_dispatched()
    store.close()
    return java_commitlog


def _start_and_close(store_config: StoreConfig) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1"), store_config)
        try:
            await broker.start()
        finally:
            await broker.close()
    asyncio.run(main())


def test_a_commitlog_left_in_java_default_place_refuses_the_start(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    java_commitlog = _java_layout(root, home)
    monkeypatch.setenv("HOME", str(home))
    queue_files = sorted((root / "consumequeue" / "TM" / "0").iterdir())
    assert queue_files
    with pytest.raises(StoreConfigError) as err:
        _start_and_close(StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20))
    assert "storePathCommitLog" in str(err.value) and str(java_commitlog) in str(err.value)
    # the consume queues were left as they were
    assert sorted((root / "consumequeue" / "TM" / "0").iterdir()) == queue_files
    assert (root / "consumequeue" / "TM" / "0" / queue_files[0].name).stat().st_size > 0
    # with storePathCommitLog set as the error says, the broker opens the store with its messages
    store_config = StoreConfig(store_path_root_dir=str(root), store_path_commit_log=str(java_commitlog),
                               mapped_file_size_commit_log=1 << 20)
    _start_and_close(store_config)
    store = MessageStore.open(root, store_config)
    try:
        assert store.max_offset("TM", 0) == 3
    finally:
        store.close()


def test_a_new_store_beside_java_default_one_warns_and_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """A 4.9.3 broker.conf with no store path (the distribution's) keeps the whole store in ~/store; here the
    same file opens ./store: the start says where the 4.9.3 store is (and starts, nothing is lost)."""
    home = tmp_path / "home"
    _java_layout(home / "store", home)  # 4.9.3's default store, ~/store, with its commitlog
    monkeypatch.setenv("HOME", str(home))
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.broker")

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "is new, while" in r.getMessage()]

    own = StoreConfig(store_path_root_dir=str(tmp_path / "own"), mapped_file_size_commit_log=1 << 20)
    _start_and_close(own)
    [warning] = warnings()
    assert f"storePathRootDir={home / 'store'}" in warning
    # once the store has messages of its own: no refusal, no warning
    store = MessageStore.open(tmp_path / "own", own)
    store.put(Message.create("T", b"x", queue_id=0))
    store.wait_dispatched()
    store.close()
    caplog.clear()
    _start_and_close(own)
    assert warnings() == []
    # nor for the 4.9.3 store itself, opened where it is
    java_default = StoreConfig(store_path_root_dir=str(home / "store"), mapped_file_size_commit_log=1 << 20)
    _start_and_close(java_default)
    assert warnings() == []


def test_a_commitlog_over_several_directories_refuses_the_start(tmp_path: Path) -> None:
    """storePathCommitLog=/d1/commitlog,/d2/commitlog: 4.9.3 spreads the commitlog's segments over both
    (captured from 4.9.3 with 1 MiB segments: 0 and 2097152 in the first, 1048576 and 3145728 in the
    second); this broker made one directory named "/d1/commitlog,/d2/commitlog" and, on a 4.9.3 store,
    dropped the consume queues.  Now the start is refused, naming the property."""
    paths = f"{tmp_path / 'd1' / 'commitlog'},{tmp_path / 'd2' / 'commitlog'}"
    with pytest.raises(StoreConfigError) as err:
        _start_and_close(StoreConfig(store_path_root_dir=str(tmp_path / "root"), store_path_commit_log=paths,
                                     mapped_file_size_commit_log=1 << 20))
    assert f"storePathCommitLog={paths} is a list of directories" in str(err.value)
    assert not (tmp_path / "root").exists() and not (tmp_path / "d1").exists()


def test_a_new_store_with_its_commitlog_elsewhere_names_java_default_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """storePathCommitLog=/data/commitlog alone: 4.9.3 keeps the consume queues, topics and consumer offsets
    in ~/store; this broker opened ./store with that commitlog, no word of the offsets left behind."""
    home, commitlog = tmp_path / "home", tmp_path / "data" / "commitlog"
    store = MessageStore.open(home / "store", StoreConfig(store_path_root_dir=str(home / "store"),
                                                          store_path_commit_log=str(commitlog),
                                                          mapped_file_size_commit_log=1 << 20))
    store.put(Message.create("TM", b"m", queue_id=0))
    store.wait_dispatched()
    store.close()
    (home / "store" / "config").mkdir(exist_ok=True)
    (home / "store" / "config" / "topics.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.broker")
    _start_and_close(StoreConfig(store_path_root_dir=str(tmp_path / "own"),
                                 store_path_commit_log=str(commitlog), mapped_file_size_commit_log=1 << 20))
    [warning] = [r.getMessage() for r in caplog.records if "is new, while" in r.getMessage()]
    assert "consume queues" in warning and "topics and consumer offsets" in warning
    assert f"storePathRootDir={home / 'store'}" in warning
