"""A queue's first segment that starts past queue offset 0 and lost its pre-blank fill (or part of it) to a
crash or a power loss is filled again when its entries are re-dispatched, instead of every entry being a gap;
a segment that holds a real entry still refuses a gap."""

from __future__ import annotations

from pathlib import Path

from rocketstore.store.consume_queue import CQ_ENTRY_BYTES, PRE_BLANK_SIZE, ConsumeQueue

SEGMENT = 8 * CQ_ENTRY_BYTES


def _reopen(directory: str) -> ConsumeQueue:
    cq = ConsumeQueue("T", 0, directory, SEGMENT, writable=True)
    cq.load()
    cq.recover()
    return cq


def _first_segment_cut_at(tmp_path: Path, entries_kept: int) -> str:
    """T/0 whose first entry is queue offset 28 (segment 24..31: fill for 24..27), its file cut back to
    *entries_kept* entries as a torn write leaves it."""
    directory = str(tmp_path / "cq")
    cq = ConsumeQueue("T", 0, directory, SEGMENT, writable=True)
    assert cq.put(9000, 100, 7, 28)
    cq.close()
    path = Path(directory) / f"{24 * CQ_ENTRY_BYTES:020d}"
    raw = bytearray(path.read_bytes())
    raw[entries_kept * CQ_ENTRY_BYTES :] = bytes(len(raw) - entries_kept * CQ_ENTRY_BYTES)
    path.write_bytes(bytes(raw))
    return directory


def test_empty_first_segment_is_filled_again(tmp_path: Path) -> None:
    cq = _reopen(_first_segment_cut_at(tmp_path, 0))
    try:
        assert cq.max_offset == 24
        assert cq.put(9000, 100, 7, 28)
        assert (cq.min_offset, cq.max_offset) == (28, 29)
        assert cq.entry(28) == (9000, 100, 7)
        assert [cq.entry(q) for q in range(24, 28)] == [(0, PRE_BLANK_SIZE, 0)] * 4
    finally:
        cq.close()


def test_partly_filled_first_segment_is_filled_to_the_entry(tmp_path: Path) -> None:
    cq = _reopen(_first_segment_cut_at(tmp_path, 2))
    try:
        assert cq.max_offset == 26
        assert cq.max_physic_offset == -1
        assert cq.put(9000, 100, 7, 28)
        assert cq.put(9100, 100, 7, 29)
        assert (cq.min_offset, cq.max_offset) == (28, 30)
        assert [cq.entry(q) for q in range(24, 30)] == [(0, PRE_BLANK_SIZE, 0)] * 4 + [(9000, 100, 7),
                                                                                      (9100, 100, 7)]
    finally:
        cq.close()


def test_a_gap_after_a_real_entry_is_still_refused(tmp_path: Path) -> None:
    directory = _first_segment_cut_at(tmp_path, 5)  # fill and entry 28 kept
    cq = _reopen(directory)
    try:
        assert cq.max_offset == 29
        assert not cq.put(9200, 100, 7, 30)  # 29 missing
        assert cq.max_offset == 29
    finally:
        cq.close()
