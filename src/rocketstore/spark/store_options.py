"""Options and planning of the ``rocketmq-store`` batch source, free of pyspark and pyarrow.

Owns: parsing the reader options (Kafka-source style offsets, timestamps, tags, partition sizing), the
store geometry detected from the files (a StoreConfig an executor can reopen the store with), the choice of
topics and queues, and the plan: per queue a half-open queue-offset range ``[start, end)`` bounded by the
max offsets seen at planning time, packed into partitions of balanced record counts, either queue by
queue (``pack_ranges``) or as stretches of the commitlog (``pack_in_commit_log_order``, when the
commitlog offsets of the records are known).

Imports the store config, the snapshot module's checks of a store directory and numpy; never pyspark (so
planning is testable and importable without it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from rocketstore.config_json import config_table, read_json_file, topic_config_entry
from rocketstore.errors import CorruptFileError, StoreConfigError
from rocketstore.message.java_numbers import INT_MAX
from rocketstore.message.system_topics import SCHEDULE_TOPIC, SYSTEM_TOPICS, is_system_topic
from rocketstore.remoting.bodies import build_subscription
from rocketstore.store.config import StoreConfig
from rocketstore.store.snapshot import check_store_root, consume_queue_bytes_on_disk, segment_bytes_on_disk

__all__ = [
    "BATCH_MAX_BYTES",
    "BATCH_ROWS",
    "DEFAULT_MAX_RECORDS_PER_PARTITION",
    "SCHEDULE_TOPIC",
    "SYSTEM_TOPICS",
    "OffsetSpec",
    "QueueRange",
    "QueueView",
    "StoreReadOptions",
    "batch_marker_problem",
    "check_named_topics",
    "configured_topics",
    "detect_config",
    "first_offset_at_or_after",
    "is_system_topic",
    "pack_in_commit_log_order",
    "pack_ranges",
    "partition_limit",
    "plan_ranges",
    "select_queues",
]


#: Rows per Arrow batch, and the body bytes after which a batch is cut early (bodies go up to 4 MiB each).
BATCH_ROWS = 4096
BATCH_MAX_BYTES = 32 << 20
#: A partition of ~100k records (~120 MiB of 1 KiB messages) takes ~0.3-0.5 s of vectorised decoding on one core:
#: big enough to pay for its task, small enough to spread a 1 GiB store over ~10 tasks.
DEFAULT_MAX_RECORDS_PER_PARTITION = 100_000

#: RocketMQ's default index geometry (maxHashSlotNum, maxIndexNum).
_DEFAULT_INDEX = (5_000_000, 20_000_000)
_EARLIEST, _LATEST = -2, -1
#: the options that name topics on the rocketmq source and sink (and Kafka's): here they would be ignored,
#: and the read would take every topic of the store instead of the one meant
_OTHER_TOPIC_OPTIONS = {"topic": "topic", "subscribe": "subscribe", "subscribepattern": "subscribePattern"}
#: Kafka's per-partition timestamp options: ignored, the read would start (or end) at the other options'
#: offsets instead of at the time meant; here one timestamp holds for every queue
_KAFKA_TIMESTAMP_OPTIONS = {"startingoffsetsbytimestamp": ("startingOffsetsByTimestamp", "startingTimestamp"),
                            "endingoffsetsbytimestamp": ("endingOffsetsByTimestamp", "endingTimestamp"),
                            "startingoffsetsbytimestampstrategy": ("startingOffsetsByTimestampStrategy",
                                                                   "startingTimestamp")}

#: "earliest", "latest", or {topic: {queue_id: offset}} with -2 / -1 meaning earliest / latest.
OffsetSpec = str | dict[str, dict[int, int]]


class QueueRange(NamedTuple):
    """Queue offsets ``[start, end)`` of one queue, ``end`` never past the max offset seen when planning."""

    topic: str
    queue_id: int
    start: int
    end: int

    @property
    def record_count(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class StoreReadOptions:
    """The reader options, validated.  Picklable: the reader carries it to the executors."""

    path: str
    config: StoreConfig
    topics: tuple[str, ...] | None = None
    topic_pattern: str | None = None
    starting_offsets: OffsetSpec = "earliest"
    ending_offsets: OffsetSpec = "latest"
    starting_timestamp_ms: int | None = None
    ending_timestamp_ms: int | None = None
    tags: str | None = None
    include_body: bool = True
    #: check each body read against its record's CRC, failing the task on one that changed on disk
    check_crc: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreReadOptions:
        """Validate Spark reader options (names are case-insensitive, as Spark treats them)."""
        opts = {str(k).lower(): v for k, v in options.items() if v is not None}
        path = opts.get("path")
        if not path:
            raise StoreConfigError("the rocketmq-store source needs option 'path' (the store directory)")
        path = os.path.abspath(os.path.expanduser(str(path)))
        if not os.path.isdir(path):
            raise StoreConfigError(f"path {path!r} is not a directory")
        check_store_root(path, f"path {path!r}")
        misnamed = [name for key, name in _OTHER_TOPIC_OPTIONS.items() if key in opts]
        if misnamed:
            raise StoreConfigError(f"option {misnamed[0]!r} is not the rocketmq-store source's: it selects "
                                   "topics with 'topics' (comma-separated names) or 'topicPattern' (a regular "
                                   "expression)")
        topics = None
        if opts.get("topics") is not None:
            topics = tuple(t.strip() for t in str(opts["topics"]).split(",") if t.strip())
            if not topics:
                raise StoreConfigError("option 'topics' names no topic")
        pattern = opts.get("topicpattern")
        if topics is not None and pattern is not None:
            raise StoreConfigError("give either 'topics' or 'topicPattern', not both")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise StoreConfigError(f"topicPattern {pattern!r} is not a regular expression: {exc}") from exc
        for key, (name, ours) in _KAFKA_TIMESTAMP_OPTIONS.items():
            if key in opts:
                raise StoreConfigError(f"option {name!r} (Kafka's) is not supported by the rocketmq-store "
                                       f"source: give {ours!r} (milliseconds, for every queue)")
        starting_ts = _optional_int(opts, "startingtimestamp", "startingTimestamp")
        ending_ts = _optional_int(opts, "endingtimestamp", "endingTimestamp")
        if starting_ts is not None and "startingoffsets" in opts:
            raise StoreConfigError("give either 'startingOffsets' or 'startingTimestamp', not both")
        if ending_ts is not None and "endingoffsets" in opts:
            raise StoreConfigError("give either 'endingOffsets' or 'endingTimestamp', not both")
        min_partitions = _optional_int(opts, "minpartitions", "minPartitions")
        if min_partitions is not None and min_partitions < 1:
            raise StoreConfigError("minPartitions must be at least 1")
        max_records = _optional_int(opts, "maxrecordsperpartition", "maxRecordsPerPartition")
        if max_records is not None and max_records < 1:
            raise StoreConfigError("maxRecordsPerPartition must be at least 1")
        tags = _tags_option(opts.get("tags"))
        starting = _parse_offsets(opts.get("startingoffsets", "earliest"), "startingOffsets")
        ending = _parse_offsets(opts.get("endingoffsets", "latest"), "endingOffsets")
        # as Spark's Kafka source (and the rocketmq source) refuse them for a batch query: such a read is always
        # empty, which is a mistake rather than a request for nothing
        if starting == "latest":
            raise StoreConfigError("startingOffsets=latest would read nothing: a rocketmq-store read is a batch "
                                   "read, which ends at the latest offsets (endingOffsets); give earliest or JSON")
        if ending == "earliest":
            raise StoreConfigError("endingOffsets=earliest would read nothing: a rocketmq-store read starts at the "
                                   "earliest offsets (startingOffsets); give latest or JSON")
        for problem in (batch_marker_problem(starting, _LATEST, "startingOffsets", "latest"),
                        batch_marker_problem(ending, _EARLIEST, "endingOffsets", "earliest")):
            if problem is not None:
                raise StoreConfigError(problem)
        return cls(
            path=path,
            config=detect_config(path, opts),
            topics=topics,
            topic_pattern=pattern,
            starting_offsets=starting,
            ending_offsets=ending,
            starting_timestamp_ms=starting_ts,
            ending_timestamp_ms=ending_ts,
            tags=tags,
            include_body=_parse_bool(opts.get("includebody", "true"), "includeBody"),
            check_crc=_parse_bool(opts.get("checkcrc", "true"), "checkCRC"),
            min_partitions=min_partitions,
            max_records_per_partition=max_records or DEFAULT_MAX_RECORDS_PER_PARTITION,
        )

    def tag_set(self) -> frozenset[str] | None:
        """The tags of ``"a || b"``; None when every message matches."""
        if self.tags is None:
            return None
        return frozenset(t.strip() for t in self.tags.split("||") if t.strip()) or None


def _tags_option(raw: str | None) -> str | None:
    """The ``tags`` option, None for every message (unset, empty or ``*``).  A StoreConfigError for one of
    separators only (``'||'``): it names no tag, so the read matched nothing and came back empty without a
    word (the rocketmq source refuses it too)."""
    tags = None if raw is None else str(raw).strip()
    if not tags or tags == "*":
        return None
    if build_subscription("", tags).names_no_tag:
        raise StoreConfigError(f"option 'tags' {tags!r} names no tag")
    return tags


def _optional_int(opts: dict[str, str], key: str, name: str) -> int | None:
    raw = opts.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return int(str(raw).strip())
    except ValueError as exc:
        raise StoreConfigError(f"option {name}={raw!r} is not an integer") from exc


def _parse_bool(raw: object, name: str) -> bool:
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise StoreConfigError(f"option {name}={raw!r} is not true or false")


def batch_marker_problem(spec: object, marker: int, name: str, word: str) -> str | None:
    """What is wrong with a batch query's JSON offsets *spec* giving a queue *marker* (-1 in startingOffsets,
    -2 in endingOffsets), else None.  Such a queue's read is always empty, as startingOffsets=latest's is for
    every queue: refused when the query is defined, as Spark's Kafka source refuses both, rather than read as a
    request for nothing.  Shared by the rocketmq-store and rocketmq sources, each raising its own error."""
    if not isinstance(spec, Mapping):
        return None
    queues = [f"{topic}/{queue}" for topic, per_queue in spec.items() for queue, offset in per_queue.items()
              if offset == marker]
    if not queues:
        return None
    return (f"option {name} gives {marker} ({word}) for {', '.join(queues)}: a batch read would read nothing there "
            f"(-2 is earliest, -1 latest; a batch read's startingOffsets may not hold -1, its endingOffsets not -2)")


def _parse_offsets(raw: object, name: str) -> OffsetSpec:
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreConfigError(f"option {name} is neither earliest, latest nor JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise StoreConfigError(f'option {name} must be a JSON object like {{"TopicA":{{"0":23,"1":-2}}}}')
    spec: dict[str, dict[int, int]] = {}
    for topic, queues in doc.items():
        if not isinstance(queues, dict):
            raise StoreConfigError(f"option {name}: the value for topic {topic!r} must be an object")
        per_queue: dict[int, int] = {}
        for qid, offset in queues.items():
            try:
                queue_id = int(qid)
            except ValueError as exc:
                raise StoreConfigError(f"option {name}: queue id {qid!r} of {topic!r} is not an integer") from exc
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < _EARLIEST:
                raise StoreConfigError(f"option {name}: offset {offset!r} of {topic!r}/{qid} is not an "
                                       "integer >= -2 (-2 earliest, -1 latest)")
            per_queue[queue_id] = offset
        spec[str(topic)] = per_queue
    return spec


# --- geometry ----------------------------------------------------------------------------------------------


def _first_file_size(directory: str) -> int | None:
    """Size of the first (name order) file in *directory*, or None."""
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return None
    for name in names:
        full = os.path.join(directory, name)
        if os.path.isfile(full) and not name.endswith(".allocating"):
            return os.path.getsize(full)
    return None


def _positive(opts: Mapping[str, str], key: str, name: str) -> int | None:
    """A geometry option: RocketMQ keeps these sizes in Java ints (mappedFileSizeCommitLog, ...), so a larger
    value names no store RocketMQ could have written (and would overflow the mmap calls)."""
    value = _optional_int(dict(opts), key, name)
    if value is not None and value <= 0:
        raise StoreConfigError(f"option {name} must be positive")
    if value is not None and value > INT_MAX:
        raise StoreConfigError(f"option {name}={value} is larger than RocketMQ's settings go ({INT_MAX}, "
                               "a Java int)")
    return value


def detect_config(path: str, options: Mapping[str, str] | None = None) -> StoreConfig:
    """The StoreConfig to open *path* with: explicit geometry options, else what the files show.

    The commitlog segment size is the most common size of its segments, the consume-queue one the most
    common size of the first queue's files.  The index geometry cannot be read off a file size (two unknowns), so
    it is RocketMQ's default when the index files have the default size, the ``indexSlots`` /
    ``indexEntries`` options when given, and otherwise the index is left closed: reading by queue needs no
    index.  Options take lower-case keys (as Spark passes them).
    """
    opts = {k.lower(): v for k, v in (options or {}).items()}
    defaults = StoreConfig()
    segment = _positive(opts, "segmentbytes", "segmentBytes")
    if segment is None:
        segment = segment_bytes_on_disk(os.path.join(path, "commitlog")) or defaults.mapped_file_size_commit_log
    cq = _positive(opts, "consumequeuebytes", "consumeQueueBytes")
    if cq is None:
        cq = consume_queue_bytes_on_disk(os.path.join(path, "consumequeue")) or defaults.mapped_file_size_consume_queue
    slots = _positive(opts, "indexslots", "indexSlots")
    entries = _positive(opts, "indexentries", "indexEntries")
    index_enable = True
    if slots is None and entries is None:
        slots, entries = _DEFAULT_INDEX
        index_size = _first_file_size(os.path.join(path, "index"))
        if index_size is None or index_size != StoreConfig(max_hash_slot_num=slots, max_index_num=entries) \
                .index_file_bytes:
            index_enable = False
    else:
        slots = slots if slots is not None else _DEFAULT_INDEX[0]
        entries = entries if entries is not None else _DEFAULT_INDEX[1]
    return StoreConfig(
        store_path_root_dir=path,
        mapped_file_size_commit_log=segment,
        mapped_file_size_consume_queue=cq,
        max_hash_slot_num=slots,
        max_index_num=entries,
        message_index_enable=index_enable,
        # one get() may hand back a whole Arrow batch
        max_transfer_count_on_message_in_disk=BATCH_ROWS,
        max_transfer_count_on_message_in_memory=BATCH_ROWS,
        max_transfer_bytes_on_message_in_disk=BATCH_MAX_BYTES,
        max_transfer_bytes_on_message_in_memory=BATCH_MAX_BYTES,
    )


# --- planning ----------------------------------------------------------------------------------------------


class QueueView(Protocol):
    """What planning asks of a store: MessageStore and StoreSnapshot both answer it."""

    def topics(self) -> dict[str, list[int]]: ...
    def min_offset(self, topic: str, queue_id: int) -> int: ...
    def max_offset(self, topic: str, queue_id: int) -> int: ...
    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int: ...
    def store_time(self, topic: str, queue_id: int, queue_offset: int) -> int: ...


def select_queues(topics: Mapping[str, list[int]], options: StoreReadOptions) -> list[tuple[str, int]]:
    """(topic, queue id) pairs to read, in name order.  System topics only when named in ``topics``."""
    if options.topics is not None:
        wanted = [t for t in dict.fromkeys(options.topics) if t in topics]
    elif options.topic_pattern is not None:
        rx = re.compile(options.topic_pattern)
        wanted = [t for t in topics if rx.fullmatch(t) and not is_system_topic(t)]
    else:
        wanted = [t for t in topics if not is_system_topic(t)]
    return [(t, q) for t in sorted(wanted) for q in sorted(topics[t])]


def configured_topics(path: str) -> frozenset[str]:
    """The topics the broker's ``config/topics.json`` under the store root *path* holds (created ones, with or
    without messages), read as the broker reads it at start (:mod:`rocketstore.config_json`: its ``.bak`` when
    the file is missing, empty or unreadable); empty when neither can be read."""
    try:
        configs = read_json_file(os.path.join(path, "config", "topics.json"),
                                 lambda obj: config_table(obj, "topicConfigTable", topic_config_entry))
    except (OSError, CorruptFileError):  # (CorruptFileError: the .bak unreadable too; no broker starts)
        return frozenset()
    return frozenset(tc.topic_name for tc in configs or ())


def check_named_topics(topics: Mapping[str, list[int]], options: StoreReadOptions) -> None:
    """StoreConfigError when option ``topics`` names a topic the store has no consume queue for and its broker's
    ``config/topics.json`` does not hold either: a misspelt name would otherwise read as an empty topic (Spark's
    Kafka source fails a batch read of a topic the cluster does not have, too).  A topic created but never
    written to reads as empty, and so does a system topic (every broker has them, with queues only once
    written to); ``topicPattern`` matching nothing reads nothing."""
    if options.topics is None:
        return
    unknown = [t for t in dict.fromkeys(options.topics) if t not in topics and not is_system_topic(t)]
    if unknown:
        unknown = [t for t in unknown if t not in configured_topics(options.path)]
    if unknown:
        have = sorted(t for t in topics if not is_system_topic(t))
        shown = ", ".join(have[:20]) + (f" and {len(have) - 20} more" if len(have) > 20 else "")
        raise StoreConfigError(f"option topics names {', '.join(map(repr, unknown))}, which the store {options.path} "
                               f"does not have (its topics: {shown or 'none'})")


def _resolve(spec: OffsetSpec, topic: str, queue_id: int, default: int, low: int, high: int) -> int:
    if isinstance(spec, str):
        return low if spec == "earliest" else high
    offset = spec.get(topic, {}).get(queue_id, default)
    if offset == _EARLIEST:
        return low
    if offset == _LATEST:
        return high
    return min(max(offset, low), high)


def first_offset_at_or_after(store: QueueView, topic: str, queue_id: int, timestamp_ms: int,
                             low: int, high: int) -> int:
    """The first queue offset in ``[low, high)`` whose store time is >= *timestamp_ms*, else *high*.

    Starts from RocketMQ's offset_by_time (the nearest entry, whose segment it picks by file mtime, which
    a copied store does not keep) and settles the exact boundary by binary search on store times, which
    are non-decreasing within a queue.
    """
    if low >= high:
        return high
    hint = min(max(store.offset_by_time(topic, queue_id, timestamp_ms), low), high - 1)
    hint_time = store.store_time(topic, queue_id, hint)
    if hint_time >= 0 and hint_time >= timestamp_ms:
        lo, hi = low, hint  # the answer is hint or before it
    else:
        lo, hi = hint + 1, high
    while lo < hi:
        mid = (lo + hi) // 2
        if store.store_time(topic, queue_id, mid) >= timestamp_ms:
            hi = mid
        else:
            lo = mid + 1
    return lo


def plan_ranges(store: QueueView, options: StoreReadOptions) -> list[QueueRange]:
    """One range per selected queue with anything to read, against the store's max offsets right now."""
    ranges: list[QueueRange] = []
    present = store.topics()
    check_named_topics(present, options)
    for topic, queue_id in select_queues(present, options):
        low = store.min_offset(topic, queue_id)
        high = store.max_offset(topic, queue_id)  # the snapshot: nothing after it is ever read
        if options.starting_timestamp_ms is not None:
            start = first_offset_at_or_after(store, topic, queue_id, options.starting_timestamp_ms, low, high)
        else:
            start = _resolve(options.starting_offsets, topic, queue_id, _EARLIEST, low, high)
        if options.ending_timestamp_ms is not None:
            end = first_offset_at_or_after(store, topic, queue_id, options.ending_timestamp_ms, low, high)
        else:
            end = _resolve(options.ending_offsets, topic, queue_id, _LATEST, low, high)
            if start > end and options.starting_timestamp_ms is None:
                # offsets on both sides: as Spark's Kafka source fails such a batch, a mistake, not a request for
                # nothing (a timestamp and an offset may well meet no message)
                raise StoreConfigError(f"startingOffsets after endingOffsets for {topic} queue {queue_id}: "
                                       f"{start} > {end} (offsets clamped into the queue's [{low}, {high}])")
        if start < end:
            ranges.append(QueueRange(topic, queue_id, start, end))
    return ranges


def pack_ranges(ranges: list[QueueRange], max_records: int,
                min_partitions: int | None = None) -> list[tuple[QueueRange, ...]]:
    """Cut and pack ranges, in order, into partitions of at most ``limit`` records each.

    ``limit`` is *max_records*, lowered so that there are at least *min_partitions* partitions when there
    are that many records.  Small queues share a partition (a task per tiny queue would cost more than it
    reads); a long queue is split at offset boundaries.
    """
    limit = partition_limit(sum(r.record_count for r in ranges), max_records, min_partitions)
    out: list[tuple[QueueRange, ...]] = []
    current: list[QueueRange] = []
    filled = 0
    for r in ranges:
        start = r.start
        while start < r.end:
            take = min(limit - filled, r.end - start)
            current.append(QueueRange(r.topic, r.queue_id, start, start + take))
            filled += take
            start += take
            if filled >= limit:
                out.append(tuple(current))
                current, filled = [], 0
    if current:
        out.append(tuple(current))
    return out


def partition_limit(total_records: int, max_records: int, min_partitions: int | None) -> int:
    """Records per partition: *max_records*, lowered so that *min_partitions* partitions get some."""
    limit = max_records
    if min_partitions:
        limit = min(limit, max(1, total_records // min_partitions))
    return max(1, limit)


def pack_in_commit_log_order(ranges: list[QueueRange], commit_log_offsets: list[np.ndarray], max_records: int,
                             min_partitions: int | None = None) -> list[tuple[QueueRange, ...]]:
    """Cut the records of *ranges* into partitions of consecutive commitlog offsets.

    ``commit_log_offsets[i]`` holds the commitlog offset of every record of ``ranges[i]``, in queue order.
    Records of all ranges are ordered by commitlog offset and cut every ``limit`` records (the same limit
    and partition count as :func:`pack_ranges`), so each partition reads one stretch of the commitlog
    front to back instead of hopping between queues.  Within a queue commitlog offsets grow with queue
    offsets, so a stretch holds a contiguous queue-offset range of each queue: partitions are still
    tuples of QueueRanges.
    """
    lengths = np.array([len(a) for a in commit_log_offsets], dtype=np.int64)
    if any(int(n) != r.record_count for n, r in zip(lengths, ranges)):
        raise ValueError("every range needs the commitlog offset of each of its records")
    total = int(lengths.sum())
    if total == 0:
        return []
    limit = partition_limit(total, max_records, min_partitions)
    offsets = np.concatenate(commit_log_offsets)
    range_index = np.repeat(np.arange(len(ranges)), lengths)
    queue_offsets = np.concatenate([np.arange(r.start, r.end, dtype=np.int64) for r in ranges])
    order = np.argsort(offsets, kind="stable")
    out: list[tuple[QueueRange, ...]] = []
    for first in range(0, total, limit):
        chosen = order[first : first + limit]
        rid = range_index[chosen]
        qo = queue_offsets[chosen]
        present = np.unique(rid)
        lows = np.full(len(ranges), np.iinfo(np.int64).max, dtype=np.int64)
        highs = np.full(len(ranges), -1, dtype=np.int64)
        np.minimum.at(lows, rid, qo)
        np.maximum.at(highs, rid, qo)
        out.append(tuple(QueueRange(ranges[i].topic, ranges[i].queue_id, int(lows[i]), int(highs[i]) + 1)
                         for i in present.tolist()))
    return out
