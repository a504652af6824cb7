"""The rebuild's plan ends where each commitlog segment's records end, not at the preallocated segment's end.

A store of a few records in preallocated segments planned the whole segments (zeros included: GiBs for a
store of KiBs, "scanning 2048.0 MiB"); the plan now stops a few bytes past each segment's last non-zero
byte, and the rebuilt files stay the dispatcher's, for a clean store and for one with a torn tail.
"""

from __future__ import annotations

import dataclasses
import shutil
import struct
from pathlib import Path

import pytest

from rocketstore.message.record import MESSAGE_MAGIC, Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.rebuild import RebuildPlan, RebuildReport, plan_rebuild, rebuild_store, scan_serial

SEGMENT = 1 << 20
STEP = 64 << 10
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 1000,
                     max_hash_slot_num=64, max_index_num=400, preallocate_commit_log=True)


def _config(store: Path) -> StoreConfig:
    return CONFIG.replace(store_path_root_dir=str(store))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _index_contents(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((root / "index").iterdir())] if (root / "index").exists() else []


def _segments(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def _used(segment: Path) -> int:
    return len(segment.read_bytes().rstrip(b"\0"))


def _dispatcher_reference(source: Path, dest: Path) -> Path:
    """The store's own dispatcher (and recovery) over a copy of the commitlog alone."""
    dest.mkdir()
    shutil.copytree(source / "commitlog", dest / "commitlog")
    MessageStore.open(dest, CONFIG, background=False).close()
    return dest


def _rebuild_matches_dispatcher(store: Path, plan: RebuildPlan, tmp_path: Path) -> RebuildReport:
    reference = _dispatcher_reference(store, tmp_path / "ref")
    report = rebuild_store(plan, scan_serial(plan), output_dir=str(tmp_path / "out"))
    assert report.record_count > 0
    assert _tree(tmp_path / "out" / "consumequeue") == _tree(reference / "consumequeue")
    assert _index_contents(tmp_path / "out") == _index_contents(reference)
    with MessageStore.open(reference, CONFIG, read_only=True) as s:
        assert report.valid_end == s.max_commit_log_offset
    return report


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1.3 segments of records (the first segment ends in its blank record), the rest preallocated zeros."""
    store = tmp_path_factory.mktemp("small") / "store"
    with MessageStore.open(store, CONFIG) as s:
        for i in range(1200):
            result = s.put(Message.create("TopicA", bytes([i % 251 + 1]) * 1000, tags="T", keys=f"k{i}",
                                          queue_id=i % 3))
            assert result.status.name == "PUT_OK", result
        assert s.wait_dispatched(30)
    return store


def test_plan_covers_each_segment_up_to_its_records(small_store: Path, tmp_path: Path) -> None:
    plan = plan_rebuild(str(small_store), _config(small_store), STEP)
    segments = _segments(small_store)
    assert len(segments) >= 2 and all(s.stat().st_size == SEGMENT for s in segments)
    ends = [min(SEGMENT, _used(s) + 8) for s in segments]
    assert ends[-1] < SEGMENT // 2  # the last segment is mostly preallocated zeros
    assert plan.commit_log_bytes == sum(ends)
    assert len(plan.ranges) == sum(-(-end // STEP) for end in ends)
    assert sum(r.end - r.begin for r in plan.ranges) == plan.commit_log_bytes
    assert _rebuild_matches_dispatcher(small_store, plan, tmp_path).stop_reason is None


def test_unused_preallocated_segment_is_planned_as_its_head(small_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(small_store / "commitlog", store / "commitlog")
    last = _segments(store)[-1]
    unused = last.with_name(f"{int(last.name) + SEGMENT:020d}")
    with open(unused, "wb") as fh:
        fh.truncate(SEGMENT)
    plan = plan_rebuild(str(store), _config(store), STEP)
    assert [(r.begin, r.end) for r in plan.ranges if r.path == str(unused)] == [(0, 8)]
    _rebuild_matches_dispatcher(store, plan, tmp_path)


def _record_starts(data: bytes) -> list[int]:
    pos, starts = 0, []
    while struct.unpack_from(">i", data, pos + 4)[0] == MESSAGE_MAGIC:
        starts.append(pos)
        pos += struct.unpack_from(">i", data, pos)[0]
    return starts


def test_torn_tail_stops_at_the_torn_record_as_recovery_does(small_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(small_store / "commitlog", store / "commitlog")
    last = _segments(store)[-1]
    data = bytearray(last.read_bytes())
    starts = _record_starts(bytes(data))
    torn = starts[-2]
    end = _used(last)
    data[torn + 100 : end] = bytes(end - torn - 100)  # the last two records lost their ends (a torn write)
    last.write_bytes(bytes(data))
    plan = plan_rebuild(str(store), _config(store), STEP)
    assert max(r.end for r in plan.ranges if r.path == str(last)) == torn + 100 + 8
    report = rebuild_store(plan, scan_serial(plan), output_dir=str(tmp_path / "probe"))
    assert report.valid_end == int(last.name) + torn and report.stop_reason is not None
    _rebuild_matches_dispatcher(store, plan, tmp_path)


def test_chain_leaving_the_plan_is_followed_to_its_stop(small_store: Path, tmp_path: Path) -> None:
    """A plan that ends inside the last record (as one ending in more zeros than the plan's margin would):
    the chain's stop past the plan is still found, and the files are the same."""
    plan = plan_rebuild(str(small_store), _config(small_store), STEP)
    last_path = plan.ranges[-1].path
    starts = _record_starts(Path(last_path).read_bytes())
    cut = tuple(r for r in plan.ranges if r.path != last_path or r.begin <= starts[-1])
    cut = cut[:-1] + (dataclasses.replace(cut[-1], end=starts[-1] + 20),)
    report = _rebuild_matches_dispatcher(small_store, dataclasses.replace(plan, ranges=cut), tmp_path)
    assert report.stop_reason is None  # the zeros after the records, not "end of segment"
