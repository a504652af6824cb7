"""The commitlog rebuild (store.rebuild + store.rebuild_scan, serial scan) against the store's own dispatcher.

Stores use tiny geometry so commitlog segments, consume-queue files and index files all roll; the reference
is the same commitlog dispatched by MessageStore.open on a copy without consumequeue/ and index/.
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketstore.errors import CorruptFileError, StoreConfigError, StoreLockedError
from rocketstore.message.host import parse_host
from rocketstore.message.record import Message, SysFlag
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial
from rocketstore.store.rebuild_scan import scan_range
from rocketstore.store.verify import verify_store

SEGMENT = 64 * 1024
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 15,
                     max_hash_slot_num=16, max_index_num=40, preallocate_commit_log=False)
KEYS = ["order-1", "k2 k3", "  spaced   keys  ", "ключ", "emoji-🙂 x", "a", "TAGS", "x\x01y"]
TAGS = ["TagA", "TagB", "тег", "🙂", "", "a||b"]


def _messages(seed: int, count: int) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        topic = rng.choice(["TopicA", "TopicB", "Topic_C-%x"])
        props: dict[str, str] = {}
        if rng.random() < 0.3:
            props["userProp"] = rng.choice(["v", "TAGS\x01fake", "KEYS"])
        tags = rng.choice(TAGS)
        kwargs: dict[str, object] = {"queue_id": rng.randrange(3)}
        if rng.random() < 0.1:
            kwargs["born_host"] = parse_host("[2001:db8::1]:4000")
        if rng.random() < 0.1:
            kwargs["sys_flag"] = rng.choice([SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE,
                                             SysFlag.TRANSACTION_ROLLBACK_TYPE])
        if rng.random() < 0.05:
            props["DELAY"] = str(rng.choice([1, 2, 18, 40]))
        out.append(Message.create(topic, rng.randbytes(rng.randrange(0, 600)), tags=tags or None,
                                  keys=rng.choice(KEYS) if rng.random() < 0.7 else None,
                                  uniq_key=f"UNIQ{i:06d}" if rng.random() < 0.5 else None, properties=props,
                                  **kwargs))
    return out


def _write_store(path: Path, messages: list[Message]) -> None:
    with MessageStore.open(path, CONFIG) as store:
        for m in messages:
            result = store.put(m)
            assert result.status.name == "PUT_OK", result
        assert store.wait_dispatched(30)


def _dispatcher_reference(source: Path, dest: Path) -> Path:
    """The store's own dispatcher over the same commitlog: a copy without consumequeue/, index/, checkpoint."""
    dest.mkdir()
    shutil.copytree(source / "commitlog", dest / "commitlog")
    MessageStore.open(dest, CONFIG, background=False).close()
    return dest


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _index_contents(root: Path) -> list[bytes]:
    """Index files in name (creation) order; their names carry creation times, so only contents compare."""
    return [p.read_bytes() for p in sorted((root / "index").iterdir())] if (root / "index").exists() else []


def _rebuild(store: Path, out: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    plan = plan_rebuild(str(store), CONFIG.replace(store_path_root_dir=str(store)),
                        int(kwargs.pop("range_bytes", SEGMENT)))  # type: ignore[call-overload]
    return rebuild_store(plan, scan_serial(plan), output_dir=str(out), **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def varied_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("varied") / "store"
    _write_store(path, _messages(1, 900))
    return path


@pytest.fixture(scope="module")
def reference(varied_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _dispatcher_reference(varied_store, tmp_path_factory.mktemp("ref") / "store")


@pytest.mark.parametrize("range_bytes", [SEGMENT, 4096])
def test_rebuilt_files_are_byte_identical_to_the_dispatchers(varied_store: Path, reference: Path, tmp_path: Path,
                                                             range_bytes: int) -> None:
    report = _rebuild(varied_store, tmp_path / "out", range_bytes=range_bytes)
    assert len(list((varied_store / "commitlog").iterdir())) >= 5
    assert _tree(tmp_path / "out" / "consumequeue") == _tree(reference / "consumequeue")
    ours, theirs = _index_contents(tmp_path / "out"), _index_contents(reference)
    assert len(theirs) >= 3 and ours == theirs
    assert report.valid_end == MessageStore.open(reference, CONFIG, read_only=True).max_commit_log_offset
    assert report.skipped == [] and report.stop_reason is None


def test_sub_range_scan_starts_at_a_record_and_agrees_with_the_whole_segment(varied_store: Path) -> None:
    plan = plan_rebuild(str(varied_store), CONFIG.replace(store_path_root_dir=str(varied_store)), SEGMENT)
    whole = scan_range(plan.ranges[0], True, plan.rule)
    half = plan.ranges[0].__class__(plan.ranges[0].path, 0, SEGMENT, 5000, SEGMENT)
    tail = scan_range(half, True, plan.rule)
    assert tail.first_pos in set(whole.position.tolist())
    k = whole.position.tolist().index(tail.first_pos)
    assert tail.queue_offset.tolist() == whole.queue_offset[k:].tolist()
    assert tail.tags_code.tolist() == whole.tags_code[k:].tolist()


def test_queue_starting_after_retention_gets_the_dispatchers_pre_blank_fill(varied_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(varied_store / "commitlog", store / "commitlog")
    first_two = sorted((store / "commitlog").iterdir())[:2]
    for f in first_two:  # retention removed the oldest segments
        f.unlink()
    reference = _dispatcher_reference(store, tmp_path / "ref")
    _rebuild(store, tmp_path / "out")
    ours = _tree(tmp_path / "out" / "consumequeue")
    assert ours == _tree(reference / "consumequeue")
    first_files: dict[str, str] = {}
    for name in ours:
        queue, file_name = name.rsplit("/", 1)
        first_files[queue] = min(first_files.get(queue, file_name), file_name)
    late = [q for q, f in first_files.items() if int(f) > 0]
    assert late, "retention should leave queues whose first file starts past offset 0"
    blank = struct.pack(">qiq", 0, 0x7FFFFFFF, 0)
    assert any(ours[f"{q}/{first_files[q]}"].startswith(blank) for q in late)
    assert _index_contents(tmp_path / "out") == _index_contents(reference)


def _body_of_record_in_segment(store: Path, segment_index: int) -> tuple[Path, int]:
    """A segment file and the commitlog offset of the first record in it with a non-empty body."""
    seg = sorted((store / "commitlog").iterdir())[segment_index]
    data = seg.read_bytes()
    pos = 0
    while True:
        size = struct.unpack_from(">i", data, pos)[0]
        body_len = struct.unpack_from(">i", data, pos + 84)[0]
        if data[pos + 36 + 3] & 0x30 == 0 and body_len > 0:
            return seg, int(seg.name) + pos
        pos += size


def test_damaged_record_stops_the_rebuild_with_its_offset(varied_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(varied_store, store)
    seg, offset = _body_of_record_in_segment(store, 1)
    with open(seg, "r+b") as fh:  # flip a body byte: the CRC no longer matches
        fh.seek(offset - int(seg.name) + 88)
        byte = fh.read(1)
        fh.seek(offset - int(seg.name) + 88)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptFileError) as err:
        _rebuild(store, tmp_path / "out")
    assert err.value.offset == offset
    assert "body CRC mismatch" in str(err.value)

    report = _rebuild(store, tmp_path / "out2", skip_bad=True)
    next_segment = int(sorted((store / "commitlog").iterdir())[2].name)
    assert report.skipped == [(offset, next_segment, "body CRC mismatch")]
    assert report.valid_end == MessageStore.open(varied_store, CONFIG, read_only=True).max_commit_log_offset


def test_torn_tail_ends_the_commitlog_where_recovery_does(varied_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(varied_store / "commitlog", store / "commitlog")
    for last in sorted((store / "commitlog").iterdir())[::-1]:
        data = bytearray(last.read_bytes())
        pos = 0
        starts = []
        while struct.unpack_from(">i", data, pos + 4)[0] == -626843481:
            starts.append(pos)
            pos += struct.unpack_from(">i", data, pos)[0]
        if len(starts) >= 2:
            break
    for later in sorted((store / "commitlog").iterdir()):
        if later.name > last.name:
            later.unlink()
    torn = starts[-2]
    data[torn + 100 : pos] = bytes(pos - torn - 100)  # the last two records lost their ends
    last.write_bytes(bytes(data))
    report = _rebuild(store, tmp_path / "out")
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    with MessageStore.open(copy, CONFIG, read_only=True) as s:
        assert report.valid_end == s.recovery.valid_end == int(last.name) + torn
    assert report.stop_reason is not None


def test_in_place_is_refused_while_the_store_is_open(varied_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(varied_store, store)
    before = _tree(store / "consumequeue")
    plan = plan_rebuild(str(store), CONFIG.replace(store_path_root_dir=str(store)))
    with MessageStore.open(store, CONFIG), pytest.raises(StoreLockedError):
        rebuild_store(plan, scan_serial(plan), in_place=True)
    assert _tree(store / "consumequeue") == before


def test_in_place_rebuild_opens_without_re_dispatch_and_verifies(varied_store: Path, reference: Path,
                                                                  tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    shutil.copytree(varied_store / "commitlog", store / "commitlog")
    plan = plan_rebuild(str(store), CONFIG.replace(store_path_root_dir=str(store)))
    report = rebuild_store(plan, scan_serial(plan), in_place=True)
    assert report.in_place and not any(p.name.startswith(".rebuild") for p in store.iterdir())
    rebuilt = _tree(store / "consumequeue")
    assert rebuilt == _tree(reference / "consumequeue")
    with MessageStore.open(store, CONFIG, background=False) as s:
        assert not s.recovery.abnormal
        assert verify_store(s).ok
        assert s.get("TopicA", 0, 0, 4).records
    assert _tree(store / "consumequeue") == rebuilt  # the open found nothing to dispatch or cut


def test_output_directory_must_be_empty(varied_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "something").write_text("x")
    with pytest.raises(StoreConfigError):
        _rebuild(varied_store, out)


def test_empty_commitlog_rebuilds_to_empty_queues(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "commitlog").mkdir(parents=True)
    report = _rebuild(store, tmp_path / "out")
    assert report.record_count == 0 and report.queue_count == 0 and report.index_file_count == 0
    assert (tmp_path / "out" / "checkpoint").stat().st_size == 4096
    assert os.listdir(tmp_path / "out") == ["checkpoint"]


def _producer_messages() -> list[Message]:
    """Runs of one producer's messages (one properties shape: the scan's byte-matrix path) mixed with
    shapes it must leave to the general parser: keys that grow a digit, keys with spaces, non-ASCII tags,
    rollback records inside a run, delayed (schedule-topic) records, two topics taking turns."""
    rng = random.Random(7)
    body = rng.randbytes(120)
    out: list[Message] = []

    def add(topic: str, tags: str, keys: str | None, uniq: str, **kwargs: object) -> None:
        out.append(Message.create(topic, body, tags=tags, keys=keys, uniq_key=uniq, queue_id=len(out) % 2,
                                  **kwargs))  # type: ignore[arg-type]

    for i in range(300):  # one shape; a rollback now and then
        flag = {"sys_flag": SysFlag.TRANSACTION_ROLLBACK_TYPE} if i % 37 == 5 else {}
        add("Orders", f"Tag{i % 7}", f"key-{i:05d}", f"UNIQ{i:08d}", **flag)
    for i in range(120):  # keys grow a digit: two lengths, each uniform
        add("Orders", "TagA", f"k-{i}", f"UNIQ{i:08d}")
    for i in range(60):  # non-ASCII tags of one byte length: uniform rows, per-record rules
        add("Orders", "тег", f"key-{i:05d}", f"UNIQ{i:08d}")
    for i in range(60):  # several keys: tokens of varying place, the general parser
        add("Orders", "TagB", f"a b{i:03d}", f"UNIQ{i:08d}")
    for i in range(80):  # two topics of one name length taking turns, one properties shape
        add("Pay_" + "AB"[i % 2], "TagC", f"key-{i:05d}", f"UNIQ{i:08d}")
    for i in range(40):  # delayed: the schedule topic's tagsCode is a delivery time
        add("Orders", "TagD", f"key-{i:05d}", f"UNIQ{i:08d}", properties={"DELAY": "2"})
    for i in range(200):  # one shape again, the bulk of a later segment
        add("Orders", f"Tag{i % 3}", f"key-{i:05d}", f"UNIQ{i:08d}")
    return out


@pytest.fixture(scope="module")
def producer_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("producer") / "store"
    _write_store(path, _producer_messages())
    return path


@pytest.mark.parametrize("range_bytes", [SEGMENT, 4096, 1000])
def test_producer_runs_rebuild_byte_identical_to_the_dispatchers(producer_store: Path, tmp_path: Path,
                                                                 range_bytes: int) -> None:
    # range ends fall inside runs of one properties shape (4096 and 1000 are no multiple of the record size)
    reference = _dispatcher_reference(producer_store, tmp_path / "ref")
    _rebuild(producer_store, tmp_path / "out", range_bytes=range_bytes)
    assert _tree(tmp_path / "out" / "consumequeue") == _tree(reference / "consumequeue")
    assert _index_contents(tmp_path / "out") == _index_contents(reference)


def test_uniform_and_general_properties_agree_record_by_record(producer_store: Path) -> None:
    """The grouped parser (byte matrices for one-shape groups) against ChunkProperties over the same records."""
    from rocketstore.store.rebuild_props import ChunkProperties
    from rocketstore.store.recovery_scan import GroupedProperties, SegmentReader, UniformProperties

    kinds: set[type] = set()
    non_ascii = 0
    for seg in sorted((producer_store / "commitlog").iterdir()):
        data = bytearray(seg.read_bytes())
        arr = np.frombuffer(bytes(data), dtype=np.uint8)
        with SegmentReader(data, len(data)) as reader:  # type: ignore[arg-type]
            chunk = reader.chunk(0, True)
        assert len(chunk) > 100
        text_at, ends = chunk.props_at + 2, chunk.start + chunk.size
        grouped, general = GroupedProperties(arr, text_at, ends), ChunkProperties(arr, text_at, ends)
        kinds |= {type(p) for _, p in grouped.parts}
        assert grouped.non_ascii.tolist() == general.non_ascii.tolist()
        non_ascii += int(grouped.non_ascii.sum())
        fast = ~grouped.non_ascii
        assert grouped.tags_codes()[fast].tolist() == general.tags_codes()[fast].tolist()
        for name in ("UNIQ_KEY", "KEYS", "TAGS", "DELAY"):
            assert grouped.present(name).tolist() == general.present(name).tolist()
        topics = np.zeros(len(chunk), dtype=np.int64)
        indexed = fast & (np.arange(len(chunk)) % 5 != 3)
        g_rec, g_hash = grouped.key_hashes(topics, ["Orders"], indexed)
        c_rec, c_hash = general.key_hashes(topics, ["Orders"], indexed)
        assert g_rec.tolist() == c_rec.tolist() and g_hash.tolist() == c_hash.tolist()
    assert kinds == {UniformProperties, ChunkProperties}, "both parsers should be exercised"
    assert non_ascii == 60


def test_range_boundary_inside_a_uniform_run_splits_it_exactly(producer_store: Path) -> None:
    plan = plan_rebuild(str(producer_store), CONFIG.replace(store_path_root_dir=str(producer_store)), SEGMENT)
    first = plan.ranges[0]
    whole = scan_range(first, True, plan.rule)
    cut = int(whole.position[150]) + 17  # inside record 150 of the first one-shape run
    head = scan_range(first.__class__(first.path, first.base, first.segment_bytes, 0, cut), True, plan.rule)
    tail = scan_range(first.__class__(first.path, first.base, first.segment_bytes, cut, first.end), True, plan.rule)
    assert head.stop == "next" and head.next_pos == tail.first_pos == int(whole.position[151])
    assert head.record_count == 151 and head.record_count + tail.record_count == whole.record_count
    for name in ("position", "queue_offset", "tags_code", "store_timestamp", "dispatched"):
        joined = np.concatenate((getattr(head, name), getattr(tail, name)))
        assert joined.tolist() == getattr(whole, name).tolist(), name
    keys = np.concatenate((head.key_hash, tail.key_hash))
    assert keys.tolist() == whole.key_hash.tolist()
    assert np.concatenate((head.key_record, tail.key_record + head.record_count)).tolist() == \
        whole.key_record.tolist()


def test_spark_partitions_group_small_ranges_up_to_the_task_bound() -> None:
    from rocketstore.spark.rebuild import TASK_BYTES, partition_count
    from rocketstore.store.rebuild_scan import ScanRange

    def ranges(count: int, width: int) -> list[ScanRange]:
        return [ScanRange("seg", 0, count * width, i * width, (i + 1) * width) for i in range(count)]

    assert partition_count(ranges(7, 32 << 20), 2) == 2  # small ranges: one task per core
    assert partition_count(ranges(9, 128 << 20), 2) == 5  # two ranges fill a task
    assert partition_count(ranges(3, TASK_BYTES * 2), 2) == 3  # a range wider than the bound is a task
    assert partition_count(ranges(1000, 32 << 20), 4) == 125  # 8 ranges of 32 MiB a task, not 4 tasks
    assert partition_count(ranges(5, 1 << 20), 8) == 5


_INT_DTYPES = [np.int16, np.int32, np.int64]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_INT_DTYPES + [np.bool_]), st.data(), st.booleans())
def test_range_facts_columns_ship_narrow_and_come_back_exactly(dtype: type, data: st.DataObject,
                                                               stepped: bool) -> None:
    """What a Spark task sends the driver: each column narrowed for pickling (bits, steps, or offsets from
    its minimum in the narrowest unsigned type), read back with its own dtype and every value."""
    from rocketstore.store.rebuild_scan import _pack, _unpack

    if dtype is np.bool_:
        values = data.draw(st.lists(st.booleans(), max_size=300))
    else:
        info = np.iinfo(dtype)
        ints = st.integers(int(info.min), int(info.max)) | st.integers(-300, 300)
        values = data.draw(st.lists(ints, max_size=300))
        if stepped:
            values.sort()
    arr = np.array(values, dtype=dtype)
    back = _unpack(pickle.loads(pickle.dumps(_pack(arr, stepped))))
    assert back.dtype == arr.dtype and np.array_equal(back, arr)
