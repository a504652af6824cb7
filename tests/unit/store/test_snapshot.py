"""StoreSnapshot answers the planner's questions as a recovered MessageStore does, without recovery."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.snapshot import StoreSnapshot, closed_cleanly

SMALL = StoreConfig(mapped_file_size_commit_log=16 * 1024, mapped_file_size_consume_queue=50 * 20,
                    max_hash_slot_num=64, max_index_num=256)


def _write(path: Path, count: int = 600) -> None:
    with MessageStore.open(path, SMALL) as store:
        for i in range(count):
            assert store.put(Message.create(f"T{i % 2}", b"x" * (i % 90), tags=f"t{i % 3}", queue_id=i % 3,
                                            born_timestamp=1_700_000_000_000 + i)).ok
        assert store.wait_dispatched()


def test_offsets_times_and_entries_agree_with_the_recovered_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _write(path)
    assert closed_cleanly(str(path))
    with MessageStore.open(path, SMALL, read_only=True) as store, StoreSnapshot.open(str(path), SMALL) as snap:
        assert snap.topics() == store.topics()
        assert snap.min_commit_log_offset == store.min_commit_log_offset
        assert snap.tails_agree()
        for topic, qids in store.topics().items():
            for q in qids:
                low, high = store.min_offset(topic, q), store.max_offset(topic, q)
                assert (snap.min_offset(topic, q), snap.max_offset(topic, q)) == (low, high)
                assert snap.store_time(topic, q, high - 1) == store.store_time(topic, q, high - 1)
                queue_offsets, entries = snap.entries(topic, q, low, high)  # crosses consume-queue segments
                assert list(queue_offsets) == list(range(low, high))
                records: list[bytes] = []
                while low + len(records) < high:
                    got = store.get(topic, q, low + len(records), high - low)
                    assert got.queue_offsets[0] == low + len(records)
                    records.extend(got.records)
                assert [snap.read_span(offset, size) for offset, size, _ in entries.tolist()] == records


def test_a_copy_cut_short_fails_the_tail_check(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _write(path, 300)
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    segments = sorted((copy / "commitlog").iterdir())
    last = segments[-1]
    with MessageStore.open(path, SMALL, read_only=True) as store:
        end = store.max_commit_log_offset - int(last.name)
    with open(last, "r+b") as f:  # the last records' bytes never arrived
        f.seek(end - 50)
        f.write(bytes(50))
    with StoreSnapshot.open(str(copy), SMALL) as snap:
        assert not snap.tails_agree()
    with StoreSnapshot.open(str(path), SMALL) as snap:
        assert snap.tails_agree()


def test_an_aborted_store_is_not_clean_and_a_missing_queue_has_no_entries(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _write(path, 50)
    assert closed_cleanly(str(path))
    (path / "abort").touch()
    assert not closed_cleanly(str(path))
    with StoreSnapshot.open(str(path), SMALL, check_queues=False) as snap:
        queue_offsets, entries = snap.entries("Nope", 0, 0, 10)
        assert len(queue_offsets) == 0 and len(entries) == 0
        assert snap.read_span(10**9, 100) is None
        assert np.all(snap.entries("T0", 0, 0, 5)[1]["size"] > 0)
