"""Dispatch from the writer's facts and in bulk builds exactly what decoding each record builds.

Live puts hand the dispatcher (topic, queue, offsets, tagsCode, keys) instead of having it decode the record,
and consume-queue and index entries are written a run at a time.  These tests build the same history twice,
once through the facts and once through the decoder (facts switched off), and once more by abnormal
recovery, and compare the consume-queue and index files byte for byte.
"""

from __future__ import annotations

import collections
import os
import random
from pathlib import Path

import numpy as np

from rocketstore.message.hashing import index_key_hash
from rocketstore.message.host import parse_host
from rocketstore.message.record import Message, SysFlag
from rocketstore.store.config import StoreConfig
from rocketstore.store.index_bulk import index_key_hashes, put_keys
from rocketstore.store.index_file import IndexFile
from rocketstore.store.message_store import MessageStore

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, mapped_file_size_consume_queue=20 * 50,
                     max_hash_slot_num=37, max_index_num=300)
HOST = parse_host("10.0.0.1:10911")


def _history(seed: int) -> list[list[Message]]:
    """Single puts and batches over a few queues: tags, keys of many lengths (non-BMP too), UNIQ_KEYs,
    transactions, delays, and values the dict and the stored string disagree on."""
    rng = random.Random(seed)
    ts = 1_700_000_000_000
    out: list[list[Message]] = []
    for i in range(700):
        ts += rng.choice((0, 1, 7, 999, 1000, 2500))
        topic = rng.choice(("TopicA", "TopicB", "TopicC"))
        queue_id = rng.randrange(3)
        keys = rng.choice((None, f"k{i}", f"order-{i:06d}", f"a{i} b{i}  c", "\U0001f600" + str(i), "", "x" * 40))
        props: dict[str, str] = {}
        if rng.random() < 0.3:
            props["UNIQ_KEY"] = f"{rng.getrandbits(128):032X}"
        if rng.random() < 0.05:
            props["TAGS"] = "odd\x02KEYS\x01injected"  # separators inside a value: the record says otherwise
        if rng.random() < 0.05:
            props["UNIQ_KEY"] = ""
        fields: dict[str, object] = {"store_timestamp": ts, "born_timestamp": ts, "born_host": HOST,
                                     "store_host": HOST}
        kind = rng.random()
        if kind < 0.05:
            fields["sys_flag"] = rng.choice((SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE,
                                             SysFlag.TRANSACTION_COMMIT_TYPE))
        elif kind < 0.08:
            props["DELAY"] = "2"
        m = Message.create(topic, rng.randbytes(rng.randrange(0, 300)), tags=rng.choice((None, "TagA", "TagB")),
                           keys=keys, properties=props, queue_id=queue_id, **fields)
        if kind > 0.8 and "DELAY" not in props:
            n = rng.randrange(1, 20)
            batch = [Message.create(topic, rng.randbytes(50), tags="TagB", keys=f"bk{i}-{j}",
                                    queue_id=queue_id, **{k: v for k, v in fields.items() if k != "sys_flag"})
                     for j in range(n)]
            out.append(batch)
        else:
            out.append([m])
    return out


def _put_all(store: MessageStore, history: list[list[Message]], dispatch_every: int) -> None:
    for i, batch in enumerate(history):
        r = store.put(batch[0]) if len(batch) == 1 else store.put_batch(batch)
        assert r.ok, r
        if i % dispatch_every == 0:
            assert store.wait_dispatched()
    assert store.wait_dispatched()


def _files(root: Path, sub: str) -> list[tuple[str, bytes]]:
    base = root / sub
    out = []
    for dirpath, _, names in sorted(os.walk(base)):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(dirpath, name), base)
            if sub == "index":
                rel = str(len(out))  # index files are named after the wall clock
            out.append((rel, (Path(dirpath) / name).read_bytes()))
    return out


def _assert_same_as_decoded(root: Path, history: list[list[Message]], decoded: Path) -> None:
    """*root*'s consume queues and index are those of *history* stored at *decoded* with no facts (every
    record through the decoder, dispatched once at the end)."""
    with MessageStore.open(decoded, CONFIG, background=False) as b:
        b._commitlog.facts = collections.deque(maxlen=0)
        _put_all(b, history, dispatch_every=10_000)
    for sub in ("consumequeue", "index"):
        assert _files(root, sub) == _files(decoded, sub)


def _crash_and_wipe_derived(root: Path) -> dict[str, list[tuple[str, bytes]]]:
    """The consume queue and index files of the closed store at *root*; then the store as after a crash
    before any checkpoint (abort file, no checkpoint), with every consume queue and index file gone."""
    live = {sub: _files(root, sub) for sub in ("consumequeue", "index")}
    (root / "abort").write_bytes(b"")
    os.unlink(root / "checkpoint")
    for sub in ("consumequeue", "index"):
        for dirpath, _, names in os.walk(root / sub):
            for name in names:
                os.unlink(os.path.join(dirpath, name))
    return live


def test_dispatch_from_facts_writes_the_same_queues_and_index_as_decoding(tmp_path: Path) -> None:
    history = _history(1)
    with MessageStore.open(tmp_path / "facts", CONFIG, background=False) as a:
        _put_all(a, history, dispatch_every=37)
        assert a._dispatcher.error is None
    with MessageStore.open(tmp_path / "decoded", CONFIG, background=False) as b:
        b._commitlog.facts = collections.deque(maxlen=0)  # every record goes through the decoder
        _put_all(b, history, dispatch_every=11)
        assert b._dispatcher.error is None
    assert (tmp_path / "facts" / "commitlog").exists()
    for sub in ("consumequeue", "index"):
        fa, fb = _files(tmp_path / "facts", sub), _files(tmp_path / "decoded", sub)
        assert [n for n, _ in fa] == [n for n, _ in fb]
        assert len(fa) > 3
        for (name, da), (_, db) in zip(fa, fb):
            assert da == db, f"{sub}/{name} differs"


def test_background_dispatch_from_facts_matches_the_decoder(tmp_path: Path) -> None:
    history = _history(2)
    with MessageStore.open(tmp_path / "facts", CONFIG) as a:
        _put_all(a, history, dispatch_every=10_000)
    _assert_same_as_decoded(tmp_path / "facts", history, tmp_path / "decoded")


def test_abnormal_recovery_rebuilds_the_same_queues_and_index(tmp_path: Path) -> None:
    history = _history(3)
    with MessageStore.open(tmp_path / "live", CONFIG, background=False) as a:
        _put_all(a, history, dispatch_every=50)
    # a crash before any checkpoint: everything is re-dispatched from the commitlog
    live = _crash_and_wipe_derived(tmp_path / "live")
    with MessageStore.open(tmp_path / "live", CONFIG, background=False) as s:
        assert s.recovery.abnormal
        assert s.recovery.records_checked == sum(len(b) for b in history)
    for sub in ("consumequeue", "index"):
        assert _files(tmp_path / "live", sub) == live[sub], sub


def test_vectorised_key_hashes_equal_java_string_hash() -> None:
    rng = random.Random(5)
    topics, keys = [], []
    for i in range(500):
        topics.append(rng.choice(("T", "TopicA", "\u4e2d\u6587")))
        keys.append(rng.choice((f"k{i}", f"{i:032X}", "\U0001f600" * (i % 3) + "z", "", "k" * (i % 50))))
    got = index_key_hashes(topics, keys)
    assert got.tolist() == [index_key_hash(t, k) for t, k in zip(topics, keys)]


def test_bulk_index_entries_are_byte_identical_to_put_key(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    n = 900
    hashes = rng.integers(0, 1 << 31, n, dtype=np.int64)
    hashes[::7] = hashes[0]  # long chains in one slot
    offsets = np.cumsum(rng.integers(1, 500, n)).astype(np.int64)
    stamps = (1_700_000_000_000 + np.cumsum(rng.integers(0, 3000, n))).astype(np.int64)
    one = IndexFile(str(tmp_path / "one"), 53, 1000, writable=True, create=True)
    bulk = IndexFile(str(tmp_path / "bulk"), 53, 1000, writable=True, create=True)
    for h, o, t in zip(hashes.tolist(), offsets.tolist(), stamps.tolist()):
        assert one.put_key(h, o, t)
    done = 0
    for step in (1, 2, 5, 100, 400, 1000):
        done += put_keys(bulk, hashes[done : done + step], offsets[done : done + step], stamps[done : done + step])
    assert done == n
    assert put_keys(bulk, hashes[:200], offsets[:200], stamps[:200]) == 1000 - 1 - n  # only the room left
    for h, o, t in zip(hashes[:200].tolist(), offsets[:200].tolist(), stamps[:200].tolist()):
        one.put_key(h, o, t)
    one.flush()
    bulk.flush()
    assert Path(one.path).read_bytes() == Path(bulk.path).read_bytes()
    one.close()
    bulk.close()


def test_chunked_recovery_walk_stops_where_the_record_walk_stops(tmp_path: Path) -> None:
    """Damage one byte of a store (a body byte, a length, a tail byte) and recover abnormally: the chunked,
    vectorised walk must cut at the same record, for the same reason, as the record-at-a-time walk."""
    from rocketstore.store.commitlog import CommitLog
    from rocketstore.store.recovery import scan_valid_end

    config = CONFIG.replace(mapped_file_size_commit_log=1 << 20)
    src = tmp_path / "src"
    with MessageStore.open(src, config, background=False) as s:
        offsets = []
        for i in range(400):
            r = s.put(Message.create("TopicA", bytes([i % 251]) * (50 + i % 90), tags="TagA", keys=f"k{i}",
                                     queue_id=i % 2))
            assert r.ok
            offsets.append((r.commit_log_offset, r.wrote_bytes))
    segment = next((src / "commitlog").iterdir()).read_bytes()
    rng = random.Random(4)
    for case in range(12):
        offset, size = offsets[rng.randrange(20, 380)]
        where = ("body", "size", "tail", "topic_len")[case % 4]
        data = bytearray(segment)
        if where == "body":
            data[offset + 90] ^= 0x40
        elif where == "size":
            data[offset + 3] ^= 0x01
        elif where == "tail":  # the last byte lost, nothing after it (with a record head after it: whole)
            data[offset + size - 1 :] = bytes(len(data) - offset - size + 1)
        else:
            data[offset + size - 12] ^= 0x7F
        store = tmp_path / f"case{case}"
        (store / "commitlog").mkdir(parents=True)
        (store / "commitlog" / "00000000000000000000").write_bytes(bytes(data))
        reference = CommitLog(str(store / "commitlog"), 1 << 20, writable=False, preallocate=False, warm=False)
        reference.files.load(allow_short_tail=True)
        want_end, want_records, want_reason = scan_valid_end(reference, 0, True)
        reference.close()
        (store / "abort").write_bytes(b"")
        with MessageStore.open(store, config, background=False) as s:
            rep = s.recovery
            assert (rep.valid_end, rep.records_checked, rep.first_invalid_reason) == \
                   (want_end, want_records, want_reason), where
            if where != "topic_len":  # a byte inside the properties text is not checked by anyone
                assert want_end == offset, where
            assert sum(s.max_offset("TopicA", q) for q in (0, 1)) == want_records


def test_a_backlog_past_the_facts_cap_is_decoded_and_matches(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Nobody dispatching for a while: facts stop at the cap, the records after it are decoded, and the
    queues and index come out the same as when every record is decoded."""
    import rocketstore.store.commitlog as commitlog_module

    history = _history(6)
    monkeypatch.setattr(commitlog_module, "FACTS_MAX", 50)
    with MessageStore.open(tmp_path / "capped", CONFIG, background=False) as a:
        _put_all(a, history, dispatch_every=120)
    monkeypatch.undo()
    _assert_same_as_decoded(tmp_path / "capped", history, tmp_path / "decoded")


def test_abnormal_recovery_of_ipv6_host_records_walks_them_one_by_one_with_the_same_result(tmp_path: Path) -> None:
    """Records with an IPv6 born host have a longer header: the vectorised chunk walk hands them to the
    record-at-a-time walk, which must rebuild the same queues and index."""
    v6 = parse_host("[::1]:10911")
    with MessageStore.open(tmp_path / "live", CONFIG, background=False) as a:
        for i in range(300):
            born = v6 if i % 3 == 0 else HOST
            m = Message.create("TopicA", bytes([i % 256]) * (i % 120), tags=f"T{i % 4}", keys=f"k{i} x{i}",
                               queue_id=i % 3, born_host=born, store_timestamp=1_700_000_000_000 + i * 700,
                               born_timestamp=1)
            assert a.put(m).ok
        assert a.wait_dispatched()
    live = _crash_and_wipe_derived(tmp_path / "live")
    with MessageStore.open(tmp_path / "live", CONFIG, background=False) as s:
        assert s.recovery.records_checked == 300
        assert s.recovery.first_invalid_reason is None
    for sub in ("consumequeue", "index"):
        assert _files(tmp_path / "live", sub) == live[sub], sub
