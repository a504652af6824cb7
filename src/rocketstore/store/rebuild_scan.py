"""The rebuild's segment scan: one byte range of one commitlog segment -> the dispatch facts of its records.

A range ``[begin, end)`` of a segment yields, for every record STARTING in it, what the dispatcher derives
(``dispatch.Dispatcher.dispatch_record``): commitlog offset, size, topic, queue id, queue offset, sysFlag,
store time, tagsCode, and the index key hashes (UNIQ_KEY, then each KEYS token; none for ROLLBACK).  The
validity rules are recovery's (``recovery.validate_record``, with the body CRC when asked), so the place a
range stops (an end-of-file blank, or the first invalid record) is where recovery's walk would stop.

Only following the TOTALSIZE chain, the body CRC and the topic look-up run per record in Python.  Header
fields, length checks, the properties (TAGS / KEYS / UNIQ_KEY located by byte comparisons over the whole
chunk) and Java's String.hashCode (prefix sums over powers of 31 modulo 2**64, whose low 32 bits are
Java's int arithmetic) are numpy operations per chunk.  Records whose properties or topic are not ASCII,
and SCHEDULE_TOPIC_XXXX records (their tagsCode is a delivery time), go through the dispatcher's own
per-record rules (``parse_properties``, ``hashing``) instead.

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
import zlib
from dataclasses import dataclass, field

import numpy as np

from rocketstore.message.columnar import SCAN_COLUMNS, header_dtype
from rocketstore.message.hashing import index_key_hash_for_topic, tags_code
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    PHYSICAL_OFFSET_POS,
    QUEUE_OFFSET_POS,
    SYS_FLAG_POS,
    TOTAL_SIZE_MAGIC,
    SysFlag,
    header_layout,
    store_timestamp_position,
)
from rocketstore.store.dispatch import SCHEDULE_TOPIC, tags_code_of
from rocketstore.store.rebuild_props import ChunkProperties

__all__ = ["SCHEDULE_TOPIC", "RangeFacts", "ScanRange", "TagsRule", "scan_range"]

CHUNK_RECORDS = 16384
#: RocketMQ's default maxMessageSize (4 MiB) plus a blank record: no record holds a longer run of zeros
ZERO_RUN_BYTES = (4 << 20) + 8


def _field_offsets(layout: struct.Struct) -> list[int]:
    """Byte offset of every field of a big-endian struct layout (no padding with '>')."""
    offsets = []
    pos = 0
    fmt = layout.format[1:]
    i = 0
    while i < len(fmt):
        j = i
        while fmt[j].isdigit():
            j += 1
        code = fmt[i : j + 1]
        offsets.append(pos)
        pos += struct.calcsize(">" + code)
        i = j + 1
    return offsets


_V4_FIELDS = _field_offsets(header_layout(False, False))
_CRC_POS = _V4_FIELDS[2]
_QUEUE_ID_POS = _V4_FIELDS[3]
#: BODYLENGTH's position and where the body starts, by the sysFlag's host-family bits
_BODY_LEN_POS = np.array([header_layout(bool(b & SysFlag.BORNHOST_V6), bool(b & SysFlag.STOREHOST_V6)).size - 4
                          for b in range(0x31)], dtype=np.int64)
_STORE_TS_POS = np.array([store_timestamp_position(0), store_timestamp_position(SysFlag.BORNHOST_V6)],
                         dtype=np.int64)
_MAGIC_BYTES = struct.pack(">i", MESSAGE_MAGIC)
#: the fixed header of a record with IPv4 hosts as a numpy record (offsets from record.py's layout)
_V4_HEADER = header_dtype(SCAN_COLUMNS)
_V4_SPAN = np.arange(_V4_HEADER.itemsize, dtype=np.int64)
_ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE


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
    ``dispatched`` is False for a record the dispatcher cannot decode (topic or properties not UTF-8): it
    gets neither queue entry nor index keys.  ``index_call`` marks records the dispatcher hands to the
    index (UNIQ_KEY present or KEYS non-empty, ROLLBACK included); ``key_record`` / ``key_hash`` are the
    index keys in order, by record number within the range.
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
    index_call: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    key_record: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    key_hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    undecodable: list[tuple[int, str]] = field(default_factory=list)
    #: CPU time the scan of this range took (where it ran)
    cpu_seconds: float = 0.0

    @property
    def record_count(self) -> int:
        return len(self.position)

    # Shipped from executors to the driver: ~30 bytes a record instead of ~60 (int64 columns as int32
    # offsets from their minimum when they fit).  Transfer through Spark costs more than the scan saves.
    _NARROW = ("queue_offset", "store_timestamp", "tags_code", "key_record", "key_hash")

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["position"] = self.position.astype(np.int32)  # segments are < 2 GiB (an int in RocketMQ)
        state["queue_id"] = self.queue_id.astype(np.int32)
        state["topic"] = self.topic.astype(np.int16 if len(self.topics) < 32000 else np.int32)
        for name in self._NARROW:
            arr = state[name]
            if len(arr):
                low = int(arr.min())
                if int(arr.max()) - low < 0x7FFFFFFF:
                    state[name] = (low, (arr - low).astype(np.int32))
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        for name in self._NARROW:
            value = state[name]
            if isinstance(value, tuple):
                state[name] = value[1].astype(np.int64) + value[0]
        self.__dict__.update(state)

    @property
    def head_is_empty(self) -> bool:
        """The range starts the segment and its first 8 bytes are zeros: an unused (preallocated) segment."""
        return self.scan.begin == 0 and self.next_pos == 0 and self.stop == "invalid" and \
            self.reason == "no record magic"


# --- the scan ---------------------------------------------------------------------------------------


def _be(arr: np.ndarray, idx: np.ndarray, nbytes: int) -> np.ndarray:
    """Signed big-endian integers of *nbytes* at byte positions *idx* of *arr*."""
    v = np.zeros(len(idx), dtype=np.uint64)
    for j in range(nbytes):
        v = (v << np.uint64(8)) | arr[idx + j].astype(np.uint64)
    if nbytes == 8:
        return v.view(np.int64)
    s = v.astype(np.int64)
    top = 1 << (8 * nbytes - 1)
    return np.where(s >= top, s - 2 * top, s)


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


def _walk(mm: mmap.mmap, pos: int, scan: ScanRange, max_records: int) -> tuple[list[int], int, str, str]:
    """Follow TOTALSIZE from *pos*; (record starts, where it stopped, stop kind, reason)."""
    starts: list[int] = []
    add = starts.append
    unpack = TOTAL_SIZE_MAGIC.unpack_from
    limit = scan.segment_bytes
    end = scan.end
    while len(starts) < max_records:
        if pos >= end:
            return starts, pos, "next", ""
        if pos + 8 > limit:
            return starts, pos, "invalid", "end of segment"
        size, magic = unpack(mm, pos)
        if magic != MESSAGE_MAGIC:
            if magic == BLANK_MAGIC:
                return starts, pos, "blank", ""
            return starts, pos, "invalid", ("no record magic" if magic == 0 and size == 0
                                            else f"bad magic {magic & 0xFFFFFFFF:#x}")
        if size < MIN_RECORD_BYTES or pos + size > limit:
            return starts, pos, "invalid", f"size {size} does not fit"
        add(pos)
        pos += size
    return starts, pos, "more", ""


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
        file_bytes = os.fstat(fd).st_size
        if file_bytes == 0:
            return RangeFacts(scan, None, scan.begin, "invalid", "no record magic")
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
    arr = np.frombuffer(mm, dtype=np.uint8)
    topics: dict[bytes, int] = {}
    topic_names: list[str] = []
    out = _Chunk()
    undecodable: list[tuple[int, str]] = []
    pos = start
    n_before = 0
    try:
        while True:
            starts, stop_pos, kind, reason = _walk(mm, pos, scan, CHUNK_RECORDS)
            n_ok, bad_reason = _chunk(mm, arr, np.asarray(starts, dtype=np.int64), scan, check_crc, rule, topics,
                                      topic_names, out, undecodable, n_before)
            n_before += n_ok
            if n_ok < len(starts):
                kind, stop_pos, reason = "invalid", starts[n_ok], bad_reason
                break
            pos = stop_pos
            if kind != "more":
                break
    finally:
        del arr
    facts = RangeFacts(scan, start, stop_pos, kind, reason, topic_names)
    facts.position = out.joined("position", np.int64)
    facts.size = out.joined("size", np.int32)
    facts.queue_id = out.joined("queue_id", np.int32)
    facts.queue_offset = out.joined("queue_offset", np.int64)
    facts.topic = out.joined("topic", np.int32)
    facts.sys_flag = out.joined("sys_flag", np.int32)
    facts.store_timestamp = out.joined("store_timestamp", np.int64)
    facts.tags_code = out.joined("tags_code", np.int64)
    facts.dispatched = out.joined("dispatched", bool)
    facts.index_call = out.joined("index_call", bool)
    facts.key_record = out.joined("key_record", np.int64)
    facts.key_hash = out.joined("key_hash", np.int64)
    facts.undecodable = undecodable
    return facts


def _chunk(mm: mmap.mmap, arr: np.ndarray, starts: np.ndarray, scan: ScanRange, check_crc: bool, rule: TagsRule,
           topics: dict[bytes, int], topic_names: list[str], out: _Chunk, undecodable: list[tuple[int, str]],
           n_before: int) -> tuple[int, str]:
    """Validate and extract the walked records at *starts*; returns (valid prefix length, why it ended)."""
    n = len(starts)
    if n == 0:
        return 0, ""
    last = len(arr) - 1
    v4 = None
    if int(starts[-1]) + _V4_HEADER.itemsize <= len(arr):
        # one gather of every record's fixed header, read through a structured view (IPv4 hosts)
        v4 = arr[starts[:, None] + _V4_SPAN].view(_V4_HEADER).ravel()
        if (v4["sys_flag"] & 0x30).any():
            v4 = None
    if v4 is not None:
        size = v4["size"].astype(np.int64)
        sys_flag = v4["sys_flag"].astype(np.int64)
        body_len = v4["body_len"].astype(np.int64)
        body_len_at = starts + _BODY_LEN_POS[0]
    else:
        size = _be(arr, starts, 4)
        sys_flag = _be(arr, starts + SYS_FLAG_POS, 4)
        hosts = (sys_flag & 0x30).astype(np.int64)
        body_len_at = starts + _BODY_LEN_POS[hosts]
        body_len = _be(arr, np.minimum(body_len_at, last - 3), 4)
    ends = starts + size
    body_at = body_len_at + 4
    body_end = body_at + body_len
    body_ok = (body_len >= 0) & (body_end + 3 <= ends)
    tl_at = np.where(body_ok, body_end, starts)
    props_at = tl_at + 1 + arr[tl_at]
    lengths_ok = body_ok & (props_at + 2 <= ends)
    pl_at = np.where(lengths_ok, props_at, starts)
    props_len = _be(arr, pl_at, 2)
    lengths_ok &= pl_at + 2 + props_len == ends
    torn = (pl_at + 2 < ends) & (arr[ends - 1] == 0)
    valid = lengths_ok & ~torn
    n_ok = n
    reason = ""
    if not valid.all():
        n_ok = int(np.argmin(valid))
        reason = ("body length does not fit" if not body_ok[n_ok] else
                  "lengths disagree with the record size" if not lengths_ok[n_ok] else
                  "record ends in zero bytes (torn write)")
    if check_crc and n_ok:
        crc = (v4["crc"][:n_ok] if v4 is not None else _be(arr, starts[:n_ok] + _CRC_POS, 4)).tolist()
        a_l = body_at[:n_ok].tolist()
        b_l = body_end[:n_ok].tolist()
        mv = memoryview(mm)
        try:
            crc32 = zlib.crc32
            for i in range(n_ok):
                if crc32(mv[a_l[i] : b_l[i]]) & 0x7FFFFFFF != crc[i]:
                    n_ok, reason = i, "body CRC mismatch"
                    break
        finally:
            mv.release()
    if n_ok == 0:
        return 0, reason
    starts, ends, sys_flag, body_end, props_at = (starts[:n_ok], ends[:n_ok], sys_flag[:n_ok], body_end[:n_ok],
                                                  props_at[:n_ok])
    if v4 is not None:
        store_ts = v4["store_timestamp"][:n_ok].astype(np.int64)
        queue_id = v4["queue_id"][:n_ok].astype(np.int64)
        queue_offset = v4["queue_offset"][:n_ok].astype(np.int64)
    else:
        store_ts = _be(arr, starts + _STORE_TS_POS[(sys_flag & SysFlag.BORNHOST_V6) >> 4], 8)
        queue_id = _be(arr, starts + _QUEUE_ID_POS, 4)
        queue_offset = _be(arr, starts + QUEUE_OFFSET_POS, 8)
    # topics: one slice and dict look-up per record
    topic_ids = np.empty(n_ok, dtype=np.int64)
    t_a = (body_end + 1).tolist()
    t_b = props_at.tolist()
    topic_ok = np.ones(n_ok, dtype=bool)
    for i in range(n_ok):
        raw = mm[t_a[i] : t_b[i]]
        tid = topics.get(raw)
        if tid is None:
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                topic_ok[i] = False
                topic_ids[i] = -1
                continue
            tid = topics[raw] = len(topic_names)
            topic_names.append(name)
        topic_ids[i] = tid
    props = ChunkProperties(arr, props_at + 2, ends)
    slow = props.non_ascii | ~topic_ok
    schedule_id = next((i for i, t in enumerate(topic_names) if t == SCHEDULE_TOPIC), None)
    if schedule_id is not None:
        slow |= topic_ids == schedule_id
    non_ascii_topics = np.array([not t.isascii() for t in topic_names] + [True], dtype=bool)
    slow |= non_ascii_topics[topic_ids]
    tx = sys_flag & SysFlag.TRANSACTION_MASK
    tags = props.tags_codes()
    uniq_present, keys_present = props.present(PropertyName.UNIQ_KEY), props.present(PropertyName.KEYS)
    index_call = uniq_present | keys_present
    dispatched = np.ones(n_ok, dtype=bool)
    key_rec, key_hash = props.key_hashes(topic_ids, topic_names, tx != _ROLLBACK)
    fast_keys = ~slow[key_rec]
    key_rec, key_hash = key_rec[fast_keys], key_hash[fast_keys]
    slow_idx = np.flatnonzero(slow)
    if len(slow_idx):
        extra_rec: list[int] = []
        extra_hash: list[int] = []
        for i in slow_idx.tolist():
            offset = scan.base + int(starts[i])
            raw_props = mm[t_b[i] + 2 : int(ends[i])]
            try:
                if not topic_ok[i]:
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, "topic is not UTF-8")
                text = raw_props.decode("utf-8")
            except UnicodeDecodeError:
                dispatched[i] = index_call[i] = False
                tags[i] = 0
                undecodable.append((offset, "topic or properties are not UTF-8"))
                continue
            parsed = parse_properties(text) if text else {}
            topic = topic_names[topic_ids[i]]
            ts = int(store_ts[i])
            tags[i] = (rule.schedule_code(parsed, ts) if topic == SCHEDULE_TOPIC
                       else tags_code(parsed.get(PropertyName.TAGS)))
            uniq = parsed.get(PropertyName.UNIQ_KEY)
            keys = parsed.get(PropertyName.KEYS)
            index_call[i] = uniq is not None or bool(keys)
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
    out.add(position=starts, size=size[:n_ok], queue_id=queue_id, queue_offset=queue_offset, topic=topic_ids, sys_flag=sys_flag,
            store_timestamp=store_ts, tags_code=tags, dispatched=dispatched, index_call=index_call,
            key_record=key_rec + n_before, key_hash=key_hash)
    return n_ok, reason
