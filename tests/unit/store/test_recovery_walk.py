"""Abnormal recovery's chunked walk: equal-size runs, uniform properties and consume-queue checks.

The walk checks runs of equal-size records with one strided read, parses the properties of one producer's
records as a byte matrix, and checks consume-queue entries against the records instead of re-dispatching
them.  Each shortcut must give what the one-record walk (``recovery.scan_valid_end``), the general parser
(``rebuild_props.ChunkProperties``) and a full re-dispatch give.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from rocketstore.message.record import Message
from rocketstore.store import recovery
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import CQ_ENTRY
from rocketstore.store.dispatch import Dispatcher
from rocketstore.store.mapped_file import MappedFile
from rocketstore.store.message_store import MessageStore
from rocketstore.store.rebuild_props import ChunkProperties
from rocketstore.store.recovery import scan_valid_end
from rocketstore.store.recovery_scan import UniformProperties
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 18, mapped_file_size_consume_queue=20 * 300,
                     max_hash_slot_num=101, max_index_num=2000)


def _files(root: Path, sub: str) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for dirpath, _, names in sorted(os.walk(root / sub)):
        for name in sorted(names):
            rel = str(len(out)) if sub == "index" else os.path.relpath(os.path.join(dirpath, name), root / sub)
            out.append((rel, (Path(dirpath) / name).read_bytes()))
    return out


def _crash(root: Path) -> None:
    """What a crash before the first checkpoint flush leaves: the abort marker and no checkpoint."""
    (root / "abort").write_bytes(b"")
    os.unlink(root / "checkpoint")


def _runs(store: MessageStore, sizes: list[int], per_run: int, queues: int = 2) -> list[tuple[int, int]]:
    """Runs of equal-size messages (fixed-width keys, a UNIQ_KEY, one tag); (offset, size) of each."""
    out = []
    i = 0
    for run, body in enumerate(sizes):
        for _ in range(per_run):
            m = Message.create("TopicA", bytes([i % 251]) * body, tags="TagA", keys=f"k{i:06d}",
                               properties={"UNIQ_KEY": f"{i:032X}"}, queue_id=i % queues)
            r = store.put(m)
            assert r.ok
            out.append((r.commit_log_offset, r.wrote_bytes))
            i += 1
    return out


# --- properties ---------------------------------------------------------------------------------------


def _props_buffer(rng: random.Random, count: int, even: bool, *, spaces: bool = False, dup: bool = False,
                  non_ascii: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    texts = []
    for i in range(count):
        keys = f"k{rng.randrange(10**6):06d}"
        if spaces and i % 3 == 0:
            keys = keys[:3] + " " + keys[4:]
        pairs = [("TAGS", rng.choice(("TagA", "TagB", "TagC"))), ("KEYS", keys),
                 ("UNIQ_KEY", f"{rng.getrandbits(64):016X}")]
        if dup:
            pairs.append(("TAGS", "TagD"))
        text = "\x02".join(f"{k}\x01{v}" for k, v in pairs).encode()
        if non_ascii and i % 5 == 0:
            text = text.replace(b"TagA", b"T\xc3\xa9A").replace(b"TagB", b"T\xc3\xa9B").replace(b"TagC", b"T\xc3\xa9C")
        texts.append(text)
    length = max(len(t) for t in texts)
    texts = [t.ljust(length, b"x") if len(t) < length else t for t in texts]  # pad the last value
    buf = bytearray()
    starts = []
    for t in texts:
        buf += bytes(rng.randrange(1, 40) if not even else 17)
        starts.append(len(buf))
        buf += t
    return np.frombuffer(bytes(buf), dtype=np.uint8), np.asarray(starts, dtype=np.int64), length


@pytest.mark.parametrize("non_ascii", [True, False])
@pytest.mark.parametrize("even", [True, False])
def test_uniform_properties_answer_as_the_general_parser(even: bool, non_ascii: bool) -> None:
    rng = random.Random(11)
    arr, starts, length = _props_buffer(rng, 300, even, non_ascii=non_ascii)
    uni = UniformProperties.build(arr, starts, length)
    assert uni is not None  # this shape is what the fast path is for
    gen = ChunkProperties(arr, starts, starts + length)
    assert uni.non_ascii.tolist() == gen.non_ascii.tolist()
    ascii_rows = ~gen.non_ascii
    assert uni.tags_codes()[ascii_rows].tolist() == gen.tags_codes()[ascii_rows].tolist()
    topic_ids = np.asarray([i % 2 for i in range(len(starts))], dtype=np.int64)
    indexed = ascii_rows & (np.arange(len(starts)) % 7 != 0)
    got = uni.key_hashes(topic_ids, ["TopicA", "T2"], indexed)
    want = gen.key_hashes(topic_ids, ["TopicA", "T2"], indexed)
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("shape", ["spaces", "dup"])
def test_uniform_properties_decline_what_they_cannot_place(shape: str) -> None:
    rng = random.Random(12)
    arr, starts, length = _props_buffer(rng, 50, True, spaces=shape == "spaces", dup=shape == "dup")
    assert UniformProperties.build(arr, starts, length) is None


def test_uniform_properties_decline_rows_whose_separators_move() -> None:
    rows = [b"TAGS\x01TagA\x02KEYS\x01k00001", b"TAGS\x01TagAA\x02KEYS\x01k0001", b"TAGS\x01TagA\x02KEYX\x01k00001"]
    for other in rows[1:]:
        buf = np.frombuffer(rows[0] + other, dtype=np.uint8)
        assert UniformProperties.build(buf, np.asarray([0, len(rows[0])]), len(rows[0])) is None


# --- the walk ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [[40, 41, 200, 40], [200]])
def test_walk_over_equal_size_runs_stops_where_the_record_walk_stops(tmp_path: Path, sizes: list[int]) -> None:
    """Damage a record inside a run of equal-size records (a size, the magic, a body byte, the last byte, a
    length field) or cut the segment short: the strided run check must stop at the same record, for the
    same reason.  One run alone fills a chunk: its records are checked as one layout, column-wise."""
    src = tmp_path / "src"
    with MessageStore.open(src, CONFIG, background=False) as s:
        records = _runs(s, sizes, 600 // len(sizes))
    segment = (src / "commitlog" / "00000000000000000000").read_bytes()
    rng = random.Random(6)
    cases = ["size", "magic", "body", "tail", "cut", "size_same_run", "body_len", "topic_len", "props_len"]
    for case_no, where in enumerate(cases * 2):
        offset, size = records[rng.randrange(5, len(records) - 5)]
        if offset + size > len(segment):
            continue
        data = bytearray(segment)
        if where == "size":
            data[offset + 3] ^= 0x04
        elif where == "size_same_run":
            data[offset : offset + 4] = (size - 1).to_bytes(4, "big")
        elif where == "magic":
            data[offset + 5] ^= 0x01
        elif where == "body":
            data[offset + 100] ^= 0x20
        elif where == "tail":  # the last byte lost, nothing after it (with a record head after it: whole)
            data[offset + size - 1 :] = bytes(len(data) - offset - size + 1)
        elif where in ("body_len", "topic_len", "props_len"):
            # one length field of one record of a run (IPv4 hosts: BODYLENGTH at +84, the body from +88)
            topic_len_at = offset + 88 + int.from_bytes(data[offset + 84 : offset + 88], "big")
            at = {"body_len": offset + 87, "topic_len": topic_len_at,
                  "props_len": topic_len_at + 1 + data[topic_len_at] + 1}[where]  # low bytes
            data[at] ^= 0x01
        else:
            data[offset + size // 2 :] = bytes(len(data) - offset - size // 2)
        store = tmp_path / f"case{case_no}"
        (store / "commitlog").mkdir(parents=True)
        (store / "commitlog" / "00000000000000000000").write_bytes(bytes(data))
        reference = CommitLog(str(store / "commitlog"), CONFIG.mapped_file_size_commit_log, writable=False,
                              preallocate=False, warm=False)
        reference.files.load(allow_short_tail=True)
        want = scan_valid_end(reference, 0, True)
        reference.close()
        assert want[0] == offset, where
        (store / "abort").write_bytes(b"")
        with MessageStore.open(store, CONFIG, background=False) as s:
            rep = s.recovery
            assert (rep.valid_end, rep.records_checked, rep.first_invalid_reason) == want, where
            assert s.max_offset("TopicA", 0) + s.max_offset("TopicA", 1) == want[1]
            assert verify_store(s).ok


def test_normal_recovery_cuts_a_torn_run_like_the_record_walk(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG, background=False) as s:
        records = _runs(s, [64], 300)
    offset, size = records[200]
    path = root / "commitlog" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    # record 200 lost its last byte and nothing follows it (a record head after it says it was written whole)
    data[offset + size - 1 :] = bytes(len(data) - offset - size + 1)
    path.write_bytes(bytes(data))
    with MessageStore.open(root, CONFIG, background=False) as s:
        assert not s.recovery.abnormal
        assert (s.recovery.valid_end, s.recovery.records_checked) == (offset, 200)
        assert s.recovery.first_invalid_reason == "record ends in zero bytes (torn write)"
        assert s.max_offset("TopicA", 0) + s.max_offset("TopicA", 1) == 200


# --- consume queues: checked, not trusted -----------------------------------------------------------------


@pytest.mark.parametrize("piece_bytes", [16 << 20, 1000])
def test_abnormal_recovery_checks_consume_queue_entries_against_the_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece_bytes: int) -> None:
    """Consume queues survive the crash but hold a plausible wrong entry (a wrong size; a torn tagsCode), a
    stale entry past the queue's last record and a queue no record belongs to: each is found and rebuilt, and the result is byte for byte
    what a full rebuild gives; the index (newer than the missing checkpoint) is rebuilt the same, also when
    the properties are parsed a few records at a time."""
    monkeypatch.setattr(recovery, "_PROPS_PIECE_BYTES", piece_bytes)
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG, background=False) as s:
        records = _runs(s, [90, 90, 120], 200, queues=3)
        assert s.wait_dispatched()
    live = {sub: _files(root, sub) for sub in ("consumequeue", "index")}
    cq_root = root / "consumequeue" / "TopicA"
    q0 = cq_root / "0" / "00000000000000000000"
    data = bytearray(q0.read_bytes())
    offset, size, tags = CQ_ENTRY.unpack_from(data, 20 * 40)
    CQ_ENTRY.pack_into(data, 20 * 40, offset, size + 4, tags)  # a torn page: right offset, wrong size
    q0.write_bytes(bytes(data))
    q1 = cq_root / "1" / "00000000000000000000"
    data = bytearray(q1.read_bytes())
    count = len(records) // 3
    CQ_ENTRY.pack_into(data, 20 * count, *records[-1], 0)  # an entry past the queue's last record
    q1.write_bytes(bytes(data))
    q2 = cq_root / "2" / "00000000000000000000"
    data = bytearray(q2.read_bytes())
    offset, size, tags = CQ_ENTRY.unpack_from(data, 20 * 10)
    data[20 * 10 + 16 : 20 * 10 + 20] = bytes(4)  # a torn sector: offset and size intact, the tagsCode not
    assert CQ_ENTRY.unpack_from(data, 20 * 10) != (offset, size, tags)
    q2.write_bytes(bytes(data))
    stray = cq_root / "7"
    stray.mkdir()
    (stray / "00000000000000000000").write_bytes(CQ_ENTRY.pack(*records[3], 0) + bytes(20 * 299))
    _crash(root)
    with MessageStore.open(root, CONFIG, background=False) as s:
        assert s.recovery.records_checked == len(records)
        assert s.max_offset("TopicA", 7) == 0
        assert s.max_offset("TopicA", 1) == count
        got = s.get("TopicA", 0, 40, max_count=1)
        assert got.messages and got.messages[0].commit_log_offset == records[120][0]
        assert verify_store(s).ok
    for sub in ("consumequeue", "index"):
        have = [f for f in _files(root, sub) if not f[0].startswith("TopicA/7")]
        assert have == live[sub], sub


def test_abnormal_recovery_keeps_a_recreated_topics_queue(tmp_path: Path) -> None:
    """A topic deleted (its consume queues dropped) and written again: the walk meets the deleted topic's
    records (queue offsets 0..4) before the new queue's (0, 1).  They are records the queue never held,
    skipped as RocketMQ's maxPhysicOffset rule skips them, not a reason to rebuild the queue from them."""
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG, background=False) as s:
        for i in range(5):
            assert s.put(Message.create("TopicA", b"old%d" % i, queue_id=0)).ok
        assert s.wait_dispatched()
        assert s.clean_unused_topics(set()) == [("TopicA", 0)]
        for i in range(2):
            assert s.put(Message.create("TopicA", b"new%d" % i, queue_id=0)).queue_offset == i
        assert s.wait_dispatched()
    before = _files(root, "consumequeue")
    _crash(root)
    with MessageStore.open(root, CONFIG, background=False) as s:
        assert [(m.queue_offset, m.body) for m in s.get("TopicA", 0, 0, max_count=10).messages] == \
            [(0, b"new0"), (1, b"new1")]
        assert s.max_offset("TopicA", 0) == 2
        assert s.put(Message.create("TopicA", b"new2", queue_id=0)).queue_offset == 2
    assert _files(root, "consumequeue")[0][1].startswith(before[0][1][:40])


def test_abnormal_recovery_keeps_entries_that_check_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Intact consume queues are not rewritten: their files keep their bytes and nothing is re-dispatched
    into them (the walk only compares)."""
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG, background=False) as s:
        _runs(s, [70, 300], 250)
    before = _files(root, "consumequeue")
    _crash(root)
    dispatched: list[int] = []
    real = Dispatcher.dispatch_facts

    def counting(self: Dispatcher, facts: list) -> None:  # type: ignore[type-arg]
        dispatched.append(len(facts))
        real(self, facts)

    monkeypatch.setattr(Dispatcher, "dispatch_facts", counting)
    with MessageStore.open(root, CONFIG, background=False) as s:
        assert sum(dispatched) == 0
        assert s.recovery.first_invalid_reason is None
        assert s._dispatcher.error is None
    assert _files(root, "consumequeue") == before


def test_data_ranges_cover_every_written_byte_and_zero_from_clears_them(tmp_path: Path) -> None:
    """The tail scans skip what the file system reports as holes (preallocated, never written): every byte
    written through the mapping, flushed or not, must lie in a reported range, and zero_from must clear
    every one of them."""
    size = 8 << 20
    mf = MappedFile(str(tmp_path / "seg"), 0, size, writable=True, create=True)
    try:
        rng = random.Random(3)
        spots = sorted(rng.randrange(size - 8) for _ in range(20))
        for spot in spots[:10]:
            mf.write_at(spot, b"\x01abcdefg")
        mf.flush(0)
        for spot in spots[10:]:
            mf.write_at(spot, b"\x02abcdefg")  # dirty pages only
        ranges = mf.data_ranges(0, size)
        assert all(a < b for a, b in ranges) and ranges == sorted(ranges)
        for spot in spots:
            assert any(a <= spot and spot + 8 <= b for a, b in ranges), spot
        cut = spots[5]
        mf.zero_from(cut)
        data = mf.read(0, size)
        assert data[cut:] == bytes(size - cut)
        assert all(data[s : s + 8] in (b"\x01abcdefg", b"\x02abcdefg") for s in spots[:5] if s + 8 <= cut)
    finally:
        mf.close()
