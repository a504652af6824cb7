"""Abnormal recovery's re-dispatch goes through the index as the dispatcher does (4.9.3's recoverAbnormally
hands every record to doDispatch, whose buildIndex first rolls a full index file, or creates the first one,
keys or not): a full file rolls on the next record even when it has no key, and a store whose records have no
keys gets its first index file.  Before, recovery handed the index only keyed records, so a file it filled
stayed unrolled (its end time never reached the checkpoint: a second crash deleted it with its keys).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

from .test_hunt17_index2_roll import CONFIG, T0, _four_keyed, _index_state, _message

#: the live store writes no index: recovery's re-dispatch alone builds it (the queues are intact, so the
#: dispatcher is not called for any record)
NO_INDEX = CONFIG.replace(message_index_enable=False)


def _crash_copy(live: Path, crashed: Path, config: StoreConfig, dispatched: list[Message],
                undispatched: list[Message]) -> list[int]:
    """Put *dispatched* (dispatched) then *undispatched* (never dispatched), copy the store as a crash leaves
    it (abort file, files as the page cache holds them) to *crashed*; returns the records' offsets."""
    offsets = []
    with MessageStore.open(live, config, background=False) as store:
        for m in dispatched:
            put = store.put(m)
            assert put.ok
            offsets.append(put.commit_log_offset)
        assert store.wait_dispatched()
        for m in undispatched:
            put = store.put(m)
            assert put.ok
            offsets.append(put.commit_log_offset)
        shutil.copytree(live, crashed)
    assert (crashed / "abort").exists()
    return offsets


def _recovered_index_state(crashed: Path) -> tuple[list[tuple[int, int, int, int, int, int]], int]:
    with MessageStore.open(crashed, CONFIG, background=False) as store:
        assert store.recovery.abnormal and store.recovery.start_segment == 0
        state = _index_state(crashed)  # what recovery left on disk, before the store dispatches anything
        for i in range(4):
            assert [m.keys for m in store.query("T", f"k{i}").messages] == [f"k{i}"], i
    return state


def test_recovery_rolls_the_index_file_it_filled_on_the_next_record_without_keys(tmp_path: Path) -> None:
    messages = [*_four_keyed(), _message(4, keys=None, ts=T0 + 10)]
    offsets = _crash_copy(tmp_path / "live", tmp_path / "crashed", NO_INDEX, messages, [])
    headers, index_ts = _recovered_index_state(tmp_path / "crashed")
    assert len(headers) == 2
    full, new = headers
    assert full[5] == 5 and full[1] == T0 + 3 and full[3] == offsets[3]  # indexCount, endTimestamp, endPhyOffset
    assert new == (T0 + 3, T0 + 3, offsets[3], offsets[3], 0, 1)
    assert index_ts == T0 + 3  # the full file's end time is in the checkpoint: a second crash keeps it


def test_recovery_rolls_when_the_next_record_was_never_dispatched(tmp_path: Path) -> None:
    # the live store filled its index file and crashed before dispatching the keyless record after it; the
    # full file (its end time past the checkpoint's) is deleted at the open, and recovery indexes the keys again
    offsets = _crash_copy(tmp_path / "live", tmp_path / "crashed", CONFIG, _four_keyed(),
                          [_message(4, keys=None, ts=T0 + 10)])
    headers, index_ts = _recovered_index_state(tmp_path / "crashed")
    assert [h[5] for h in headers] == [5, 1]
    assert headers[1] == (T0 + 3, T0 + 3, offsets[3], offsets[3], 0, 1)
    assert index_ts == T0 + 3


def test_recovery_leaves_a_file_its_last_record_filled_unrolled(tmp_path: Path) -> None:
    # as the dispatcher: the record that fills a file does not roll it (the next record does)
    _crash_copy(tmp_path / "live", tmp_path / "crashed", NO_INDEX, _four_keyed(), [])
    headers, index_ts = _recovered_index_state(tmp_path / "crashed")
    assert [(h[1], h[5]) for h in headers] == [(T0 + 3, 5)]
    assert index_ts == 0


def test_recovery_creates_the_first_index_file_for_records_without_keys(tmp_path: Path) -> None:
    _crash_copy(tmp_path / "live", tmp_path / "crashed", NO_INDEX,
                [_message(i, keys=None, ts=T0 + i) for i in range(3)], [])
    with MessageStore.open(tmp_path / "crashed", CONFIG, background=False) as store:
        assert store.recovery.abnormal
        assert _index_state(tmp_path / "crashed") == ([(0, 0, 0, 0, 0, 1)], 0)
