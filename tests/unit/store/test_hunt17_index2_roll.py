"""Every dispatched record goes through the index, keys or not (4.9.3's CommitLogDispatcherBuildIndex hands
each one to IndexService.buildIndex, whose first step, retryGetAndCreateIndexFile, rolls a full file and
creates the first one, before the ROLLBACK and already-indexed checks).

So a full index file rolls on the next record even when it has no key: the full file is flushed and the
checkpoint's indexMsgTimestamp set to its end time at once.  Before, only the next keyed record rolled it,
and a crash in between made the next open delete the full file (its end time past the checkpoint's) and
lose its keys when recovery did not walk back that far.
"""

from __future__ import annotations

import collections
import os
import shutil
from pathlib import Path

import pytest

from rocketstore.message.host import parse_host
from rocketstore.message.record import Message, SysFlag
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.config import StoreConfig
from rocketstore.store.index_file import INDEX_HEADER
from rocketstore.store.message_store import MessageStore

# maxIndexNum=5: four keys fill a file (entry 0 is never used)
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, max_hash_slot_num=8, max_index_num=5)
HOST = parse_host("10.0.0.1:10911")
T0 = 1_700_000_000_000

#: one_by_one: dispatched after each put (a fact at a time); run: all puts, then one dispatch (a run of
#: facts, column by column); decoded: no facts, every record decoded from the commitlog
PATHS = ["one_by_one", "run", "decoded"]


def _message(i: int, *, keys: str | None, ts: int, body: bytes = b"x", sys_flag: int = 0) -> Message:
    return Message.create("T", body, keys=keys, store_timestamp=ts, born_timestamp=ts, born_host=HOST,
                          store_host=HOST, sys_flag=sys_flag)


def _store_messages(root: Path, path: str, messages: list[Message]) -> None:
    with MessageStore.open(root, CONFIG, background=False) as store:
        if path == "decoded":
            store._commitlog.facts = collections.deque(maxlen=0)
        for m in messages:
            assert store.put(m).ok
            if path == "one_by_one":
                assert store.wait_dispatched()
        assert store.wait_dispatched()
        # what is on disk before any close: a crash now leaves this
        state = _index_state(root)
    assert state == _index_state(root)  # (closing changes neither)


def _index_state(root: Path) -> tuple[list[tuple[int, int, int, int, int, int]], int]:
    """(header of each index file in name order, the checkpoint's indexMsgTimestamp) as on disk."""
    headers = []
    for name in sorted(os.listdir(root / "index")) if (root / "index").is_dir() else []:
        with open(root / "index" / name, "rb") as f:
            headers.append(INDEX_HEADER.unpack(f.read(INDEX_HEADER.size)))
    return headers, Checkpoint(str(root / "checkpoint"), writable=False).index_msg_timestamp


def _four_keyed() -> list[Message]:
    return [_message(i, keys=f"k{i}", ts=T0 + i) for i in range(4)]


@pytest.mark.parametrize("path", PATHS)
def test_a_full_index_file_rolls_on_the_next_record_without_keys(tmp_path: Path, path: str) -> None:
    _store_messages(tmp_path, path, [*_four_keyed(), _message(4, keys=None, ts=T0 + 10)])
    headers, index_ts = _index_state(tmp_path)
    assert len(headers) == 2
    full, new = headers
    assert full[5] == 5 and full[1] == T0 + 3  # indexCount (4 keys), endTimestamp
    # the new file starts from the full one's end, empty; the checkpoint holds the full file's end time
    assert new == (T0 + 3, T0 + 3, full[3], full[3], 0, 1)
    assert index_ts == T0 + 3


@pytest.mark.parametrize("path", PATHS)
def test_a_rollback_record_rolls_a_full_file_but_adds_no_key(tmp_path: Path, path: str) -> None:
    rollback = _message(4, keys="kr", ts=T0 + 10, sys_flag=SysFlag.TRANSACTION_ROLLBACK_TYPE)
    _store_messages(tmp_path, path, [*_four_keyed(), rollback])
    headers, index_ts = _index_state(tmp_path)
    assert [h[5] for h in headers] == [5, 1]
    assert index_ts == T0 + 3
    with MessageStore.open(tmp_path, CONFIG, read_only=True) as store:
        assert not store.query("T", "kr").messages
        assert len(store.query("T", "k3").messages) == 1


@pytest.mark.parametrize("path", PATHS)
def test_the_first_record_creates_the_first_index_file_even_without_keys(tmp_path: Path, path: str) -> None:
    _store_messages(tmp_path, path, [_message(i, keys=None, ts=T0 + i) for i in range(3)])
    headers, index_ts = _index_state(tmp_path)
    assert headers == [(0, 0, 0, 0, 0, 1)]
    assert index_ts == 0


@pytest.mark.parametrize("path", ["one_by_one", "run"])
def test_the_keys_of_a_full_file_survive_a_crash_before_the_next_keyed_record(tmp_path: Path, path: str) -> None:
    """Segment 0 holds four keyed records (the index file full), then keyless records only: 4.9.3 rolls at
    the first of them and records the full file's end time in the checkpoint, so after a crash the next
    open keeps the full file, though abnormal recovery walks only the last segment."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    filler = [_message(5 + i, keys=None, ts=T0 + 10, body=b"f" * 20_000) for i in range(4)]  # into segment 1
    late = _message(9, keys=None, ts=T0 + 60_000)  # the checkpoint's times: recovery starts at segment 1
    with MessageStore.open(live, CONFIG, background=False) as store:
        offsets = []
        for m in [*_four_keyed(), *filler, late]:
            put = store.put(m)
            assert put.ok
            offsets.append(put.commit_log_offset)
            if path == "one_by_one":
                assert store.wait_dispatched()
        assert store.wait_dispatched()
        assert offsets[3] < CONFIG.mapped_file_size_commit_log <= offsets[-2]  # keys in segment 0 only
        store.flush()
        shutil.copytree(live, crashed)  # a crash now: the abort file stays
    assert (crashed / "abort").exists()
    with MessageStore.open(crashed, CONFIG) as store:
        assert store.recovery.abnormal and store.recovery.start_segment == CONFIG.mapped_file_size_commit_log
        for i in range(4):
            found = store.query("T", f"k{i}").messages
            assert [m.keys for m in found] == [f"k{i}"], i


@pytest.mark.parametrize("history", ["full_then_keyless", "keyless_only"])
def test_a_rebuild_rolls_and_creates_index_files_as_the_dispatcher_does(tmp_path: Path, history: str) -> None:
    from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial

    store, out = tmp_path / "store", tmp_path / "out"
    if history == "full_then_keyless":
        messages = [*_four_keyed(), _message(4, keys=None, ts=T0 + 10), _message(5, keys=None, ts=T0 + 11)]
    else:
        messages = [_message(i, keys=None, ts=T0 + i) for i in range(3)]
    _store_messages(store, "one_by_one", messages)
    plan = plan_rebuild(str(store), CONFIG.replace(store_path_root_dir=str(store)))
    report = rebuild_store(plan, scan_serial(plan), output_dir=str(out))
    headers, index_ts = _index_state(store)
    assert report.index_file_count == len(headers) == (2 if history == "full_then_keyless" else 1)
    assert _index_state(out) == (headers, index_ts)
