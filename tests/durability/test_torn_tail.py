"""Torn tails and flipped bytes: recovery keeps exactly the complete, intact records before the damage."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig

SEGMENT_BYTES = 8192


def _config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=SEGMENT_BYTES, mapped_file_size_consume_queue=20 * 32,
                       max_hash_slot_num=8, max_index_num=32, preallocate_commit_log=False)


def _write(store_dir: Path, count: int) -> list[tuple[int, int, str]]:
    """(commit_log_offset, size, key) of each message written, store closed cleanly."""
    out = []
    with MessageStore.open(store_dir, _config()) as store:
        for i in range(count):
            key = f"key-{i}"
            r = store.put(Message.create("Torn", f"body {i} ".encode() * (i % 7 + 1), tags="T", keys=key,
                                         queue_id=i % 2))
            assert r.ok
            out.append((r.commit_log_offset, r.wrote_bytes, key))
    return out


def _last_segment(store_dir: Path) -> Path:
    return max((store_dir / "commitlog").iterdir())


def _surviving_keys(store_dir: Path) -> list[str]:
    with MessageStore.open(store_dir, _config(), background=False) as store:
        keys = []
        for queue_id in (0, 1):
            offset = store.min_offset("Torn", queue_id)
            while True:
                got = store.get("Torn", queue_id, offset, 32)
                if not got.records:
                    break
                keys.extend(m.keys for m in got.messages)
                offset = got.next_begin_offset
        return sorted(keys, key=lambda k: int(k.split("-")[1]))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, int, str]]]:
    base = tmp_path_factory.mktemp("torn") / "store"
    return base, _write(base, 60)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _cuts(records: list[tuple[int, int, str]], segment_start: int) -> list[int]:
    in_last = [(o, s) for o, s, _ in records if o >= segment_start]
    lo = in_last[-2][0] - segment_start
    hi = in_last[-1][0] + in_last[-1][1] - segment_start
    return list(range(lo, hi + 1))


@pytest.mark.parametrize("crashed", [False, True], ids=["clean-marker", "abort-marker"])
def test_zeroed_tail_at_every_byte_keeps_exactly_the_complete_records(
        written: tuple[Path, list[tuple[int, int, str]]], tmp_path: Path, crashed: bool) -> None:
    base, records = written
    segment = _last_segment(base)
    start = int(segment.name)
    for cut in _cuts(records, start):
        store_dir = _copy(base, tmp_path / f"cut{cut}")
        seg = _last_segment(store_dir)
        data = bytearray(seg.read_bytes())
        data[cut:] = bytes(len(data) - cut)
        seg.write_bytes(bytes(data))
        if crashed:
            (store_dir / "abort").touch()
        expected = [k for o, s, k in records if o + s <= start + cut]
        assert _surviving_keys(store_dir) == expected, f"cut at {cut}"
        shutil.rmtree(store_dir)


def test_short_last_segment_file_is_a_torn_tail_not_a_fatal_error(
        written: tuple[Path, list[tuple[int, int, str]]], tmp_path: Path) -> None:
    base, records = written
    start = int(_last_segment(base).name)
    for cut in _cuts(records, start)[::7]:
        store_dir = _copy(base, tmp_path / f"short{cut}")
        (store_dir / "abort").touch()
        seg = _last_segment(store_dir)
        os.truncate(seg, cut)
        expected = [k for o, s, k in records if o + s <= start + cut]
        assert _surviving_keys(store_dir) == expected, f"file cut to {cut} bytes"
        assert seg.stat().st_size == SEGMENT_BYTES
        shutil.rmtree(store_dir)


def test_flipped_body_byte_stops_abnormal_recovery_at_that_record(
        written: tuple[Path, list[tuple[int, int, str]]], tmp_path: Path) -> None:
    base, records = written
    store_dir = _copy(base, tmp_path / "flipped")
    (store_dir / "abort").touch()
    victim_offset, victim_size, _ = records[-10]
    segment_bytes = SEGMENT_BYTES
    seg = store_dir / "commitlog" / f"{victim_offset - victim_offset % segment_bytes:020d}"
    data = bytearray(seg.read_bytes())
    pos = victim_offset % segment_bytes + victim_size - 40  # inside the body, before topic and properties
    data[pos] ^= 0xFF
    seg.write_bytes(bytes(data))
    with MessageStore.open(store_dir, _config(), background=False) as store:
        assert store.recovery.valid_end == victim_offset
        assert store.recovery.first_invalid_reason == "body CRC mismatch"
        assert store.max_commit_log_offset == victim_offset
    expected = [k for o, s, k in records if o < victim_offset]
    assert _surviving_keys(store_dir) == expected
