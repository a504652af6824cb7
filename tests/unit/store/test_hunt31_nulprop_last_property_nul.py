"""A record whose last property value ends in U+0000 is a whole record, not a torn write.

4.9.3 stores no separator after the last property (and ``Message.putUserProperty`` takes "v\\u0000"), so
such a record's last byte is zero.  Recovery took every record ending in a zero byte for a torn write: a
clean restart, or a crash, cut the commitlog there and lost that record and every later one (the next
puts then took their queue offsets again).  A record ending in a zero byte is now torn only when no record
head follows it.  Checked through recovery (clean and crash, the one-at-a-time gather walk and the
column-wise walk of one producer's run), ``store dump``, the snapshot's tail check and the rebuild scan.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.dump import commitlog_records
from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial
from rocketstore.store.recovery import scan_valid_end
from rocketstore.store.recovery_scan import SegmentReader
from rocketstore.store.snapshot import StoreSnapshot

SEGMENT = 8192
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 64,
                     max_hash_slot_num=8, max_index_num=64, preallocate_commit_log=False)
NUL = {"k": "v\x00"}
#: how many records of one size (a run: segment 1 holds nothing else, so it is walked column-wise)
RUN = 200


def _config(root: Path) -> StoreConfig:
    return CONFIG.replace(store_path_root_dir=str(root))


def _fill(store: MessageStore, root: Path) -> list[tuple[int, int]]:
    """Mixed sizes with one NUL-ended record inside, a run of NUL-ended records, then plain records."""
    puts = [Message.create("NulT", b"first", queue_id=0),
            Message.create("NulT", b"nul", queue_id=1, properties=NUL),
            Message.create("NulT", b"after-0", queue_id=0),
            Message.create("NulT", b"after-1", queue_id=2)]
    puts += [Message.create("NulT", b"run", queue_id=3, properties=NUL) for _ in range(RUN)]
    puts += [Message.create("NulT", b"tail-%d" % i, queue_id=0) for i in range(3)]
    spans = []
    for m in puts:
        r = store.put(m)
        assert r.ok, r
        spans.append((r.commit_log_offset, r.wrote_bytes))
    assert store.wait_dispatched(30)
    # the premise: these records end in a zero byte (no separator after the last property)
    for offset, size in (spans[1], spans[4], spans[3 + RUN]):
        seg = root / "commitlog" / f"{offset - offset % SEGMENT:020d}"
        assert seg.read_bytes()[offset % SEGMENT + size - 1] == 0
    return spans


def _expected() -> dict[int, list[tuple[bytes, dict[str, str]]]]:
    return {0: [(b"first", {}), (b"after-0", {})] + [(b"tail-%d" % i, {}) for i in range(3)],
            1: [(b"nul", NUL)], 2: [(b"after-1", {})], 3: [(b"run", NUL)] * RUN}


def _check(store: MessageStore, end: int) -> None:
    rep = store.recovery
    assert (rep.valid_end, rep.truncated_bytes, rep.first_invalid_reason, rep.dropped_queue_entries) == \
        (end, 0, None, 0)
    assert store.max_commit_log_offset == end
    for queue_id, want in _expected().items():
        assert store.max_offset("NulT", queue_id) == len(want)
        got = []
        offset = store.min_offset("NulT", queue_id)
        while True:
            batch = store.get("NulT", queue_id, offset, 32)
            if not batch.records:
                break
            got += [(m.body, {k: v for k, v in m.properties.items() if k == "k"}) for m in batch.messages]
            offset = batch.next_begin_offset
        assert got == want, queue_id


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """(a store closed cleanly, a copy of it taken while it was open (a kill -9), the commitlog's end)."""
    base = tmp_path_factory.mktemp("nulprop")
    live, crashed = base / "live", base / "crashed"
    with MessageStore.open(live, _config(live), background=False) as store:
        _fill(store, live)
        end = store.max_commit_log_offset
        shutil.copytree(live, crashed, ignore=shutil.ignore_patterns("lock"))
    assert (crashed / "abort").exists() and not (live / "abort").exists()
    assert len(list((live / "commitlog").iterdir())) >= 3  # segment 1 is all run
    return live, crashed, end


@pytest.mark.parametrize("crash", [False, True], ids=["clean", "crash"])
def test_reopen_keeps_every_record_after_a_nul_ended_one(written: tuple[Path, Path, int], tmp_path: Path,
                                                         crash: bool) -> None:
    src = written[1] if crash else written[0]
    root = shutil.copytree(src, tmp_path / "s")
    with MessageStore.open(root, _config(root), background=False) as store:
        assert store.recovery.abnormal == crash
        _check(store, written[2])
        # new puts take the next queue offsets, not the ones of records a cut would have lost
        assert store.put(Message.create("NulT", b"new", queue_id=0)).queue_offset == 5
    with MessageStore.open(root, _config(root), background=False) as store:  # and once more
        assert store.recovery.first_invalid_reason is None
        assert store.max_offset("NulT", 3) == RUN


def test_dump_lists_every_record(written: tuple[Path, Path, int], tmp_path: Path) -> None:
    root = shutil.copytree(written[0], tmp_path / "s")
    with MessageStore.open(root, _config(root), background=False) as store:
        records = commitlog_records(store)
    assert [r["type"] for r in records if r["type"] != "BLANK"] == ["MESSAGE"] * (RUN + 7)


def test_chunked_walk_agrees_with_the_record_walk(written: tuple[Path, Path, int], tmp_path: Path) -> None:
    root = shutil.copytree(written[0], tmp_path / "s")
    with MessageStore.open(root, _config(root), background=False, read_only=True) as store:
        commitlog = store._commitlog
        assert scan_valid_end(commitlog, 0, True) == (written[2], RUN + 7, None)
        run = commitlog.files.files[1]
        with SegmentReader(run.buffer, run.size_bytes) as reader:
            # a chunk that stops inside the run: its last record is followed by the next one's head
            chunk = reader.chunk(0, True, max_records=10)
            assert (len(chunk), chunk.reason) == (10, None)
            whole = reader.chunk(0, True)  # the whole segment: its last record is followed by the blank
            assert whole.reason == "BLANK" and len(whole) > 10


def test_snapshot_tails_and_rebuild_scan(written: tuple[Path, Path, int], tmp_path: Path) -> None:
    root = shutil.copytree(written[0], tmp_path / "s")
    with StoreSnapshot.open(str(root), _config(root)) as snap:
        assert snap.tails_agree()  # queue 1's last entry is the NUL-ended record
    plan = plan_rebuild(str(root), _config(root), 64 << 10)
    report = rebuild_store(plan, scan_serial(plan), output_dir=str(tmp_path / "out"))
    assert (report.valid_end, report.stop_reason, report.record_count) == (written[2], None, RUN + 7)
