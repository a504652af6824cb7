"""The ``rocketmq-store`` batch source: a store directory as a DataFrame, read in parallel partitions.

    spark.read.format("rocketmq-store").option("path", "/data/store").option("topics", "TopicA").load()

Planning (``partitions()``, in a Python worker on the driver) opens the store read-only, takes a snapshot
of every selected queue's max offset and cuts the queues into queue-offset ranges (store_options).  Each
partition carries ``(path, StoreConfig)``; the executor reopens the store read-only from them and reads its
ranges through ``MessageStore.get``, never past the snapshot, so a live store yields a consistent prefix of
every queue.  Rows come out as Arrow record batches built column by column (lists per batch, one Arrow
array per column), never as per-row tuples.

pyspark and pyarrow are imported here, at module level: this module is only imported by
``rocketstore.spark.register`` and by Spark's workers.  Imports the store facade and the record codec.

Thread-safety: the per-worker store cache is guarded by a lock; a reader object is used by one task.
"""

from __future__ import annotations

import atexit
import threading
import uuid
from collections.abc import Iterator

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

from rocketstore.errors import StoreConfigError
from rocketstore.message.host import HostAddress
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import decode_record
from rocketstore.spark.store_options import (
    BATCH_MAX_BYTES,
    BATCH_ROWS,
    SCHEDULE_TOPIC,
    QueueRange,
    StoreReadOptions,
    pack_ranges,
    plan_ranges,
)
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus

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

TAGS, KEYS, UNIQ_KEY = PropertyName.TAGS, PropertyName.KEYS, PropertyName.UNIQ_KEY
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
    """Queue ranges to read, plus what the executor reopens the store from."""

    def __init__(self, path: str, config: StoreConfig, snapshot_id: str, ranges: tuple[QueueRange, ...]) -> None:
        super().__init__(ranges)
        self.path = path
        self.config = config
        #: shared by the partitions of one scan: a worker reuses its open store only within one snapshot
        self.snapshot_id = snapshot_id
        self.ranges = ranges


class StoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store")``; options are described in docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        return store_schema()

    def reader(self, schema: StructType) -> StoreReader:
        return StoreReader(StoreReadOptions.parse(self.options), schema)


class StoreReader(DataSourceReader):
    def __init__(self, options: StoreReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.columns = _checked_columns(schema)

    def partitions(self) -> list[InputPartition]:  # type: ignore[override]
        opts = self.options
        with MessageStore.open(opts.path, opts.config, read_only=True) as store:
            ranges = plan_ranges(store, opts)
        snapshot_id = uuid.uuid4().hex
        return [StorePartition(opts.path, opts.config, snapshot_id, group)
                for group in pack_ranges(ranges, opts.max_records_per_partition, opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        if not isinstance(partition, StorePartition) or not partition.ranges:
            return  # no queue to read: Spark plans one empty partition
        store = _worker_store(partition.path, partition.config, partition.snapshot_id)
        builder = _BatchBuilder(self.columns, _arrow_schema(self.schema), self.options)
        codes = MessageStore.tag_codes(self.options.tags)
        for r in partition.ranges:
            for records in _records(store, r, None if r.topic == SCHEDULE_TOPIC else codes):
                i = 0
                while i < len(records):
                    i = builder.extend(records, i)
                    if builder.full:
                        yield builder.flush()
        if builder.rows:
            yield builder.flush()


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


class _BatchBuilder:
    """Column lists for one Arrow batch; ``add`` says when the batch is full."""

    def __init__(self, columns: tuple[str, ...], schema: pa.Schema, options: StoreReadOptions) -> None:
        self.columns = columns
        self.schema = schema
        self.include_body = options.include_body and "body" in columns
        self.tag_set = options.tag_set()
        self.need_props = bool({"tags", "keys", "properties", "uniqKey"} & set(columns)) or self.tag_set is not None
        self._hosts: dict[HostAddress, str] = {}
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.body_bytes = 0
        self.topic: list[str] = []
        self.queue_id: list[int] = []
        self.queue_offset: list[int] = []
        self.commit_log_offset: list[int] = []
        self.msg_id: list[str] = []
        self.body: list[bytes] = []
        self.tags: list[str | None] = []
        self.keys: list[str | None] = []
        self.uniq_key: list[str | None] = []
        self.prop_offsets: list[int] = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []
        self.born_ms: list[int] = []
        self.store_ms: list[int] = []
        self.born_host: list[str] = []
        self.store_host: list[str] = []
        self.sys_flag: list[int] = []
        self.flag: list[int] = []
        self.reconsume: list[int] = []

    @property
    def full(self) -> bool:
        return self.rows >= BATCH_ROWS or self.body_bytes >= BATCH_MAX_BYTES

    def extend(self, records: list[tuple[int, bytes]], i: int) -> int:
        """Add ``records[i:]`` (queue offset, raw record) until the batch is full; returns where it stopped.

        One loop over the records with every list's append bound to a local: this loop is the reader's cost.
        """
        with_body = self.include_body
        need_props = self.need_props
        tag_set = self.tag_set
        hosts = self._hosts
        topic, queue_id, queue_offset = self.topic.append, self.queue_id.append, self.queue_offset.append
        commit_log_offset, msg_id = self.commit_log_offset.append, self.msg_id.append
        tags_col, keys_col, uniq_col = self.tags.append, self.keys.append, self.uniq_key.append
        prop_keys, prop_values, prop_offsets = self.prop_keys, self.prop_values, self.prop_offsets.append
        born_ms, store_ms = self.born_ms.append, self.store_ms.append
        born_host, store_host = self.born_host.append, self.store_host.append
        sys_flag, flag, reconsume = self.sys_flag.append, self.flag.append, self.reconsume.append
        body = self.body.append
        rows, body_bytes = self.rows, self.body_bytes
        n = len(records)
        while i < n and rows < BATCH_ROWS and body_bytes < BATCH_MAX_BYTES:
            q, raw = records[i]
            i += 1
            m = decode_record(raw, with_body=with_body)
            if need_props:
                props = parse_properties(m.properties_string)
                tags = props.get(TAGS)
                if tag_set is not None and tags not in tag_set:
                    continue  # a tags-code (hash) match with another tag: a RocketMQ client drops it too
                tags_col(tags)
                keys_col(props.get(KEYS))
                uniq_col(props.get(UNIQ_KEY))
                prop_keys.extend(props)
                prop_values.extend(props.values())
                prop_offsets(len(prop_keys))
            rows += 1
            topic(m.topic)
            queue_id(m.queue_id)
            queue_offset(q)
            commit_log_offset(m.commit_log_offset)
            host = m.store_host
            msg_id(encode_offset_message_id(host, m.commit_log_offset))
            born_ms(m.born_timestamp)
            store_ms(m.store_timestamp)
            text = hosts.get(host)
            if text is None:
                text = hosts[host] = str(host)
            store_host(text)
            host = m.born_host
            text = hosts.get(host)
            if text is None:
                text = hosts[host] = str(host)
            born_host(text)
            sys_flag(m.sys_flag)
            flag(m.flag)
            reconsume(m.reconsume_times)
            if with_body:
                body(m.body)
                body_bytes += len(m.body)
        self.rows, self.body_bytes = rows, body_bytes
        return i

    def _array(self, name: str, typ: pa.DataType) -> pa.Array:
        n = self.rows
        if name == "topic":
            return pa.array(self.topic, typ)
        if name == "queueId":
            return pa.array(self.queue_id, typ)
        if name == "queueOffset":
            return pa.array(self.queue_offset, typ)
        if name == "commitLogOffset":
            return pa.array(self.commit_log_offset, typ)
        if name == "msgId":
            return pa.array(self.msg_id, typ)
        if name == "body":
            return pa.array(self.body, typ) if self.include_body else pa.nulls(n, typ)
        if name == "tags":
            return pa.array(self.tags, typ)
        if name == "keys":
            return pa.array(self.keys, typ)
        if name == "uniqKey":
            return pa.array(self.uniq_key, typ)
        if name == "properties":
            arr = pa.MapArray.from_arrays(pa.array(self.prop_offsets, pa.int32()), pa.array(self.prop_keys, pa.string()),
                                          pa.array(self.prop_values, pa.string()))
            return arr if arr.type.equals(typ) else arr.cast(typ)
        if name in ("bornTimestamp", "storeTimestamp"):
            ms = self.born_ms if name == "bornTimestamp" else self.store_ms
            return pa.array(np.asarray(ms, dtype=np.int64) * 1000, typ)
        if name == "bornHost":
            return pa.array(self.born_host, typ)
        if name == "storeHost":
            return pa.array(self.store_host, typ)
        if name == "sysFlag":
            return pa.array(self.sys_flag, typ)
        if name == "flag":
            return pa.array(self.flag, typ)
        return pa.array(self.reconsume, typ)  # reconsumeTimes

    def flush(self) -> pa.RecordBatch:
        arrays = [self._array(f.name, f.type) for f in self.schema]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._reset()
        return batch


# --- one open store per Python worker and snapshot ---------------------------------------------------------

_cache_lock = threading.Lock()
_cached: tuple[tuple[str, StoreConfig, str], MessageStore] | None = None


def _worker_store(path: str, config: StoreConfig, snapshot_id: str) -> MessageStore:
    """The store opened read-only for this snapshot, opened once per reused Python worker.

    Opening runs recovery (in private memory), which costs far more than reading a small partition; the
    partitions of one scan that land on the same worker share one open.  A new snapshot id (a new scan)
    opens afresh, so a live store is always seen at least as far as the snapshot.
    """
    global _cached
    key = (path, config, snapshot_id)
    with _cache_lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
        if _cached is not None:
            _cached[1].close()
            _cached = None
        store = MessageStore.open(path, config, read_only=True)
        _cached = (key, store)
        return store


@atexit.register
def _close_cached_store() -> None:
    global _cached
    with _cache_lock:
        if _cached is not None:
            _cached[1].close()
            _cached = None
