"""Reading a live store's files while its retention deletes them: a read-only open (dump, verify, the Spark
store source) and a snapshot of a store a broker reopened.

Retention deletes commitlog segments, consume-queue files and index files from the head.  A reader that
listed a directory just before must take a file that vanished since as deleted (its records are gone, as
``MessageStore.get`` says of them), never fail with FileNotFoundError.  Each test stops the reader at the
exact point (after its listing, before it opens the file) by running the real clean-up from a hook on the
file-system call it makes there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rocketstore.message.record import Message, decode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus
from rocketstore.store.snapshot import StoreSnapshot

# tiny segments and index files: 200 puts fill some ten of each
SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                    max_index_num=64, file_reserved_time_h=0, preallocate_commit_log=False)
PUTS = 200


def _fill(store: MessageStore, topic: str = "T") -> None:
    for i in range(PUTS):
        assert store.put(Message.create(topic, f"m{i}".encode() + b"x" * 90, keys=f"k{i}", queue_id=0)).ok
    assert store.wait_dispatched()


def _run_once_at(monkeypatch: pytest.MonkeyPatch, where: str, directory: str, action: Callable[[], object]) -> list[object]:
    """Hook ``os.<where>``: the first ``path.getsize`` of a file in *directory*, or the first ``listdir`` of
    *directory* itself, first runs *action* (the live store's clean-up), then does the real call.  Returns
    what the action returned."""
    done: list[object] = []
    module = os.path if where == "path.getsize" else os
    name = where.rsplit(".", 1)[-1]
    real = getattr(module, name)

    def hooked(path):  # type: ignore[no-untyped-def]
        if where == "listdir":
            if not done and os.fspath(path) == directory:
                done.append(action())
            return real(path)
        if not done and os.path.dirname(os.fspath(path)) == directory:
            done.append(action())
        return real(path)

    monkeypatch.setattr(module, name, hooked)
    return done


def test_a_read_only_open_survives_retention_deleting_a_segment_after_its_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL, background=False) as live:
        _fill(live)
        listing = sorted(os.listdir(path / "commitlog"))
        # the read-only open lists the commitlog, then retention deletes the head before it opens the files
        ran = _run_once_at(monkeypatch, "path.getsize", str(path / "commitlog"),
                           lambda: live.delete_expired_files(force=True))
        with MessageStore.open(path, SMALL, read_only=True) as reader:
            monkeypatch.undo()
            assert ran and ran[0].commit_log_files_deleted > 0
            assert len(os.listdir(path / "commitlog")) < len(listing)
            assert reader.min_commit_log_offset == live.min_commit_log_offset
            assert reader.max_commit_log_offset == live.max_commit_log_offset
            low = reader.min_offset("T", 0)
            assert low == live.min_offset("T", 0) > 0
            assert reader.get("T", 0, 0).status is GetMessageStatus.OFFSET_TOO_SMALL
            got = reader.get("T", 0, low, 8)
            assert got.status is GetMessageStatus.FOUND
            for q, raw in zip(got.queue_offsets, got.records):
                m = decode_record(bytes(raw))
                assert m.queue_offset == q and m.body.startswith(f"m{q}x".encode())


def test_a_read_only_open_survives_retention_deleting_an_index_file_after_its_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL, background=False) as live:
        _fill(live)
        ran = _run_once_at(monkeypatch, "path.getsize", str(path / "index"),
                           lambda: live.delete_expired_files(force=True))
        with MessageStore.open(path, SMALL, read_only=True) as reader:
            monkeypatch.undo()
            assert ran and ran[0].index_files_deleted > 0
            # (a set: the recovering open indexes the newest indexed record a second time, as 4.9.3's
            # buildIndex, which skips only records before the index's end offset, does too)
            newest = reader.query("T", f"k{PUTS - 1}")
            assert {m.body[:4] for m in newest.messages} == {f"m{PUTS - 1}".encode()}


def test_a_read_only_open_survives_a_queue_dropped_after_its_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL, background=False) as live:
        _fill(live)
        assert live.put(Message.create("U", b"gone soon", queue_id=0)).ok
        assert live.wait_dispatched()
        # the open lists consumequeue/ (U is there), then CLEAN_UNUSED_TOPIC drops U's directory just before
        # the open lists U's queues
        ran = _run_once_at(monkeypatch, "listdir", str(path / "consumequeue" / "U"),
                           lambda: live.clean_unused_topics({"T"}))
        with MessageStore.open(path, SMALL, read_only=True) as reader:
            monkeypatch.undo()
            assert ran == [[("U", 0)]]
            assert reader.max_offset("T", 0) == PUTS
            got = reader.get("T", 0, 0, 8)
            assert got.status is GetMessageStatus.FOUND and got.queue_offsets[0] == 0


def test_a_snapshot_takes_segments_deleted_after_it_opened_as_gone(tmp_path: Path) -> None:
    from rocketstore.spark.store_options import QueueRange
    from rocketstore.spark.store_source import _snapshot_chunks

    path = tmp_path / "store"
    with MessageStore.open(path, SMALL, background=False) as live:
        _fill(live)
    with StoreSnapshot.open(str(path), SMALL) as snap:
        assert snap.min_commit_log_offset == 0
        _, entries = snap.entries("T", 0, 0, 1)
        first, size = int(entries["offset"][0]), int(entries["size"][0])
        # a broker reopens the store and its retention deletes the head while the snapshot is open (a Spark
        # scan planned on the cleanly closed store)
        with MessageStore.open(path, SMALL, background=False) as live:
            assert live.delete_expired_files(force=True).commit_log_files_deleted > 0
            kept_from = live.min_offset("T", 0)
        assert snap.read_span(first, size) is None
        assert snap.span_view(first, size) is None
        rows: list[int] = []
        for buf, positions, queue_offsets, _ in _snapshot_chunks(snap, (QueueRange("T", 0, 0, PUTS),), None):
            raw = np.asarray(buf).tobytes()
            for pos, q in zip(positions.tolist(), queue_offsets.tolist()):
                m = decode_record(raw, pos)
                assert m.queue_offset == q and m.body.startswith(f"m{q}x".encode())
                rows.append(q)
        # the records of deleted segments are left out, those still there all come back
        assert rows == list(range(kept_from, PUTS))
