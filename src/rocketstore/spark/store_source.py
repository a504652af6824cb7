"""The ``rocketmq-store`` batch source: a store directory as a DataFrame, read in parallel partitions.

    spark.read.format("rocketmq-store").option("path", "/data/store").option("topics", "TopicA").load()

Planning (``partitions()``, in a Python worker on the driver) snapshots every selected queue's max offset
and cuts the queues into queue-offset ranges (store_options).  Two ways, chosen by the store's state:

* a cleanly closed store (no ``abort`` file, queue tails that check out): planned through a StoreSnapshot,
  which trusts the consume queues and never walks the commitlog; partitions are stretches of the commitlog
  in offset order (each still a tuple of queue ranges), and the executor copies whole commitlog spans and
  checks every record against its consume-queue entry;
* anything else (a live store, a crashed one): planned through a recovering read-only MessageStore open;
  the executor reopens it the same way and reads its ranges through ``MessageStore.get``.

Either way nothing past the planning snapshot is read, so a live store yields a consistent prefix of every
queue, and records become Arrow batches column by column with numpy (arrow_decode), never row by row.  Each
body read is checked against its record's CRC (option ``checkCRC``, on by default): neither path re-checks
old records (the trusted one recovers nothing, recovery walks only the tail), so a body changed on disk
would otherwise become a row as it is.
On a cluster the executor may not see the store planning read (no shared file system, another broker's
store at the same path): it checks the directory and each range's last entry before reading, and fails.

pyspark and pyarrow are imported here, at module level: this module is only imported by
``rocketstore.spark.register`` and by Spark's workers.  Imports the store facade, the store snapshot and
the Arrow decoder.

Thread-safety: the per-worker store cache is guarded by a lock; a reader object is used by one task.
"""

from __future__ import annotations

import atexit
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import cast

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketstore.errors import CorruptFileError, StoreConfigError
from rocketstore.spark.arrow_decode import record_batches
from rocketstore.spark.store_options import (
    BATCH_MAX_BYTES,
    BATCH_ROWS,
    SCHEDULE_TOPIC,
    QueueRange,
    StoreReadOptions,
    pack_in_commit_log_order,
    pack_ranges,
    plan_ranges,
)
from rocketstore.spark.versions import check_task_version, planned_version
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import PRE_BLANK_SIZE
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus
from rocketstore.store.snapshot import StoreSnapshot, check_store_root, closed_cleanly

__all__ = ["FORMAT_NAME", "StoreDataSource", "StorePartition", "StoreReader", "store_schema"]

FORMAT_NAME = "rocketmq-store"

#: name -> (Spark type, nullable), in column order
_COLUMNS: dict[str, tuple[DataType, bool]] = {
    "topic": (StringType(), False),
    "queueId": (IntegerType(), False),
    "queueOffset": (LongType(), False),
    "commitLogOffset": (LongType(), False),
    "msgId": (StringType(), False),
    "body": (BinaryType(), True),
    "tags": (StringType(), True),
    "keys": (StringType(), True),
    "properties": (MapType(StringType(), StringType(), True), False),
    "uniqKey": (StringType(), True),
    "bornTimestamp": (TimestampType(), False),
    "storeTimestamp": (TimestampType(), False),
    "bornHost": (StringType(), False),
    "storeHost": (StringType(), False),
    "sysFlag": (IntegerType(), False),
    "flag": (IntegerType(), False),
    "reconsumeTimes": (IntegerType(), False),
}

#: statuses after which the loop goes on from next_begin_offset; any other means the queue ends here
_GO_ON = frozenset({GetMessageStatus.FOUND, GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.OFFSET_TOO_SMALL,
                    GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.MESSAGE_WAS_REMOVING})


def store_schema() -> StructType:
    """The source's schema (a user-given schema may pick a subset of these columns, in any order)."""
    return StructType([StructField(name, dt, nullable) for name, (dt, nullable) in _COLUMNS.items()])


def _checked_columns(schema: StructType) -> tuple[str, ...]:
    names = []
    for f in schema.fields:
        known = _COLUMNS.get(f.name)
        if known is None:
            raise StoreConfigError(f"column {f.name!r} is not one of the rocketmq-store columns: "
                                   f"{', '.join(_COLUMNS)}")
        if known[0].simpleString() != f.dataType.simpleString():
            raise StoreConfigError(f"column {f.name!r} has type {known[0].simpleString()}, "
                                   f"not {f.dataType.simpleString()}")
        names.append(f.name)
    return tuple(names)


def _arrow_type(dt: DataType) -> pa.DataType:
    if isinstance(dt, StringType):
        return pa.string()
    if isinstance(dt, IntegerType):
        return pa.int32()
    if isinstance(dt, LongType):
        return pa.int64()
    if isinstance(dt, BinaryType):
        return pa.binary()
    if isinstance(dt, TimestampType):
        return pa.timestamp("us", tz="UTC")  # what Spark's Python data source runner expects
    if isinstance(dt, MapType):
        return pa.map_(pa.string(), pa.field("value", pa.string(), nullable=dt.valueContainsNull))
    raise StoreConfigError(f"unsupported column type {dt.simpleString()}")


def _arrow_schema(schema: StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, _arrow_type(f.dataType), f.nullable) for f in schema.fields])


class StorePartition(InputPartition):
    """Queue ranges to read, plus what the executor reopens the store from.

    ``trusted``: planned from a StoreSnapshot of a cleanly closed store, so the executor reads consume-queue
    entries and commitlog spans straight from the files; otherwise it reopens the store with recovery.
    """

    def __init__(self, path: str, config: StoreConfig, snapshot_id: str, ranges: tuple[QueueRange, ...],
                 trusted: bool = False, last_entries: tuple[Mark, ...] = ()) -> None:
        super().__init__(ranges)
        self.path = path
        self.config = config
        #: shared by the partitions of one scan: a worker reuses its open store only within one snapshot
        self.snapshot_id = snapshot_id
        self.ranges = ranges
        self.trusted = trusted
        #: per range, its last entry as planning saw it: the executor checks that it reads the same store
        self.last_entries = last_entries


class StoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store")``; options are described in docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        # Spark asks for the schema at load() (unless one is given): check the options there, as Spark's Kafka
        # source does, so a bad one fails where the read is defined rather than at its first action
        StoreReadOptions.parse(self.options)
        return store_schema()

    def reader(self, schema: StructType) -> StoreReader:
        return StoreReader(StoreReadOptions.parse(self.options), schema, planned_version(self.options))


class StoreReader(DataSourceReader):
    def __init__(self, options: StoreReadOptions, schema: StructType, version: str | None = None) -> None:
        self.options = options
        self.schema = schema
        self.columns = _checked_columns(schema)
        #: the rocketstore version planning ran; each task checks it runs the same (spark/versions.py)
        self.planned_version = version or planned_version()

    def partitions(self) -> list[InputPartition]:  # type: ignore[override]
        opts = self.options
        snapshot_id = uuid.uuid4().hex
        if closed_cleanly(opts.path):
            groups = _plan_trusted(opts)
            if groups is not None:
                return [StorePartition(opts.path, opts.config, snapshot_id, g, trusted=True, last_entries=marks)
                        for g, marks in groups]
        # (a scan: no key query, so an index detect_config left closed is no warning)
        with MessageStore.open(opts.path, opts.config, read_only=True, index_wanted=False) as store:
            ranges = plan_ranges(store, opts)
            return [StorePartition(opts.path, opts.config, snapshot_id, group,
                                   last_entries=tuple(_store_mark(store, r) for r in group))
                    for group in pack_ranges(ranges, opts.max_records_per_partition, opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        check_task_version(getattr(self, "planned_version", None), "this rocketmq-store read")
        if not isinstance(partition, StorePartition) or not partition.ranges:
            return  # no queue to read: Spark plans one empty partition
        opts = self.options
        schema = _arrow_schema(self.schema)
        codes = MessageStore.tag_codes(opts.tags)
        tag_set = opts.tag_set()
        if partition.trusted:
            snap = _worker_snapshot(partition)
            _check_same_store(snap, partition)
            chunks = _snapshot_chunks(snap, partition.ranges, codes)
        else:
            store = _worker_store(partition.path, partition.config, partition.snapshot_id)
            _check_same_store(store, partition)
            chunks = _store_chunks(store, partition.ranges, codes)
        for buf, positions, queue_offsets, expect in chunks:
            # chunks are cut by stored bytes; compressed bodies inflated past the budget cut them again
            for batch in record_batches(buf, positions, queue_offsets, schema, max_body_bytes=BATCH_MAX_BYTES,
                                        include_body=opts.include_body, tag_set=tag_set, expect=expect,
                                        check_crc=opts.check_crc):
                if batch.num_rows:
                    yield batch


def _plan_trusted(opts: StoreReadOptions) -> list[tuple[tuple[QueueRange, ...], tuple[Mark, ...]]] | None:
    """Partitions in commitlog order from a StoreSnapshot, each with its ranges' last entries; None when the
    queues' tails do not check out (a copy cut short, say): then the caller plans through a recovering open."""
    with StoreSnapshot.open(opts.path, opts.config) as snap:
        if not snap.tails_agree():
            return None
        ranges = plan_ranges(snap, opts)
        offsets = []
        for r in ranges:
            queue_offsets, entries = snap.entries(r.topic, r.queue_id, r.start, r.end)
            if len(queue_offsets) != r.record_count:
                return None  # a consume-queue segment is missing inside the range
            offsets.append(entries["offset"].astype(np.int64))
        groups = pack_in_commit_log_order(ranges, offsets, opts.max_records_per_partition, opts.min_partitions)
        return [(g, tuple(_snapshot_mark(snap, r) for r in g)) for g in groups]


#: (commitlog offset, size) of the consume-queue entry before a range's end; None when it is not there
Mark = tuple[int, int] | None


def _snapshot_mark(snap: StoreSnapshot, r: QueueRange) -> Mark:
    _, entries = snap.entries(r.topic, r.queue_id, r.end - 1, r.end)
    return (int(entries["offset"][0]), int(entries["size"][0])) if len(entries) else None


def _store_mark(store: MessageStore, r: QueueRange) -> Mark:
    found = store.queue_entries(r.topic, r.queue_id, r.end - 1, 1)
    return (found[0][0], found[0][1]) if found else None


def _check_same_store(view: MessageStore | StoreSnapshot, partition: StorePartition) -> None:
    """StoreConfigError when the store this worker opened at the partition's path is not the one planning
    read: another store at the same path on an executor's host (each broker host keeping its own), or a copy
    with fewer messages.  A consume-queue entry never changes once written, and only older ones are deleted,
    so the last entry of each planned range is either still what planning saw or gone with everything before
    it; anything else would read other messages (or fewer) in place of the planned ones."""
    for r, planned in zip(partition.ranges, partition.last_entries):
        if planned is None:
            continue
        if isinstance(view, StoreSnapshot):
            seen = _snapshot_mark(view, r)
            shorter = seen is None and view.queues.get(r.topic, r.queue_id) is None
        else:
            seen = _store_mark(view, r)
            shorter = seen is None and view.max_offset(r.topic, r.queue_id) < r.end
        if seen == planned or (seen is None and not shorter):
            continue  # the same entry, or deleted by retention since planning
        found = "no such entry" if seen is None else f"commitlog offset {seen[0]}, {seen[1]} bytes"
        raise StoreConfigError(
            f"the store {partition.path} on this executor (host {socket.gethostname()}) is not the one planning "
            f"read: entry {r.end - 1} of {r.topic} queue {r.queue_id} was commitlog offset {planned[0]}, "
            f"{planned[1]} bytes, here it is {found}; every executor must see the same store at the same path, "
            "on a shared or network file system")


#: (record buffer, record positions in it, queue offsets, (commitlog offsets, sizes) the records must have)
Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]


def _as_java_int(codes: np.ndarray) -> np.ndarray:
    """RocketMQ compares ``(int) tagsCode``."""
    return ((codes.astype(np.int64) + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def _snapshot_chunks(snap: StoreSnapshot, ranges: tuple[QueueRange, ...], codes: frozenset[int] | None
                     ) -> Iterator[Chunk]:
    """The partition's records in commitlog order, a batch at a time, read as whole commitlog spans."""
    offsets, sizes, queue_offsets = [], [], []
    wanted = None if codes is None else np.fromiter(codes, dtype=np.int64)
    for r in ranges:
        qo, entries = snap.entries(r.topic, r.queue_id, r.start, r.end)
        if wanted is not None and r.topic != SCHEDULE_TOPIC:  # schedule-topic tags codes are delivery times
            keep = np.isin(_as_java_int(entries["tags_code"]), wanted)
            qo, entries = qo[keep], entries[keep]
        offsets.append(entries["offset"].astype(np.int64))
        sizes.append(entries["size"].astype(np.int64))
        queue_offsets.append(qo)
    if not offsets:
        return
    offset = np.concatenate(offsets)
    size = np.concatenate(sizes)
    queue_offset = np.concatenate(queue_offsets)
    broken = np.flatnonzero((size <= 0) | (size == PRE_BLANK_SIZE) | (offset < 0))
    if len(broken):
        raise CorruptFileError(snap.config.consume_queue_dir, int(offset[broken[0]]),
                               "a consume-queue entry inside the planned range is not a record's")
    present = offset >= snap.min_commit_log_offset  # older records were deleted since planning
    order = np.argsort(offset, kind="stable")
    order = order[present[order]]
    offset, size, queue_offset = offset[order], size[order], queue_offset[order]
    segment = offset // snap.config.mapped_file_size_commit_log
    n = len(offset)
    i = 0
    while i < n:
        j = min(n, i + BATCH_ROWS)
        j = i + int(np.searchsorted(segment[i:j], segment[i], side="right"))  # one segment per batch
        cum = np.cumsum(size[i:j])
        j = i + max(1, int(np.searchsorted(cum, BATCH_MAX_BYTES, side="right")))
        got = _read_spans(snap, offset[i:j], size[i:j])
        if got is not None:
            buf, positions, keep = got
            yield buf, positions, queue_offset[i:j][keep], (offset[i:j][keep], size[i:j][keep])
        i = j


def _read_spans(snap: StoreSnapshot, offset: np.ndarray, size: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(buffer, positions, kept) for records of one segment: a view of their whole span when they fill
    at least half of it, else one copy per run of adjacent records.  Records whose bytes are gone (the
    segment was deleted after planning) are dropped, as ``MessageStore.get`` skips them; bytes missing
    from a segment still there (a file cut short) are a CorruptFileError."""
    lo = int(offset[0])
    hi = int(offset[-1] + size[-1])
    if int(size.sum()) * 2 >= hi - lo:
        view = snap.span_view(lo, hi - lo)  # zero-copy: the batch's columns are copies, not views of it
        if view is not None:
            return view, offset - lo, np.ones(len(offset), dtype=bool)
    breaks = np.flatnonzero(offset[1:] != offset[:-1] + size[:-1]) + 1
    run_first = np.concatenate(([0], breaks))
    run_last = np.concatenate((breaks, [len(offset)])) - 1
    pieces = []
    keep = np.ones(len(offset), dtype=bool)
    run_base = np.zeros(len(run_first), dtype=np.int64)
    filled = 0
    for k, (a, b) in enumerate(zip(run_first.tolist(), run_last.tolist())):
        start = int(offset[a])
        length = int(offset[b] + size[b]) - start
        raw = snap.read_span(start, length)
        if raw is None:
            damage = snap.span_damage(start, length)
            if damage is not None:  # MessageStore refuses such a store too: no rows silently left out
                raise CorruptFileError(*damage)
            keep[a : b + 1] = False
            continue
        run_base[k] = filled - start
        pieces.append(raw)
        filled += len(raw)
    if not keep.any():
        return None
    run_of = np.repeat(np.arange(len(run_first)), run_last - run_first + 1)
    positions = (offset + run_base[run_of])[keep]
    return np.frombuffer(b"".join(pieces), dtype=np.uint8), positions, keep


def _store_chunks(store: MessageStore, ranges: tuple[QueueRange, ...], codes: frozenset[int] | None
                  ) -> Iterator[Chunk]:
    """The partition's records through ``MessageStore.get`` (a recovered store), a batch at a time."""
    raws: list[bytes] = []
    queue_offsets: list[int] = []
    filled = 0
    for r in ranges:
        for records in _records(store, r, None if r.topic == SCHEDULE_TOPIC else codes):
            for q, raw in records:
                raws.append(raw)
                queue_offsets.append(q)
                filled += len(raw)
                if len(raws) >= BATCH_ROWS or filled >= BATCH_MAX_BYTES:
                    yield _joined(raws, queue_offsets)
                    raws, queue_offsets, filled = [], [], 0
    if raws:
        yield _joined(raws, queue_offsets)


def _joined(raws: list[bytes], queue_offsets: list[int]) -> Chunk:
    lengths = np.fromiter((len(r) for r in raws), dtype=np.int64, count=len(raws))
    positions = np.zeros(len(raws), dtype=np.int64)
    np.cumsum(lengths[:-1], out=positions[1:])
    return np.frombuffer(b"".join(raws), dtype=np.uint8), positions, np.array(queue_offsets, dtype=np.int64), None


def _records(store: MessageStore, r: QueueRange, codes: frozenset[int] | None) -> Iterator[list[tuple[int, bytes]]]:
    """Raw records of ``[r.start, r.end)``, one list per get(); stops early where the queue ends."""
    offset = r.start
    end = r.end
    while offset < end:
        got = store.get(r.topic, r.queue_id, offset, min(BATCH_ROWS, end - offset), tags=codes)
        if got.records:
            if got.queue_offsets[-1] < end:
                yield list(zip(got.queue_offsets, got.records))
            else:  # with a tag filter, a get scans past the range's end
                yield [(q, raw) for q, raw in zip(got.queue_offsets, got.records) if q < end]
        if got.status not in _GO_ON or got.next_begin_offset <= offset:
            return
        offset = got.next_begin_offset


# --- one open store (or snapshot) per Python worker and scan -----------------------------------------------

_cache_lock = threading.Lock()
_cached: tuple[tuple[str, str, StoreConfig, str], MessageStore | StoreSnapshot] | None = None


def _cached_open(kind: str, path: str, config: StoreConfig, snapshot_id: str) -> MessageStore | StoreSnapshot:
    """The store (``kind`` "store": recovering read-only open) or snapshot (``kind`` "snapshot") for this
    scan, opened once per reused Python worker.

    A recovering open costs far more than reading a small partition; the partitions of one scan that land
    on the same worker share one open.  A new snapshot id (a new scan) opens afresh, so a live store is
    always seen at least as far as the snapshot.
    """
    global _cached
    key = (kind, path, config, snapshot_id)
    with _cache_lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
        if _cached is not None:
            _cached[1].close()
            _cached = None
        _check_visible(path)
        if kind == "store":
            opened: MessageStore | StoreSnapshot = MessageStore.open(path, config, read_only=True,
                                                                     index_wanted=False)
        else:
            opened = StoreSnapshot.open(path, config, check_queues=False)
        _cached = (key, opened)
        return opened


def _check_visible(path: str) -> None:
    """StoreConfigError when this worker does not see a store at *path*, where planning (on the driver) saw
    one: on a cluster whose executors lack the store's file system, or see an empty mount point there, a
    read-only open would find no queues and the scan would silently come out empty."""
    try:
        check_store_root(path)
    except (StoreConfigError, OSError) as exc:
        raise StoreConfigError(f"the store {path} that planning read is not there on this executor (host "
                               f"{socket.gethostname()}): every executor must see the store at the same path, "
                               f"on a shared or network file system ({exc})") from exc


def _worker_store(path: str, config: StoreConfig, snapshot_id: str) -> MessageStore:
    return cast(MessageStore, _cached_open("store", path, config, snapshot_id))


def _worker_snapshot(partition: StorePartition) -> StoreSnapshot:
    return cast(StoreSnapshot, _cached_open("snapshot", partition.path, partition.config, partition.snapshot_id))


@atexit.register
def _close_cached_store() -> None:
    global _cached
    with _cache_lock:
        if _cached is not None:
            _cached[1].close()
            _cached = None
