"""The rebuild's segment scan: one byte range of one commitlog segment -> the dispatch facts of its records.

A range ``[begin, end)`` of a segment yields, for every record STARTING in it, what the dispatcher derives
(``dispatch.Dispatcher.dispatch_record``): commitlog offset, size, topic, queue id, queue offset, sysFlag,
store time, tagsCode, and the index key hashes (UNIQ_KEY, then each KEYS token; none for ROLLBACK).  The
validity rules are recovery's (``recovery.validate_record``, with the body CRC when asked), so the place a
range stops (an end-of-file blank, or the first invalid record) is where recovery's walk would stop.

The walk, the length checks and the body CRCs are abnormal recovery's own (``recovery_scan.SegmentReader``:
runs of equal-size records checked with one strided read, header fields as numpy columns, one tight CRC
loop), and so is the topic look-up (each distinct topic compared with all records at once).  Properties
are parsed a chunk at a time by groups of one properties length (``recovery_scan.GroupedProperties``): a
group of one producer's shape (same names, same value lengths) is a ``UniformProperties`` byte matrix
whose values hash with one matrix product, the other records go to ``rebuild_props.ChunkProperties``
(values located by byte comparisons over the chunk, Java's String.hashCode from prefix sums over powers of
31 modulo 2**64).
Records whose properties or topic are not ASCII, and SCHEDULE_TOPIC_XXXX records (their tagsCode is a
delivery time), go through the dispatcher's own per-record rules (``parse_properties``, ``hashing``).

A range that does not begin at offset 0 of its segment starts at the first position that carries the
message magic, a plausible size and its own commitlog offset in PHYSICALOFFSET; the caller checks that
this is where the previous range's chain arrived (``RangeFacts.next_pos``), so a false start is detected.

Pure: numpy, mmap and the message package; no pyspark, no store objects (a Spark executor runs it).
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from dataclasses import dataclass, field, replace

import numpy as np

from rocketstore.message.hashing import index_key_hash_for_topic, tags_code
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    PHYSICAL_OFFSET_POS,
    TOTAL_SIZE_MAGIC,
    SysFlag,
)
from rocketstore.store.dispatch import SCHEDULE_TOPIC, tags_code_of
from rocketstore.store.mapped_file import map_private_sparse
from rocketstore.store.recovery_scan import CHUNK_RECORDS, Chunk, GroupedProperties, SegmentReader

__all__ = ["SCHEDULE_TOPIC", "RangeFacts", "ScanRange", "TagsRule", "scan_range"]

#: RocketMQ's default maxMessageSize (4 MiB) plus a blank record: no record holds a longer run of zeros
ZERO_RUN_BYTES = (4 << 20) + 8
_MAGIC_BYTES = struct.pack(">i", MESSAGE_MAGIC)
_ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE
#: one segment is mapped at a time here: more of its holes than a whole store's open may be mapped over
_SCAN_HOLE_MAPS = 8192


@dataclass(frozen=True, slots=True)
class ScanRange:
    """Records starting in ``[begin, end)`` of the segment file *path* (commitlog offset *base*)."""

    path: str
    base: int
    segment_bytes: int
    begin: int
    end: int


@dataclass(frozen=True, slots=True)
class TagsRule:
    """What the tagsCode of a SCHEDULE_TOPIC_XXXX record needs: the delay levels (ms by level)."""

    delay_levels_ms: tuple[tuple[int, int], ...]

    def schedule_code(self, props: dict[str, str], store_timestamp: int) -> int:
        """The dispatcher's tagsCode for a schedule-topic record (its delivery time)."""
        levels = dict(self.delay_levels_ms)
        return tags_code_of(SCHEDULE_TOPIC, props, store_timestamp, levels, max(levels) if levels else 0)


@dataclass
class RangeFacts:
    """What one range holds, as arrays over its records in commitlog order (positions are segment-relative).

    ``stop`` is "next" (the chain left the range at ``next_pos``), "blank" (end-of-file record at
    ``next_pos``: the segment ends) or "invalid" (the first invalid record is at ``next_pos``, why in
    ``reason``).  ``first_pos`` is where the range's chain began (None: no record starts in the range).
    ``dispatched`` is False for a record the dispatcher cannot decode (a topic that is not UTF-8): it
    gets neither queue entry nor index keys; every other record goes to the index, keys or not (a full
    index file rolls on it, as the dispatcher's).  ``key_record`` / ``key_hash`` are the index keys in order,
    by record number within the range.
    """

    scan: ScanRange
    first_pos: int | None
    next_pos: int
    stop: str
    reason: str = ""
    topics: list[str] = field(default_factory=list)
    position: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    size: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    queue_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    queue_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    topic: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    sys_flag: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    store_timestamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tags_code: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dispatched: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    key_record: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    key_hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    undecodable: list[tuple[int, str]] = field(default_factory=list)
    #: CPU time the scan of this range took (where it ran)
    cpu_seconds: float = 0.0

    @property
    def record_count(self) -> int:
        return len(self.position)

    # Shipped from executors to the driver: each column in the narrowest unsigned type that holds its spread
    # (positions and key record numbers as steps, flags as bits), ~21 bytes a record of 1 KiB messages with
    # two keys instead of ~48 for int32 columns.  Moving the bytes through Spark costs far more than this.
    _ARRAYS = ("position", "size", "queue_id", "queue_offset", "topic", "sys_flag", "store_timestamp", "tags_code",
               "dispatched", "key_record", "key_hash")
    _STEPPED = ("position", "key_record")  # ascending: their steps are small

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        for name in self._ARRAYS:
            state[name] = _pack(state[name], name in self._STEPPED)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        for name in self._ARRAYS:
            state[name] = _unpack(state[name])
        self.__dict__.update(state)

    @property
    def head_is_empty(self) -> bool:
        """The range starts the segment and its first 8 bytes are zeros: an unused (preallocated) segment."""
        return self.scan.begin == 0 and self.next_pos == 0 and self.stop == "invalid" and \
            self.reason == "no record magic"


# --- shipping ----------------------------------------------------------------------------------------

_UNSIGNED = (np.uint8, np.uint16, np.uint32)


def _pack(arr: np.ndarray, stepped: bool) -> object:
    """*arr* for pickling: ("bits", dtype, n, packed) for flags; ("min"/"steps", dtype, base, narrow) for
    integers whose spread (or whose steps, for an ascending column) fits 32 bits; else *arr* itself."""
    if len(arr) == 0:
        return arr
    if arr.dtype == np.bool_:
        return ("bits", arr.dtype.str, len(arr), np.packbits(arr))
    if stepped:
        steps = np.diff(arr)
        if len(steps) == 0 or int(steps.min()) >= 0:
            narrow = _narrowest(steps, int(steps.max()) if len(steps) else 0)
            if narrow is not None:
                return ("steps", arr.dtype.str, int(arr[0]), narrow)
    low = int(arr.min())
    narrow = _narrowest(arr - low, int(arr.max()) - low)
    return arr if narrow is None else ("min", arr.dtype.str, low, narrow)


def _narrowest(values: np.ndarray, top: int) -> np.ndarray | None:
    for dtype in _UNSIGNED:
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return None


def _unpack(value: object) -> np.ndarray:
    if not isinstance(value, tuple):
        assert isinstance(value, np.ndarray)
        return value
    kind, dtype, base, data = value
    if kind == "bits":
        return np.unpackbits(data, count=base).astype(dtype)
    if kind == "steps":
        out = np.empty(len(data) + 1, dtype=dtype)
        out[0] = base
        np.cumsum(data, dtype=dtype, out=out[1:])
        out[1:] += base
        return out
    return data.astype(dtype) + np.asarray(base, dtype=dtype)


# --- the scan ---------------------------------------------------------------------------------------


def _find_start(mm: mmap.mmap, scan: ScanRange) -> int | None:
    """First record start in [begin, end): message magic, a size that fits, its own offset inside.

    A range that opens with more zero bytes than a record may hold (``ZERO_RUN_BYTES``) lies past the
    end of the segment's records (records are contiguous and none is that long): None at once, instead
    of reading the rest of a preallocated tail.  Were a longer record there after all, the caller's
    chain check scans this range again from where the chain really arrives.
    """
    pos = scan.begin
    limit = scan.segment_bytes
    probe = min(ZERO_RUN_BYTES, limit - pos) // 8
    if probe > 0 and not np.frombuffer(mm, dtype=np.uint64, count=probe, offset=pos).any():
        return None
    while True:
        i = mm.find(_MAGIC_BYTES, pos + 4, min(scan.end + 4, limit))
        if i < 0:
            return None
        c = i - 4
        size = TOTAL_SIZE_MAGIC.unpack_from(mm, c)[0]
        if MIN_RECORD_BYTES <= size <= limit - c and c + PHYSICAL_OFFSET_POS + 8 <= limit and \
                struct.unpack_from(">q", mm, c + PHYSICAL_OFFSET_POS)[0] == scan.base + c:
            return c
        pos = c + 1


class _Chunk:
    """Facts of one chunk of walked records (arrays aligned with its valid prefix)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {}

    def add(self, **arrays: np.ndarray) -> None:
        for k, v in arrays.items():
            self.parts.setdefault(k, []).append(v)

    def joined(self, name: str, dtype: type | np.dtype) -> np.ndarray:  # type: ignore[type-arg]
        parts = self.parts.get(name)
        if not parts:
            return np.zeros(0, dtype)
        return np.concatenate(parts).astype(dtype, copy=False)


def scan_range(scan: ScanRange, check_crc: bool, rule: TagsRule, start: int | None = None) -> RangeFacts:
    """The dispatch facts of the records starting in *scan* (from *start* when the caller knows it)."""
    cpu0 = time.process_time()
    facts = _scan_file(scan, check_crc, rule, start)
    facts.cpu_seconds = time.process_time() - cpu0
    return facts


def _scan_file(scan: ScanRange, check_crc: bool, rule: TagsRule, start: int | None) -> RangeFacts:
    fd = os.open(scan.path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        file_bytes = st.st_size
        if file_bytes == 0:
            return RangeFacts(scan, None, scan.begin, "invalid", "no record magic")
        if st.st_blocks * 512 < file_bytes:
            # a sparse segment (a Java broker's, a cp --sparse copy): on tmpfs a read fault of a hole
            # allocates in the store read, SIGBUS on a full one; the holes are mapped as anonymous zeros
            mm = map_private_sparse(fd, file_bytes, _SCAN_HOLE_MAPS)
        else:
            mm = mmap.mmap(fd, file_bytes, mmap.MAP_SHARED, mmap.PROT_READ)
    finally:
        os.close(fd)
    try:
        if file_bytes < scan.segment_bytes:  # a short (torn) last file reads as zeros past its end
            scan = ScanRange(scan.path, scan.base, file_bytes, scan.begin, min(scan.end, file_bytes))
        return _scan(mm, scan, check_crc, rule, start)
    finally:
        mm.close()


def _scan(mm: mmap.mmap, scan: ScanRange, check_crc: bool, rule: TagsRule, start: int | None) -> RangeFacts:
    if start is None:
        start = 0 if scan.begin == 0 else _find_start(mm, scan)
    if start is None:
        return RangeFacts(scan, None, scan.end, "next")
    topics: dict[bytes, int] = {}
    names: list[str | None] = []  # the reader's topic ids; None: a name that is not UTF-8
    out = _Chunk()
    undecodable: list[tuple[int, str]] = []
    pos = start
    n_before = 0
    kind, reason = "next", ""
    with SegmentReader(mm, scan.segment_bytes) as reader:
        while pos < scan.end:
            chunk = reader.chunk(pos, check_crc, _records_to_end(mm, pos, scan))
            inside = int(np.searchsorted(chunk.start, scan.end))  # records starting in the range
            if inside < len(chunk):
                pos = int(chunk.start[inside])
                chunk = _prefix(chunk, inside)
            else:
                pos = chunk.next_pos
            if len(chunk):
                _dispatch_facts(reader, chunk, scan, rule, topics, names, out, undecodable, n_before)
                n_before += len(chunk)
            if chunk.reason is not None and pos < scan.end:
                kind, reason = ("blank", "") if chunk.reason == "BLANK" else ("invalid", chunk.reason)
                break
    # the reader numbers every distinct topic; the facts list only the decodable ones (-1: not UTF-8)
    remap = np.full(len(names) + 1, -1, dtype=np.int64)
    topic_names = [name for name in names if name is not None]
    remap[[i for i, name in enumerate(names) if name is not None]] = np.arange(len(topic_names))
    facts = RangeFacts(scan, start, pos, kind, reason, topic_names)
    facts.position = out.joined("position", np.int64)
    facts.size = out.joined("size", np.int32)
    facts.queue_id = out.joined("queue_id", np.int32)
    facts.queue_offset = out.joined("queue_offset", np.int64)
    facts.topic = remap[out.joined("topic", np.int64)].astype(np.int32)
    facts.sys_flag = out.joined("sys_flag", np.int32)
    facts.store_timestamp = out.joined("store_timestamp", np.int64)
    facts.tags_code = out.joined("tags_code", np.int64)
    facts.dispatched = out.joined("dispatched", bool)
    facts.key_record = out.joined("key_record", np.int64)
    facts.key_hash = out.joined("key_hash", np.int64)
    facts.undecodable = undecodable
    return facts


def _records_to_end(mm: mmap.mmap, pos: int, scan: ScanRange) -> int:
    """How many records to walk from *pos*: as many as start before the range's end if every record had the
    size of the one at *pos* (the walk then stops near the end instead of checking CRCs past it; a guess
    that falls short only costs another chunk)."""
    if pos + 8 > scan.segment_bytes:
        return 1
    size = TOTAL_SIZE_MAGIC.unpack_from(mm, pos)[0]
    if size < MIN_RECORD_BYTES:
        return 1
    return max(1, min(CHUNK_RECORDS, -(-(scan.end - pos) // size)))


def _prefix(chunk: Chunk, n: int) -> Chunk:
    """The first *n* records of *chunk* (the rest start past the range's end)."""
    return replace(chunk, start=chunk.start[:n], size=chunk.size[:n], queue_id=chunk.queue_id[:n],
                   queue_offset=chunk.queue_offset[:n], sys_flag=chunk.sys_flag[:n],
                   store_timestamp=chunk.store_timestamp[:n], topic_len_at=chunk.topic_len_at[:n],
                   props_at=chunk.props_at[:n], reason=None)


def _dispatch_facts(reader: SegmentReader, chunk: Chunk, scan: ScanRange, rule: TagsRule, topics: dict[bytes, int],
                    names: list[str | None], out: _Chunk, undecodable: list[tuple[int, str]], n_before: int) -> None:
    """Topic, tagsCode and index keys of the valid records of *chunk* (numbered from *n_before*), into *out*."""
    mm = reader.mm
    n = len(chunk)
    starts, ends, sys_flag = chunk.start, chunk.start + chunk.size, chunk.sys_flag
    topic_ids = reader.topic_ids(chunk, topics, names)
    topic_ok = np.array([name is not None for name in names], dtype=bool)[topic_ids]
    odd_topic = np.array([name is None or name == SCHEDULE_TOPIC or not name.isascii() for name in names],
                         dtype=bool)
    props = GroupedProperties(reader.arr, chunk.props_at + 2, ends)
    slow = props.non_ascii | odd_topic[topic_ids]
    tx = sys_flag & SysFlag.TRANSACTION_MASK
    tags = props.tags_codes()
    dispatched = np.ones(n, dtype=bool)
    key_rec, key_hash = props.key_hashes(topic_ids, [name or "" for name in names], tx != _ROLLBACK)
    fast_keys = ~slow[key_rec]
    key_rec, key_hash = key_rec[fast_keys], key_hash[fast_keys]
    slow_idx = np.flatnonzero(slow)
    if len(slow_idx):
        extra_rec: list[int] = []
        extra_hash: list[int] = []
        for i in slow_idx.tolist():
            offset = scan.base + int(starts[i])
            raw_props = mm[int(chunk.props_at[i]) + 2 : int(ends[i])]
            try:
                if not topic_ok[i]:
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, "topic is not UTF-8")
                text = java_utf8(raw_props)  # (as 4.9.3: U+FFFD where not UTF-8)
            except UnicodeDecodeError:
                dispatched[i] = False
                tags[i] = 0
                undecodable.append((offset, "topic is not UTF-8"))
                continue
            parsed = parse_properties(text) if text else {}
            topic = names[topic_ids[i]] or ""
            ts = int(chunk.store_timestamp[i])
            tags[i] = (rule.schedule_code(parsed, ts) if topic == SCHEDULE_TOPIC
                       else tags_code(parsed.get(PropertyName.TAGS)))
            uniq = parsed.get(PropertyName.UNIQ_KEY)
            keys = parsed.get(PropertyName.KEYS)
            if int(tx[i]) == _ROLLBACK:
                continue
            if uniq is not None:
                extra_rec.append(i)
                extra_hash.append(index_key_hash_for_topic(topic, uniq))
            if keys:
                for key in keys.split(PropertyName.KEY_SEPARATOR):
                    if key:
                        extra_rec.append(i)
                        extra_hash.append(index_key_hash_for_topic(topic, key))
        if extra_rec:
            rec = np.concatenate((key_rec, np.asarray(extra_rec, dtype=np.int64)))
            hashes = np.concatenate((key_hash, np.asarray(extra_hash, dtype=np.int64)))
            order = np.argsort(rec, kind="stable")  # fast and slow records interleave; keys stay in order
            key_rec, key_hash = rec[order], hashes[order]
    out.add(position=starts, size=chunk.size, queue_id=chunk.queue_id, queue_offset=chunk.queue_offset,
            topic=topic_ids, sys_flag=sys_flag, store_timestamp=chunk.store_timestamp, tags_code=tags,
            dispatched=dispatched, key_record=key_rec + n_before, key_hash=key_hash)
