"""Dispatch of runs of facts writes exactly what the fact-by-fact dispatch and the decoder write.

Runs of facts are transposed and written per queue as blocks (``ConsumeQueue.put_run``); their index keys
are hashed and appended key by key for a few records (``IndexFile.put_hashes``) or in one vectorised pass
for many (``index_bulk.joined_key_hashes``, ``put_keys``); a run of one goes on its own.  These tests force
every run down one path or the other and compare the files byte for byte with the decoder's, and check the
pieces against their one-at-a-time references on the edge cases (file rolls, pre-blank fill, gaps, stale
slots, odd keys).
"""

from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rocketstore.message.hashing import index_key_hash, index_key_prefix
from rocketstore.store import dispatch as dispatch_module
from rocketstore.store import index_file as index_file_module
from rocketstore.store.consume_queue import CQ_ENTRY_BYTES, ConsumeQueue
from rocketstore.store.dispatch import _take_run
from rocketstore.store.index_bulk import joined_key_hashes, key_hashes, put_keys
from rocketstore.store.index_file import INDEX_ENTRY, IndexFile
from rocketstore.store.message_store import MessageStore

from .test_dispatch_facts import CONFIG, _files, _history, _put_all


@pytest.mark.parametrize(("run_max", "columns_from", "group_from", "bulk_from", "every"), [
    (97, 1, 1, 1, 7), (97, 1, 1, 1, 10_000), (1, 1, 1, 10**9, 50), (97, 10**9, 1, 10**9, 300),
    (97, 10**9, 10**9, 1, 10_000), (97, 10**9, 10**9, 10**9, 7), (1, 10**9, 1, 1, 300),
    (4096, 1, 1, 10**9, 10_000), (4096, 10**9, 1, 10**9, 10_000)])
def test_every_dispatch_path_writes_the_same_queues_and_index_as_decoding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_max: int, columns_from: int, group_from: int,
        bulk_from: int, every: int) -> None:
    history = _history(11)
    with MessageStore.open(tmp_path / "decoded", CONFIG, background=False) as b:
        b._commitlog.facts = collections.deque(maxlen=0)
        _put_all(b, history, dispatch_every=10_000)
    monkeypatch.setattr(dispatch_module, "_RUN_MAX_FACTS", run_max)  # 1: every record on its own
    monkeypatch.setattr(dispatch_module, "_RUN_MIN_FACTS", 2 if every == 7 else 3)  # runs of 2 both ways
    monkeypatch.setattr(dispatch_module, "_COLUMNS_MIN_FACTS", columns_from)
    monkeypatch.setattr(dispatch_module, "_GROUP_MIN_FACTS", group_from)  # 10**9: fact by fact
    monkeypatch.setattr(index_file_module, "_BULK_MIN_KEYS", bulk_from)
    with MessageStore.open(tmp_path / "facts", CONFIG, background=False) as a:
        _put_all(a, history, dispatch_every=every)
        assert a._dispatcher.error is None
    for sub in ("consumequeue", "index"):
        fa, fb = _files(tmp_path / "facts", sub), _files(tmp_path / "decoded", sub)
        assert [n for n, _ in fa] == [n for n, _ in fb]
        for (name, da), (_, db) in zip(fa, fb):
            assert da == db, f"{sub}/{name} differs"


@pytest.mark.parametrize("listeners", [1, 2])
def test_listeners_hear_every_queued_record_in_order_on_either_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listeners: int) -> None:
    history = _history(12)
    heard: dict[int, list[tuple]] = {}  # type: ignore[type-arg]
    for run_max, columns_from in ((1, 10**9), (4096, 10**9), (4096, 1)):
        monkeypatch.setattr(dispatch_module, "_RUN_MAX_FACTS", run_max)
        monkeypatch.setattr(dispatch_module, "_COLUMNS_MIN_FACTS", columns_from)
        # a lone listener is called from the C-level loop on the column path, in Python on the others
        monkeypatch.setattr(dispatch_module, "_STARMAP_MIN_FACTS", 1 if columns_from == 1 else 10**9)
        got: list[tuple] = []  # type: ignore[type-arg]
        with MessageStore.open(tmp_path / f"{run_max}-{columns_from}", CONFIG, background=False) as s:
            for i in range(listeners):
                s.add_dispatch_listener(lambda *args, got=got, i=i: got.append((i, *args)))
            _put_all(s, history, dispatch_every=40)
        heard[run_max * 2 + (columns_from == 1)] = got
    assert heard[2] == heard[4096 * 2] == heard[4096 * 2 + 1]
    assert len(heard[2]) > 500 * listeners
    if listeners == 2:  # both hear each record before the next record is heard
        assert [row[0] for row in heard[2][:6]] == [0, 1, 0, 1, 0, 1]


def _ends(facts: collections.deque) -> list[int]:  # type: ignore[type-arg]
    return [f[0] for f in facts]


def test_take_run_stops_at_a_hole_and_at_the_bound() -> None:
    facts = collections.deque([(0, 10), (10, 5), (15, 5), (30, 10), (40, 10)])
    assert _take_run(facts, 0, 100) == [(0, 10), (10, 5), (15, 5)]  # a hole at 20..30
    assert _ends(facts) == [30, 40]
    assert _take_run(facts, 30, 45) == [(30, 10)]  # (40, 10) ends past the bound
    assert _ends(facts) == [40]
    assert _take_run(facts, 40, 49) == []
    assert _take_run(facts, 40, 50) == [(40, 10)]
    assert not facts


_Row = tuple[int, int, int, int]  # (commit log offset, size, tags code, queue offset): ConsumeQueue.put's


def _two_queues_and_rows(tmp_path: Path) -> tuple[ConsumeQueue, ConsumeQueue, list[_Row]]:
    """Two empty queues of 7-entry files and 60 consecutive rows for them, from queue offset 5 (a queue
    whose first entry is not 0: the first file gets pre-blank fill)."""
    rng = random.Random(3)
    segment = 7 * CQ_ENTRY_BYTES
    one = ConsumeQueue("T", 0, str(tmp_path / "one"), segment, writable=True)
    bulk = ConsumeQueue("T", 0, str(tmp_path / "bulk"), segment, writable=True)
    offset = 1000
    queue_offset = 5
    rows = []
    for _ in range(60):
        size = rng.randrange(50, 300)
        rows.append((offset, size, rng.randrange(-2**40, 2**40), queue_offset))
        offset += size
        queue_offset += 1
    return one, bulk, rows


def _assert_bulk_writes_what_put_writes(one: ConsumeQueue, bulk: ConsumeQueue, rows: list[_Row], cut: list[int],
                                        put_bulk: Callable[[ConsumeQueue, list[_Row]], int | None]) -> None:
    """*put_bulk* of the rows in the pieces *cut* gives, and writes, what ``put`` gives row by row; then
    the same rows again: what is built is skipped, what follows a gap is refused again, on both sides."""
    bads = []
    for a, b in [*itertools.pairwise(cut), (0, len(rows))]:
        part = rows[a:b]
        bads.append(put_bulk(bulk, part))
        bads.append(next((r[3] for r in part if not one.put(*r)), None))
    assert bads[0::2] == bads[1::2]
    assert any(b is not None for b in bads)
    assert bulk.all_entries().tobytes() == one.all_entries().tobytes()
    assert bulk.max_physic_offset == one.max_physic_offset
    assert bulk.min_logic_offset == one.min_logic_offset
    one.close()
    bulk.close()


def test_put_entries_equals_put_one_by_one_across_files_fill_and_gaps(tmp_path: Path) -> None:
    one, bulk, rows = _two_queues_and_rows(tmp_path)
    rows[40:42] = []  # a gap: both refuse the entry after it the same way

    def put_entries(cq: ConsumeQueue, part: list[_Row]) -> int | None:
        return cq.put_entries(*[np.asarray([r[j] for r in part], dtype=np.int64) for j in range(4)])

    _assert_bulk_writes_what_put_writes(one, bulk, rows, [0, 1, 3, 17, 18, 30, 45, len(rows)], put_entries)


def test_put_run_equals_put_one_by_one_across_files_fill_and_gaps(tmp_path: Path) -> None:
    one, bulk, rows = _two_queues_and_rows(tmp_path)
    # a queue offset given twice, then one that skips (the stretch 45..52 still spans as many queue offsets
    # as it has entries): put skips the second as built and refuses the next as a gap, and so must put_run
    rows[47] = (*rows[47][:3], rows[46][3])

    def put_run(cq: ConsumeQueue, part: list[_Row]) -> int | None:
        return cq.put_run([(o, s, "T", 0, q, 0, 0, t, None, None) for o, s, t, q in part])

    _assert_bulk_writes_what_put_writes(one, bulk, rows, [0, 1, 3, 17, 18, 30, 45, 52, len(rows)], put_run)


def test_vectorised_key_hashes_equal_index_key_hash_for_every_key_shape() -> None:
    rng = random.Random(8)
    shapes = [
        [f"{rng.getrandbits(128):032X}" for _ in range(50)],  # one length: the matrix path
        [rng.choice(("", "a", f"k{i}", "x" * 60, "\u4e2d\u6587", "\U0001F600z")) for i in range(80)],
        ["", "", "a"], ["a", "", ""], [""], ["only"],
        ["k\x00ey", "plain", "\x00"],  # NUL inside a key: no separators to trust
        ["\U0001F600" * 3, "\U0001F600" * 3],  # one length in UTF-16 units, two per character
    ]
    for keys in shapes:
        for topics in (["TopicA"] * len(keys), [rng.choice(("T", "TopicB", "\u4e2d")) for _ in keys]):
            want = [index_key_hash(t, k) for t, k in zip(topics, keys)]
            prefixes = (index_key_prefix(topics[0]) if len(set(topics)) == 1 else
                        np.asarray([index_key_prefix(t) for t in topics], dtype=np.uint64))
            assert key_hashes(prefixes, keys).tolist() == want, keys
            assert joined_key_hashes(prefixes, "\x00".join(keys), keys).tolist() == want, keys


def test_put_keys_treats_a_stale_slot_as_put_key_does(tmp_path: Path) -> None:
    """A slot holding an entry number past the file's count (its page newer than the header after a
    crash) is empty for keys put before the count reaches it and a valid chain head afterwards."""
    files = []
    for name in ("one", "bulk", "few"):
        f = IndexFile(str(tmp_path / name), 11, 100, writable=True, create=True)
        for i in range(3):
            f.put_key(100 + i, 10 * i, 1_700_000_000_000 + i)
        for slot, stale in ((2, 7), (5, 90), (6, -3), (7, 8)):
            f.file.buffer[40 + slot * 4 : 44 + slot * 4] = stale.to_bytes(4, "big", signed=True)
        files.append(f)
    one, bulk, few = files
    hashes = np.asarray([2, 13, 5, 6, 24, 2, 7, 8, 9, 10, 13, 2], dtype=np.int64)
    offsets = np.arange(100, 100 + len(hashes), dtype=np.int64)
    stamps = np.full(len(hashes), 1_700_000_005_000, dtype=np.int64)
    for h, o, t in zip(hashes.tolist(), offsets.tolist(), stamps.tolist()):
        one.put_key(h, o, t)
    assert put_keys(bulk, hashes, offsets, stamps) == len(hashes)
    assert few.put_hashes(hashes.tolist(), offsets.tolist(), stamps.tolist()) == len(hashes)
    for f in files:
        f.flush()
    assert Path(one.path).read_bytes() == Path(bulk.path).read_bytes() == Path(few.path).read_bytes()
    # the run's entries are numbered from 4.  Slot 7 says 8: hash 7 goes in as entry 10, when the count
    # has passed 8, so it chains to entry 8; slot 2 says 7: hash 2 goes in as entry 4, before the count
    # gets there, so its chain starts empty
    assert INDEX_ENTRY.unpack_from(bulk.file.buffer, 40 + 11 * 4 + 10 * 20) == (7, 106, 5, 8)
    assert INDEX_ENTRY.unpack_from(bulk.file.buffer, 40 + 11 * 4 + 4 * 20) == (2, 100, 5, 0)
    for f in files:
        f.close()


@pytest.mark.parametrize("bulk_from", [1, 10**9])
def test_build_run_and_build_one_write_what_build_writes_for_every_run_shape(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk_from: int) -> None:
    """Runs of one topic with a single KEYS token and UNIQ_KEY on all or none of them (listed with C-level
    passes on the few-keys path) and every other shape (listed record by record), across file rolls."""
    monkeypatch.setattr(index_file_module, "_BULK_MIN_KEYS", bulk_from)
    rng = random.Random(21)
    shapes = {
        "uniq and key": lambda i: ("T", f"{i:032X}", f"k{i}"),
        "key only": lambda i: ("T", None, f"key-{i:06d}"),
        "uniq only": lambda i: ("T", f"{i:032X}", None),
        "mixed": lambda i: (rng.choice(("T", "U")), rng.choice((None, f"{i:032X}", "")),
                            rng.choice((None, "", f"a{i} b{i}", f"k{i}", "\U0001f600" + str(i), " x "))),
    }
    for name, make in shapes.items():
        records = [(*make(i), 1000 + 100 * i, 1_700_000_000_000 + 700 * i) for i in range(300)]
        one = index_file_module.IndexService(str(tmp_path / name / "one"), 17, 40, writable=True)
        runs = index_file_module.IndexService(str(tmp_path / name / "runs"), 17, 40, writable=True)
        for topic, uniq, keys, offset, ts in records:
            one.build(topic, offset, ts, 0, uniq, keys)
        i = 0
        while i < len(records):
            part = records[i : i + rng.choice((1, 1, 2, 3, 5, 8, 13, 40))]
            if len(part) == 1:
                topic, uniq, keys, offset, ts = part[0]
                if uniq is not None or keys:
                    runs.build_one(topic, offset, ts, uniq, keys)
            else:
                topics, uniqs, keys_, offsets, stamps = zip(*part)
                runs.build_run(topics, offsets, stamps, uniqs, keys_)
            i += len(part)
        one.flush()
        runs.flush()
        assert len(one.files) == len(runs.files) > 3, name
        for a, b in zip(one.files, runs.files):
            assert Path(a.path).read_bytes() == Path(b.path).read_bytes(), name
        one.close()
        runs.close()
