"""FileQueue.flush syncs every segment that holds unflushed bytes, and only those: it starts after the last
full, flushed segment instead of walking the whole queue on each sync (group commit calls it per sync)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.store import mapped_file as mapped_file_module
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import MappedFile

SEGMENT = 8192


def _fill(mf: MappedFile, size: int) -> None:
    mf.append(b"\x07" * size)


@pytest.fixture
def flushed_segments(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Start offsets of the segments MappedFile.flush (the real one) was called on."""
    calls: list[int] = []
    real = mapped_file_module.MappedFile.flush

    def recording(mf: MappedFile, least_pages: int = 0) -> int:
        calls.append(mf.start_offset)
        return real(mf, least_pages)

    monkeypatch.setattr(mapped_file_module.MappedFile, "flush", recording)
    return calls


def test_only_the_segments_with_unflushed_bytes_are_synced(tmp_path: Path, flushed_segments: list[int]) -> None:
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    try:
        for _ in range(4):
            _fill(q.last_writable(), SEGMENT)  # four full segments
        _fill(q.last_writable(), 100)
        assert q.flush() is True
        assert flushed_segments == [0, SEGMENT, 2 * SEGMENT, 3 * SEGMENT, 4 * SEGMENT]
        assert all(f.flushed == f.wrote for f in q)
        flushed_segments.clear()
        _fill(q.last(), 100)  # type: ignore[arg-type]
        assert q.flush() is True
        assert flushed_segments == [4 * SEGMENT]  # the full, flushed ones before it are not looked at
        assert q.flushed_offset == 4 * SEGMENT + 200
        flushed_segments.clear()
        assert q.flush() is True
        assert flushed_segments == []
    finally:
        q.close()


def test_a_segment_filled_since_the_last_sync_is_synced_with_its_successor(
        tmp_path: Path, flushed_segments: list[int]) -> None:
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    try:
        _fill(q.last_writable(), SEGMENT)
        _fill(q.last_writable(), 1000)
        assert q.flush() is True
        flushed_segments.clear()
        _fill(q.last(), SEGMENT - 1000)  # type: ignore[arg-type]  # the tail segment fills up ...
        _fill(q.last_writable(), 10)  # ... and the next one starts, both before the next sync
        assert q.flush() is True
        assert flushed_segments == [SEGMENT, 2 * SEGMENT]
        assert [f.flushed for f in q] == [SEGMENT, SEGMENT, 10]
    finally:
        q.close()


def test_least_pages_leaves_a_short_tail_but_never_a_full_segment(tmp_path: Path,
                                                                  flushed_segments: list[int]) -> None:
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    try:
        _fill(q.last_writable(), 100)
        assert q.flush(least_pages=1) is False  # less than a page: left for later
        _fill(q.last(), SEGMENT - 100)  # type: ignore[arg-type]
        _fill(q.last_writable(), 100)
        assert q.flush(least_pages=1) is False
        assert [f.flushed for f in q] == [SEGMENT, 0]  # the full one is synced whatever least_pages says
        assert q.flush() is True
        assert [f.flushed for f in q] == [SEGMENT, 100]
        assert flushed_segments == [0, 0, SEGMENT, SEGMENT]
    finally:
        q.close()
