"""Recovery at open: find the valid end of the commitlog and bring consume queues and index in line.

Normal recovery (no abort file: the last close was clean) walks the last three segments and cuts after
the last valid record.  Abnormal recovery (abort file present: a crash) starts from the newest segment
whose first record is older than the checkpoint says is safe, checks every consume-queue entry from there
against the walked records and rebuilds each queue from its first entry that disagrees, indexes the records
the index does not cover yet (``_Redispatch``), and cuts the same way.  Either way consume queue entries
pointing past the cut are dropped.  A record is valid when it decodes whole and, with ``check_crc``, its
body CRC matches (``validate_record``, the one-record reference; the walks themselves go a chunk of records
at a time through recovery_scan and must agree with it).

Bit rot is not a torn write.  A record whose lengths all hold together but whose body fails its CRC, where
the record is known to have been synced whole (after a clean close: all of the tail; after a crash: records
stored before the checkpoint's bound), had its body changed on disk since: cutting there would drop every
good record after it (4.9.3 does).  The walk keeps it, logs an ERROR naming it and goes on
(``RecoveryReport.damaged_records``); the readers name it as damaged.  A record whose head is damaged (magic,
size, lengths) still ends the walk: the TOTALSIZE chain is the only way to the next record.

Imports store pieces, never the facade.
"""

from __future__ import annotations

import bisect
import logging
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rocketstore.message.hashing import index_key_hash_for_topic
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    MessageDecodeError,
    SysFlag,
    decode_record,
    store_timestamp_position,
)
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import (
    CQ_DTYPE,
    CQ_ENTRY_BYTES,
    PRE_BLANK_SIZE,
    ConsumeQueue,
    ConsumeQueueTable,
)
from rocketstore.store.dispatch import SCHEDULE_TOPIC, Dispatcher
from rocketstore.store.mapped_file import MappedFile
from rocketstore.store.rebuild_props import ChunkProperties
from rocketstore.store.recovery_scan import Chunk, SegmentReader, UniformProperties, followed_at

__all__ = ["RecoveryReport", "recover", "scan_and_dispatch", "scan_valid_end", "used_bytes_after",
           "validate_record"]

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">ii")
_CRC_AND_FLAG = struct.Struct(">i24xi")  # BODYCRC at +8 and SYSFLAG at +36, read from +8
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_BODY_AT = {0: 84, 0x10: 96, 0x20: 96, 0x30: 108}  # BODYLENGTH position by host-family bits
#: properties bytes parsed at once in abnormal recovery (a chunk of records with 32 KiB properties each
#: would otherwise copy half a GiB)
_PROPS_PIECE_BYTES = 16 << 20
#: the store-time bound that keeps every bit-rotted record (a clean close synced them all)
_ANY_TIME_MS = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    abnormal: bool
    start_segment: int
    valid_end: int
    truncated_bytes: int
    records_checked: int
    first_invalid_reason: str | None
    #: consume-queue entries the final cut dropped because they point past the commitlog's valid end (after a
    #: clean shutdown a sign that commitlog segments were lost; after a crash, entries the walk found no
    #: record for are dropped before and not counted here)
    dropped_queue_entries: int = 0
    #: where abnormal recovery stopped re-dispatching because consume-queue or index files could not be
    #: written (a full disk), or None: the store's dispatcher goes on from there once it can
    redispatch_stopped_at: int | None = None
    #: with ``redispatch_stopped_at``: the next queue offset of each queue with records from there on (the
    #: consume queues do not hold them yet, and new puts must not take their queue offsets again)
    undispatched_queue_ends: dict[tuple[str, int], int] | None = field(default=None, compare=False, repr=False)
    #: commitlog offsets of records kept although their body fails its CRC (bit rot in a record known to be
    #: synced whole: see the module docstring), each logged as an ERROR
    damaged_records: tuple[int, ...] = ()


def validate_record(buf: MappedFile | bytes, pos: int, limit: int, check_crc: bool) -> tuple[str, int, str]:
    """('MESSAGE', size, '') / ('BLANK', size, '') / ('INVALID', 0, reason) for the record at *pos*."""
    mm = buf.buffer if isinstance(buf, MappedFile) else buf
    if pos + 8 > limit:
        return "INVALID", 0, "end of segment"
    size, magic = _HEAD.unpack_from(mm, pos)
    if magic == BLANK_MAGIC:
        return "BLANK", size, ""
    if magic != MESSAGE_MAGIC:
        return "INVALID", 0, "no record magic" if magic == 0 and size == 0 else f"bad magic {magic & 0xFFFFFFFF:#x}"
    end = pos + size
    if size < MIN_RECORD_BYTES or end > limit:
        return "INVALID", 0, f"size {size} does not fit"
    crc, sys_flag = _CRC_AND_FLAG.unpack_from(mm, pos + 8)
    body_at = pos + _BODY_AT[sys_flag & 0x30]
    body_len = _INT.unpack_from(mm, body_at)[0]
    p = body_at + 4 + body_len
    if body_len < 0 or p + 3 > end:
        return "INVALID", 0, "body length does not fit"
    q = p + 1 + mm[p]
    if q + 2 > end or q + 2 + _SHORT.unpack_from(mm, q)[0] != end:
        return "INVALID", 0, "lengths disagree with the record size"
    if q + 2 < end and mm[end - 1] == 0 and not followed_at(mm, end, limit):
        # The body CRC does not cover topic and properties: a record whose last byte is zero and that
        # nothing follows lost its end (a torn write into a zero-filled segment); one that a record head
        # follows was written whole (a last property value may end in U+0000: see ``followed_at``).
        return "INVALID", 0, "record ends in zero bytes (torn write)"
    if check_crc and zlib.crc32(mm[body_at + 4 : p]) & 0x7FFFFFFF != crc:
        return "INVALID", 0, "body CRC mismatch"
    return "MESSAGE", size, ""


def scan_valid_end(commitlog: CommitLog, start_index: int, check_crc: bool) -> tuple[int, int, str | None]:
    """Walk records from segment *start_index*, one record at a time; returns (valid end offset, records,
    why it stopped).  The reference the chunked walks are tested against (recovery itself uses
    :func:`_walk_chunks`)."""
    files = commitlog.files.files
    if not files:
        return 0, 0, None
    records = 0
    index = start_index
    mf = files[index]
    pos = 0
    reason: str | None = None
    while True:
        kind, size, why = validate_record(mf, pos, mf.size_bytes, check_crc)
        if kind == "MESSAGE":
            pos += size
            records += 1
            continue
        if kind == "BLANK":
            index += 1
            if index >= len(files):
                return mf.start_offset + mf.size_bytes, records, None
            mf = files[index]
            pos = 0
            continue
        reason = why
        break
    return mf.start_offset + pos, records, reason if (reason and reason != "no record magic") else None


class _QueueCheck:
    """One consume queue's state in abnormal recovery: while ``verifying``, the walk's records of this queue
    are compared with the entries from ``next_entry`` on; after the first disagreement the queue is cut
    there and its records are re-dispatched."""

    __slots__ = ("cq", "next_entry", "verifying")

    def __init__(self, cq: ConsumeQueue | None, next_entry: int, verifying: bool) -> None:
        self.cq = cq
        self.next_entry = next_entry
        self.verifying = verifying


def _first_entry_from(cq: ConsumeQueue, commit_log_offset: int) -> int:
    """Queue offset of the first real entry (not pre-blank fill) pointing at or past *commit_log_offset*
    (``max_offset`` when none): a binary search, entries being in commitlog order."""
    lo, hi = cq.first_queue_offset_on_disk, cq.max_offset
    while lo < hi:
        mid = (lo + hi) // 2
        entry = cq.entry(mid)
        if entry is not None and entry[1] != PRE_BLANK_SIZE and entry[0] >= commit_log_offset:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _cut_queue(cq: ConsumeQueue, queue_offset: int) -> None:
    """Drop the entries from *queue_offset* on (the segment holding it is zeroed from there)."""
    if cq.max_offset <= queue_offset:
        return
    cq.files.truncate_after(queue_offset * CQ_ENTRY_BYTES)
    prev = cq.entry(queue_offset - 1) if queue_offset > 0 else None
    cq.max_physic_offset = prev[0] + prev[1] if prev is not None and prev[1] != PRE_BLANK_SIZE else -1


def _entries(cq: ConsumeQueue, queue_offset: int, count: int) -> np.ndarray:
    """Up to *count* entries (``CQ_DTYPE``) from *queue_offset*, fewer where the queue ends."""
    parts: list[np.ndarray] = []
    got = 0
    while got < count:
        found = cq.entries(queue_offset + got, count - got)
        if found is None or not len(found[0]):
            break
        parts.append(found[0])
        got += len(found[0])
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=CQ_DTYPE)


class _Redispatch:
    """Brings consume queues and index in line with the records abnormal recovery walks, a chunk at a time.

    RocketMQ re-dispatches every record and lets the consume queue skip what it holds already (an entry
    whose record ends at or below the queue's maxPhysicOffset) and the index skip what lies below its last
    file's endPhyOffset.  Here a queue's entries are *checked* against the walk instead (commitlog offset,
    size and tagsCode of each record at its queue offset, compared in numpy), so an entry a torn write left
    plausible but wrong is found (20-byte entries straddle pages and sectors: a tear can spare the offset and
    size and hit the tagsCode); from the first disagreement on, the queue is cut and rebuilt from the
    records.  A record that lies before the entry expected next, where that entry points at a real record of
    the queue, is one the queue never held (a deleted topic's, the topic created again since): skipped, as
    RocketMQ's maxPhysicOffset rule skips it.  Properties are parsed for the whole chunk at once, tags and keys hashed in numpy
    (``UniformProperties`` for one producer's fixed layout, else ``ChunkProperties``; schedule-topic and
    non-ASCII records one by one, with the dispatcher's own rules); only queued records and records the
    index does not cover yet need them.  Index keys go in with ``IndexService.put_hashed``; as the dispatcher
    does once a run, each chunk then rolls a full index file (or creates the first) that a later record
    would have rolled, keys or not.
    """

    def __init__(self, dispatcher: Dispatcher, queues: ConsumeQueueTable, rebuild_from: int,
                 files: list[MappedFile]) -> None:
        self.dispatcher = dispatcher
        self.queues = queues
        self.rebuild_from = rebuild_from
        #: the commitlog's segments, to read the record an entry points at (``_points_at_its_record``)
        self.files = files
        self._starts = [mf.start_offset for mf in files]
        self.checks: dict[tuple[str, int], _QueueCheck] = {}
        self.topics: dict[bytes, int] = {}
        self.names: list[str | None] = []
        index = dispatcher.index
        #: RocketMQ's buildIndex skips records below the newest index file's endPhyOffset
        self.index_floor = index.files[-1].end_phy_offset if index is not None and index.files else 0

    def feed(self, reader: SegmentReader, chunk: Chunk, base: int) -> None:
        n = len(chunk)
        if not n:
            return
        dispatcher = self.dispatcher
        offsets = chunk.start + base
        tids = reader.topic_ids(chunk, self.topics, self.names)
        names = self.names
        ok = np.array([name is not None for name in names], dtype=bool)[tids]
        tx = chunk.sys_flag & SysFlag.TRANSACTION_MASK
        queued = ok & ((tx == SysFlag.TRANSACTION_NOT_TYPE) | (tx == SysFlag.TRANSACTION_COMMIT_TYPE))
        index = dispatcher.index
        need_index = ok & (offsets >= self.index_floor) if index is not None else np.zeros(n, dtype=bool)
        if not ok.all():
            for i in np.flatnonzero(~ok).tolist():
                self._undecodable(base + int(chunk.start[i]))
        tags = np.zeros(n, dtype=np.int64)
        key_rows: list[np.ndarray] = []
        key_hashes: list[np.ndarray] = []
        sel = np.flatnonzero(queued | need_index)
        if len(sel):
            # properties are copied out a piece at a time: at most _PROPS_PIECE_BYTES of them at once
            text_bytes = np.cumsum(chunk.size[sel] - (chunk.props_at[sel] + 2 - chunk.start[sel]))
            cuts = np.searchsorted(text_bytes, np.arange(1, int(text_bytes[-1]) // _PROPS_PIECE_BYTES + 1)
                                   * _PROPS_PIECE_BYTES)
            for piece in np.split(sel, np.unique(cuts[(cuts > 0) & (cuts < len(sel))])):
                rows, hashes = self._properties(reader, chunk, offsets, tids, tx, piece, queued, need_index,
                                                tags, ok)
                key_rows.append(rows)
                key_hashes.append(hashes)
        queued &= ok  # a record whose topic is not UTF-8 gets no entry (the dispatcher's rule)
        need_cq = np.zeros(n, dtype=bool)
        if queued.any():
            self._check_queues(chunk, offsets, tids, queued, tags, need_cq)
        if need_cq.any():
            rows = np.flatnonzero(need_cq)
            count = len(rows)
            dispatcher.dispatch_facts(list(zip(
                offsets[rows].tolist(), chunk.size[rows].tolist(), [names[t] for t in tids[rows].tolist()],
                chunk.queue_id[rows].tolist(), chunk.queue_offset[rows].tolist(), chunk.sys_flag[rows].tolist(),
                chunk.store_timestamp[rows].tolist(), tags[rows].tolist(), [None] * count, [None] * count)))
        if index is not None:
            # (the newest file if it was full before this chunk: 4.9.3 rolls it at the chunk's first record)
            full_before = index.newest_if_full()
            if key_rows and sum(len(r) for r in key_rows):
                rows = np.concatenate(key_rows)
                index.put_hashed(np.concatenate(key_hashes), offsets[rows], chunk.store_timestamp[rows])
            # As the dispatcher, once a chunk: 4.9.3's recovery hands every record to buildIndex, which rolls a
            # full file (or creates the first) before anything else, keys or not and even below the index's
            # end.  So a file that is full now rolls unless this chunk's last record filled it.
            index.roll_if_due(int(offsets[-1]), full_before)
        dispatcher.last_store_timestamp = int(chunk.store_timestamp[-1])

    def _undecodable(self, offset: int) -> None:
        """What the dispatcher does with a record it cannot decode: no entry, no keys, the error noted."""
        self.dispatcher.error = f"topic is not UTF-8 at commitlog offset {offset}"
        log.error("dispatch: %s", self.dispatcher.error)

    def _check_queues(self, chunk: Chunk, offsets: np.ndarray, tids: np.ndarray, queued: np.ndarray,
                      tags: np.ndarray, need_cq: np.ndarray) -> None:
        sel = np.flatnonzero(queued)
        key = (tids[sel] << 32) | (chunk.queue_id[sel] & 0xFFFFFFFF)
        first = key[0]
        if (key == first).all():  # one queue in this chunk (the common case): no grouping
            groups = [(int(first), sel)]
        else:
            order = np.argsort(key, kind="stable")
            sorted_key = key[order]
            cuts = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
            groups = [(int(sorted_key[a]), sel[order[a:b]])
                      for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(sel)])]
        for k, idx in groups:
            topic = self.names[k >> 32]
            queue_id = int(chunk.queue_id[idx[0]])
            check = self.checks.get((topic, queue_id))  # type: ignore[arg-type]
            if check is None:
                check = self._start_check(topic, queue_id)  # type: ignore[arg-type]
            if not check.verifying:
                need_cq[idx] = True
                continue
            while len(idx):
                e0 = check.next_entry
                have = _entries(check.cq, e0, len(idx))  # type: ignore[arg-type]
                m = len(have)
                ok = ((chunk.queue_offset[idx[:m]] == e0 + np.arange(m, dtype=np.int64))
                      & (have["offset"] == offsets[idx[:m]]) & (have["size"] == chunk.size[idx[:m]])
                      & (have["tags_code"] == tags[idx[:m]]))
                good = m if ok.all() else int(np.argmin(ok))
                check.next_entry = e0 + good
                if good == len(idx):
                    break
                i = int(idx[good])
                if good < m and int(offsets[i] + chunk.size[i]) <= int(have["offset"][good]) and \
                        self._points_at_its_record(have[good], topic, queue_id, e0 + good):  # type: ignore[arg-type]
                    # a record of this topic and queue that the queue's next entry lies beyond, that entry
                    # pointing at a real record of the queue: a record the queue never held (the topic was
                    # deleted and created again since), which 4.9.3's re-dispatch skips as lying below the
                    # queue's maxPhysicOffset; the queue is kept and checked on from the next record
                    idx = idx[good + 1:]
                    continue
                hole_end = self._missing_segment_end(int(have["offset"][good])) if good < m else 0
                if hole_end and int(have["offset"][good]) < int(offsets[i]):
                    # entries into commitlog segments that are gone (deleted from the middle): nothing here
                    # says they are wrong, and cutting would drop the queue's later entries, whose records
                    # are intact (4.9.3 keeps them all); kept, and the check goes on past the hole
                    past = _first_entry_from(check.cq, hole_end)  # type: ignore[arg-type]
                    check.next_entry = max(e0 + good + 1, past)
                    idx = idx[good:]
                    continue
                # the first entry that disagrees: everything from it on is rebuilt from the records
                _cut_queue(check.cq, check.next_entry)  # type: ignore[arg-type]
                check.verifying = False
                need_cq[idx[good:]] = True
                break

    def _missing_segment_end(self, offset: int) -> int:
        """Where the next present commitlog segment starts when *offset* lies between two present segments,
        in none of them (a segment gone from the middle); 0 otherwise."""
        at = bisect.bisect_right(self._starts, offset) - 1
        if at < 0 or at + 1 >= len(self.files):
            return 0
        mf = self.files[at]
        return self._starts[at + 1] if offset >= mf.start_offset + mf.size_bytes else 0

    def _points_at_its_record(self, entry: np.void, topic: str, queue_id: int, queue_offset: int) -> bool:
        """Whether *entry* points at a whole record of *topic* / *queue_id* at *queue_offset*, of the entry's
        size, that says it is stored where the entry says (a torn entry's offset points at nothing like it)."""
        offset, size = int(entry["offset"]), int(entry["size"])
        at = bisect.bisect_right(self._starts, offset) - 1
        if at < 0 or size < MIN_RECORD_BYTES:
            return False
        mf = self.files[at]
        try:
            record = decode_record(mf.buffer, offset - mf.start_offset, with_body=False, limit=mf.size_bytes)
        except (MessageDecodeError, ValueError):
            return False
        return (record.store_size == size and record.commit_log_offset == offset and record.topic == topic
                and record.queue_id == queue_id and record.queue_offset == queue_offset)

    def _start_check(self, topic: str, queue_id: int) -> _QueueCheck:
        cq = self.queues.get(topic, queue_id)
        if cq is None or cq.max_offset == 0:
            check = _QueueCheck(cq, 0, False)
        else:
            check = _QueueCheck(cq, _first_entry_from(cq, self.rebuild_from), True)
        self.checks[(topic, queue_id)] = check
        return check

    def _properties(self, reader: SegmentReader, chunk: Chunk, offsets: np.ndarray, tids: np.ndarray,
                    tx: np.ndarray, sel: np.ndarray, queued: np.ndarray, need_index: np.ndarray,
                    tags: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Parse the properties of the records *sel* of *chunk*: their tagsCodes go into *tags* (queued
        records), records that turn out undecodable are cleared in *ok*; returns (record, hash) of their
        index keys in dispatch order (records the index needs)."""
        dispatcher = self.dispatcher
        names = self.names
        ends = chunk.start + chunk.size
        text_at = chunk.props_at[sel] + 2
        text_len = ends[sel] - text_at
        props: UniformProperties | ChunkProperties | None = None
        if (text_len == text_len[0]).all():
            props = UniformProperties.build(reader.arr, text_at, int(text_len[0]))
        if props is None:
            # (``GroupedProperties``, a matrix per properties length, ran ~10 % slower here on a mix of
            # key widths and tags, where many groups hold several shapes and the matrix is declined)
            props = ChunkProperties(reader.arr, text_at, ends[sel])
        sel_tids = tids[sel]
        odd_topic = np.array([name is None or name == SCHEDULE_TOPIC or not name.isascii() for name in names],
                             dtype=bool)
        slow = props.non_ascii | odd_topic[sel_tids]
        queued_sel = queued[sel]
        if queued_sel.any():
            tags[sel] = np.where(queued_sel, props.tags_codes(), 0)
        indexed = need_index[sel] & (tx[sel] != SysFlag.TRANSACTION_ROLLBACK_TYPE)
        key_rec = key_hash = np.zeros(0, dtype=np.int64)
        if indexed.any():
            key_rec, key_hash = props.key_hashes(sel_tids, [name or "" for name in names], indexed & ~slow)
        if slow.any():
            extra_rec: list[int] = []
            extra_hash: list[int] = []
            mm = reader.mm
            for j in np.flatnonzero(slow).tolist():
                i = int(sel[j])
                topic = names[int(sel_tids[j])]
                try:
                    if topic is None:
                        raise UnicodeDecodeError("utf-8", b"", 0, 1, "topic is not UTF-8")
                    lo, hi = int(chunk.props_at[i]) + 2, int(ends[i])
                    text = java_utf8(mm[lo:hi]) if hi > lo else ""  # (as 4.9.3: U+FFFD if not UTF-8)
                except UnicodeDecodeError:
                    ok[i] = False
                    tags[i] = 0
                    self._undecodable(int(offsets[i]))
                    continue
                parsed = parse_properties(text) if text else {}
                if queued_sel[j]:
                    tags[i] = dispatcher.tags_code_of(topic, parsed, int(chunk.store_timestamp[i]))
                if indexed[j]:
                    uniq = parsed.get(PropertyName.UNIQ_KEY)
                    if uniq is not None:
                        extra_rec.append(j)
                        extra_hash.append(index_key_hash_for_topic(topic, uniq))
                    keys = parsed.get(PropertyName.KEYS)
                    if keys:
                        for key in keys.split(PropertyName.KEY_SEPARATOR):
                            if key:
                                extra_rec.append(j)
                                extra_hash.append(index_key_hash_for_topic(topic, key))
            if extra_rec:
                rec = np.concatenate((key_rec, np.asarray(extra_rec, dtype=np.int64)))
                hashes = np.concatenate((key_hash, np.asarray(extra_hash, dtype=np.int64)))
                order = np.argsort(rec, kind="stable")  # keys stay in record order, each record's in its own
                key_rec, key_hash = rec[order], hashes[order]
        return sel[key_rec], key_hash

    def finish(self) -> None:
        """After the walk: entries no walked record vouched for go (they point at records that are not
        there: past the last one of their queue, or in a queue the walk never met)."""
        for check in self.checks.values():
            if check.verifying and check.cq is not None:
                _cut_queue(check.cq, check.next_entry)
        for cq in self.queues:
            if (cq.topic, cq.queue_id) not in self.checks and cq.max_physic_offset > self.rebuild_from:
                cq.truncate_dirty(self.rebuild_from)


def scan_and_dispatch(commitlog: CommitLog, start_index: int, check_crc: bool, dispatcher: Dispatcher,
                      progress: Callable[[int], None] | None = None, keep_bad_crc_until_ms: int | None = None,
                      damaged: list[int] | None = None,
                      ) -> tuple[int, int, str | None, tuple[int, dict[tuple[str, int], int]] | None]:
    """Abnormal recovery's walk from segment *start_index*: ``scan_valid_end``'s checks, a chunk of records
    at a time (recovery_scan), with consume queues and index brought in line with every valid record
    (``_Redispatch``).  Returns (valid end offset, records, why it stopped, None or (where re-dispatch
    stopped, the next queue offset of each queue with records from there on)).

    A consume-queue or index file that cannot be written (ENOSPC: the disk is full) stops the re-dispatch
    at the first record of the chunk that failed, not the walk: the valid end is still found, the store
    opens, and its dispatcher builds the rest (its entries are idempotent) once it can write, as 4.9.3's
    recovery logs the failed writes and goes on.  The dispatcher's ``io_error`` is set meanwhile.

    Records kept as bit rot (*keep_bad_crc_until_ms*, see ``SegmentReader.chunk``) are dispatched as any
    other; their commitlog offsets go into *damaged*."""
    files = commitlog.files.files
    if not files:
        return 0, 0, None, None
    redo = _Redispatch(dispatcher, dispatcher.queues, files[start_index].start_offset, files)
    stopped_at: int | None = None
    queue_ends: dict[tuple[str, int], int] = {}

    def feed(reader: SegmentReader, chunk: Chunk, base: int) -> None:
        nonlocal stopped_at
        if stopped_at is None:
            try:
                redo.feed(reader, chunk, base)
                return
            except OSError as exc:
                stopped_at = base + int(chunk.start[0])
                dispatcher.io_error = exc
                log.error("recovery: cannot write consume queue or index from commitlog offset %d on (%s); the "
                          "dispatcher builds them once it can", stopped_at, exc)
        _tally_queue_ends(reader, chunk, redo, queue_ends)

    end, records, reason = _walk_chunks(files, start_index, check_crc, feed, progress, keep_bad_crc_until_ms,
                                        damaged)
    redo.finish()
    return end, records, reason, None if stopped_at is None else (stopped_at, queue_ends)


def _tally_queue_ends(reader: SegmentReader, chunk: Chunk, redo: _Redispatch,
                      ends: dict[tuple[str, int], int]) -> None:
    """Note in *ends* the next queue offset of each queue with a queued record in *chunk* (only walked after
    re-dispatch stopped: a full disk, rare)."""
    if not len(chunk):
        return
    tids = reader.topic_ids(chunk, redo.topics, redo.names).tolist()
    tx = (chunk.sys_flag & SysFlag.TRANSACTION_MASK).tolist()
    names = redo.names
    for tid, queue_id, queue_offset, t in zip(tids, chunk.queue_id.tolist(), chunk.queue_offset.tolist(), tx):
        name = names[tid]
        if name is None or not (t == SysFlag.TRANSACTION_NOT_TYPE or t == SysFlag.TRANSACTION_COMMIT_TYPE):
            continue
        key = (name, queue_id)
        if ends.get(key, 0) <= queue_offset:
            ends[key] = queue_offset + 1


def _walk_chunks(files: list[MappedFile], start_index: int, check_crc: bool,
                 feed: Callable[[SegmentReader, Chunk, int], None] | None,
                 progress: Callable[[int], None] | None, keep_bad_crc_until_ms: int | None = None,
                 damaged: list[int] | None = None) -> tuple[int, int, str | None]:
    """``scan_valid_end`` a chunk of records at a time; *feed* sees each chunk.  Records kept as bit rot
    (*keep_bad_crc_until_ms*) are logged and their commitlog offsets added to *damaged*."""
    records = 0
    index = start_index
    while True:
        mf = files[index]
        with SegmentReader(mf.buffer, mf.size_bytes) as reader:
            pos = 0
            while True:
                chunk = reader.chunk(pos, check_crc, keep_bad_crc_until_ms=keep_bad_crc_until_ms)
                for at in chunk.damaged:
                    _report_damaged(mf, at, damaged)
                if feed is not None:
                    feed(reader, chunk, mf.start_offset)
                records += len(chunk)
                pos = chunk.next_pos
                if chunk.reason is not None:
                    break
        reason = chunk.reason
        if progress is not None:
            progress(mf.size_bytes)  # the segment the walk ended in counts as scanned too
        if reason == "BLANK":
            index += 1
            if index >= len(files):
                return mf.start_offset + mf.size_bytes, records, None
            continue
        return mf.start_offset + pos, records, reason if reason != "no record magic" else None


def _report_damaged(mf: MappedFile, pos: int, damaged: list[int] | None) -> None:
    """Log the record at *pos* of *mf* that recovery keeps although its body fails its CRC."""
    offset = mf.start_offset + pos
    if damaged is not None:
        damaged.append(offset)
    try:
        record = decode_record(mf.buffer, pos, with_body=False, limit=mf.size_bytes)
        what = f"topic {record.topic}, queue {record.queue_id}, queue offset {record.queue_offset}"
    except (MessageDecodeError, ValueError) as exc:  # (its lengths held together for the walk: not expected)
        what = f"its header does not decode: {exc}"
    log.error("recovery: the record at commitlog offset %d (%s) is damaged: its body fails its CRC "
              "although it was synced whole (bit rot); it is kept, and readers report it as damaged",
              offset, what)


def _matches_checkpoint(mf: MappedFile, checkpoint: Checkpoint, index_safe: bool) -> bool:
    magic = _HEAD.unpack_from(mf.buffer, 0)[1]
    if magic != MESSAGE_MAGIC:
        return False
    sys_flag = int.from_bytes(mf.buffer[36:40], "big", signed=True)
    ts_pos = store_timestamp_position(sys_flag)
    store_ts = int.from_bytes(mf.buffer[ts_pos : ts_pos + 8], "big", signed=True)
    if store_ts == 0:
        return False
    bound = checkpoint.min_timestamp_index() if index_safe else checkpoint.min_timestamp()
    return store_ts <= bound


def used_bytes_after(mf: MappedFile, pos: int, chunk_bytes: int = 1 << 20) -> int:
    """``len(buffer[pos:].rstrip(b"\\0"))`` without copying the tail: a preallocated segment's tail is
    mostly zeros (up to a whole 1 GiB segment), so scan it backwards a chunk at a time through a numpy view,
    and only where the file system says data may be (``MappedFile.data_ranges``)."""
    view = np.frombuffer(mf.buffer, dtype=np.uint8)
    chunk = view[:0]
    try:
        for low, high in reversed(mf.data_ranges(pos, len(view))):
            stop = high
            while stop > low:
                start = max(low, stop - chunk_bytes)
                chunk = view[start:stop]
                if chunk.max():  # (a SIMD max over bytes runs ~2x numpy's any)
                    # a copy: on a live store the writer may change these bytes under a read-only mapping
                    found = np.flatnonzero(chunk.copy())
                    if len(found):
                        return start + int(found[-1]) + 1 - pos
                stop = start
        return 0
    finally:
        del view, chunk  # the mmap cannot close while a view exports its buffer


def recover(commitlog: CommitLog, queues: ConsumeQueueTable, dispatcher: Dispatcher, checkpoint: Checkpoint,
            *, abnormal: bool, check_crc: bool, index_safe: bool,
            progress: Callable[[int], None] | None = None) -> RecoveryReport:
    for cq in queues:
        cq.recover(clean_exit=not abnormal)
    max_phy_in_queues = queues.max_physic_offset()
    files = commitlog.files.files
    if not files:
        dropped = sum(cq.max_offset - cq.first_queue_offset_on_disk for cq in queues)
        # drop syncs the directories it empties: queues a power loss brought back would point into the
        # commitlog the next records are written to
        queues.drop(list(queues.queues))
        return RecoveryReport(abnormal, 0, 0, 0, 0, None, dropped)
    damaged: list[int] = []
    if not abnormal:
        start = max(0, len(files) - 3)
    else:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            if _matches_checkpoint(files[i], checkpoint, index_safe):
                start = i
                break

    if abnormal:
        # Entries for records from the start segment on are checked against the commitlog (a torn page can
        # leave an entry with a plausible but wrong size) and rebuilt from the first that disagrees; entries
        # before it were durable when the checkpoint was written.
        # a body that fails its CRC in a record the checkpoint vouches for is bit rot, past it a torn write
        end, records, reason, stopped = scan_and_dispatch(commitlog, start, check_crc, dispatcher, progress,
                                                          checkpoint.min_timestamp(), damaged)
    else:
        stopped = None
        # a clean close synced every record of the tail whole: a body that fails its CRC there is bit rot
        end, records, reason = _walk_chunks(files, start, check_crc, None, progress, _ANY_TIME_MS, damaged)
    # bytes after `end` that held anything: what the cut discards
    truncated = 0
    for mf in commitlog.files.files:
        if mf.end_offset > end:
            truncated += used_bytes_after(mf, max(0, end - mf.start_offset))
    commitlog.files.set_positions(end)
    commitlog.files.truncate_after(end)
    if abnormal:
        # what the crashed run wrote from the checkpoint's segment on may be in the page cache only (kill -9):
        # counted flushed, neither a clean close nor flush() synced it, the checkpoint's physic timestamp
        # claimed it, and a power loss took records the consume queues point at.  The next flush syncs it.
        first = files[start].start_offset
        for mf in commitlog.files.files:
            if mf.start_offset >= first:
                mf.flushed = 0
    dropped = 0
    if max_phy_in_queues >= end:
        for cq in queues:
            before = cq.max_offset
            cq.truncate_dirty(end)
            dropped += before - cq.max_offset
    if dispatcher.index is not None:
        dispatcher.index.truncate_past(end)
    if reason:
        log.warning("recovery stopped at commitlog offset %d: %s", end, reason)
    return RecoveryReport(abnormal, files[start].start_offset if files else 0, end, truncated, records, reason,
                          dropped, redispatch_stopped_at=None if stopped is None else min(stopped[0], end),
                          undispatched_queue_ends=None if stopped is None else stopped[1],
                          damaged_records=tuple(damaged))
