"""Cross-check an opened store: commitlog, consume queues and index against each other.

``verify_store(store)`` reads the store as it stands after open (for a store opened ``read_only=True``
that is the state recovery and dispatch produced in private memory, so nothing on disk changes) and
reports every disagreement it finds as a :class:`Problem`:

* every commitlog record decodes, its PHYSICALOFFSET is where it lies, its body CRC matches, and every
  segment but the last ends with an end-of-file blank record covering exactly the rest of the segment;
* every consume-queue entry (pre-blank fill entries excepted) points at a record start inside the
  commitlog, with the record's TOTALSIZE, topic, queue id, QUEUEOFFSET (= the entry's position) and the
  tagsCode dispatch computes;
* each queue is dense: no fill or empty entry between its min and max offset, no two entries for one
  record, and the records of one queue carry distinct, gap-free QUEUEOFFSETs;
* every NOT / COMMIT record has its consume-queue entry;
* commitlog/, consumequeue/ and index/ are directories where they exist;
* every index key of a record (UNIQ_KEY and each KEYS token; ROLLBACK records are not indexed) finds
  that record through a query by key.

Properties that are not UTF-8 are read as 4.9.3 reads them (U+FFFD for each malformed sequence) and the
record is checked on: a 4.9.3 batch stores its entries' properties as sent, and 4.9.3's recovery and
dispatch take such a record without complaint, so they are counted (``properties_not_utf8``), and a problem
only where the record's tagsCode or index keys disagree with them as read (a byte changed on disk).

It also says what recovery did at open (``recovery_preview``); after a clean shutdown recovery should cut
nothing, so a cut is a problem then: commitlog bytes, or consume-queue entries on disk that point past the
commitlog's end (a lost last segment, a missing commitlog directory: 4.9.3 truncates such entries, or
destroys every queue when no segment is left, so the store would otherwise verify as a smaller, "OK" one).
After a crash a torn tail is what recovery is for: reported, not a problem; but a cut with whole records on
disk past it (a record damaged mid-store, not torn) loses them, and is one.

A deleted topic's records stay in the commitlog until retention while its consume queues go (4.9.3's
DELETE_TOPIC_IN_BROKER: cleanUnusedTopic), and a topic created again restarts its queues at queue offset 0.
Given the broker's topic table (``config/topics.json``, which the caller reads: the store knows no topics),
those records are counted (``deleted_topic_records``) rather than reported: the records of a queue that has
no consume queue, of a topic the table does not hold; and the records of a topic older than the first entry
of one of its queues that restarted at queue offset 0 after records of its own (the deletion point).  A
topic the table holds whose queue lost its consume queue is still a problem.

Same package as the facade, so it reads the commitlog, queues and index directly; imports no cli code.
"""

from __future__ import annotations

import os
import zlib
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from rocketstore.errors import MessageDecodeError
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    BLANK_RECORD_BYTES,
    MESSAGE_MAGIC,
    TOTAL_SIZE_MAGIC,
    StoredMessage,
    SysFlag,
    decode_record,
    header_layout,
)
from rocketstore.store.consume_queue import CQ_ENTRY, CQ_ENTRY_BYTES, PRE_BLANK_SIZE, ConsumeQueueTable
from rocketstore.store.message_store import MAX_TIMESTAMP, MessageStore
from rocketstore.store.queue_cleanup import KEPT_TOPICS, LMQ_TOPIC_PREFIX
from rocketstore.store.snapshot import SegmentFiles

__all__ = ["Problem", "ProblemKind", "Progress", "RecoveryPreview", "VerifyReport", "verify_store"]

#: called with (phase, done, total) as a long check goes on: "commitlog" in bytes, other phases in items
Progress = Callable[[str, int, int], None]


class ProblemKind:
    """The ``kind`` of a :class:`Problem`."""

    RECORD_UNDECODABLE = "RECORD_UNDECODABLE"
    #: properties that are not UTF-8 and that the record's queue entry (tagsCode) or the index disagree with
    #: as 4.9.3 reads them (U+FFFD): changed on disk after dispatch (the body CRC does not cover them).  Alone
    #: they are no problem (``VerifyReport.properties_not_utf8``): a 4.9.3 batch stores its entries'
    #: properties as sent, and 4.9.3's recovery and dispatch read them so without complaint
    PROPERTIES_NOT_UTF8 = "PROPERTIES_NOT_UTF8"
    RECORD_OFFSET_MISMATCH = "RECORD_OFFSET_MISMATCH"
    BODY_CRC_MISMATCH = "BODY_CRC_MISMATCH"
    BLANK_SIZE_MISMATCH = "BLANK_SIZE_MISMATCH"
    SEGMENT_WITHOUT_BLANK = "SEGMENT_WITHOUT_BLANK"
    CQ_PAST_COMMITLOG_END = "CQ_PAST_COMMITLOG_END"
    CQ_NOT_RECORD_START = "CQ_NOT_RECORD_START"
    CQ_SIZE_MISMATCH = "CQ_SIZE_MISMATCH"
    CQ_QUEUE_MISMATCH = "CQ_QUEUE_MISMATCH"
    CQ_QUEUE_OFFSET_MISMATCH = "CQ_QUEUE_OFFSET_MISMATCH"
    CQ_TAGS_CODE_MISMATCH = "CQ_TAGS_CODE_MISMATCH"
    CQ_NOT_DISPATCHABLE = "CQ_NOT_DISPATCHABLE"
    CQ_HOLE = "CQ_HOLE"
    CQ_DUPLICATE_ENTRY = "CQ_DUPLICATE_ENTRY"
    QUEUE_OFFSET_DUPLICATE = "QUEUE_OFFSET_DUPLICATE"
    QUEUE_OFFSET_GAP = "QUEUE_OFFSET_GAP"
    RECORD_NOT_IN_CQ = "RECORD_NOT_IN_CQ"
    INDEX_KEY_NOT_FOUND = "INDEX_KEY_NOT_FOUND"
    RECOVERY_TRUNCATES = "RECOVERY_TRUNCATES"
    RECOVERY_DROPS_CQ_ENTRIES = "RECOVERY_DROPS_CQ_ENTRIES"
    NOT_A_DIRECTORY = "NOT_A_DIRECTORY"


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    #: ``commitlog@<offset>``, ``consumequeue/<topic>/<queue id>#<queue offset>``, ``index <topic>#<key>``, or
    #: the path of a store directory that is not one
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.where}: {self.detail}"


@dataclass(frozen=True, slots=True)
class RecoveryPreview:
    """What recovery did at open (in scratch mode: what it would do to the files)."""

    abnormal: bool
    start_segment: int
    valid_end: int
    truncated_bytes: int
    records_checked: int
    reason: str | None


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Problems (the first ``max_problems`` found; ``problem_count`` counts all) and what was checked."""

    problems: tuple[Problem, ...]
    problem_count: int
    recovery_preview: RecoveryPreview
    commit_log_min_offset: int
    commit_log_max_offset: int
    record_count: int = 0
    blank_count: int = 0
    queue_count: int = 0
    cq_entry_count: int = 0
    index_key_count: int = 0
    index_checked: bool = False
    counts_by_kind: dict[str, int] = field(default_factory=dict)
    #: topic -> its records left in the commitlog by a deletion (only known given the broker's topic table)
    deleted_topic_records: dict[str, int] = field(default_factory=dict)
    #: records whose properties are not UTF-8, read as 4.9.3 reads them (each malformed sequence one U+FFFD);
    #: not a problem by itself (a 4.9.3 batch stores its entries' properties as sent), and the commitlog
    #: offsets of the first few
    properties_not_utf8: int = 0
    properties_not_utf8_offsets: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.problem_count == 0


class _Collector:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[Problem] = []
        self.count = 0
        self.by_kind: dict[str, int] = defaultdict(int)

    def add(self, kind: str, where: str, detail: str) -> None:
        self.count += 1
        self.by_kind[kind] += 1
        if len(self.items) < self.limit:
            self.items.append(Problem(kind, where, detail))


@dataclass(slots=True)
class _Records:
    """Every MESSAGE record of the commitlog, column-wise (compact arrays, handed to numpy as they are)."""

    offsets: array = field(default_factory=lambda: array("q"))
    sizes: array = field(default_factory=lambda: array("q"))
    queue_ids: array = field(default_factory=lambda: array("q"))  # numbers given by ``queues``
    queue_offsets: array = field(default_factory=lambda: array("q"))
    tags_codes: array = field(default_factory=lambda: array("q"))
    dispatchable: array = field(default_factory=lambda: array("b"))
    queues: dict[tuple[str, int], int] = field(default_factory=dict)
    #: (topic, key) -> commitlog offsets of the records indexed under it
    keys: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    #: commitlog offsets (ascending) of the records whose properties are not UTF-8: 8 bytes each, as a
    #: store may hold millions (their queue and queue offset are in the columns above)
    not_utf8: array = field(default_factory=lambda: array("q"))
    #: offsets of such records that their queue entry's tagsCode or the index disagree with
    not_utf8_disagreeing: set[int] = field(default_factory=set)

    def disagrees(self, offset: int) -> None:
        """Note that what was built from the record at *offset* disagrees with its properties as read."""
        i = bisect_left(self.not_utf8, offset)
        if i < len(self.not_utf8) and self.not_utf8[i] == offset:
            self.not_utf8_disagreeing.add(offset)


def _where_record(offset: int) -> str:
    return f"commitlog@{offset}"


def _body_span(buf: bytes, pos: int, sys_flag: int) -> tuple[int, int]:
    header = header_layout(bool(sys_flag & SysFlag.BORNHOST_V6), bool(sys_flag & SysFlag.STOREHOST_V6))
    body_len = int.from_bytes(buf[pos + header.size - 4 : pos + header.size], "big", signed=True)
    return pos + header.size, body_len


def _walk_commitlog(store: MessageStore, out: _Collector, progress: Progress | None = None) -> tuple[_Records, int]:
    commitlog = store._commitlog
    dispatcher = store._dispatcher
    end = commitlog.max_offset
    recs = _Records()
    blanks = 0
    files = commitlog.files.files
    first = files[0].start_offset if files else 0
    for n, mf in enumerate(files):
        if progress is not None:
            progress("commitlog", mf.start_offset - first, end - first)
        # an mmap is a buffer; decode_record's annotation does not list it yet
        buf = cast(bytes, mf.buffer)
        limit = min(mf.wrote, end - mf.start_offset, mf.size_bytes)
        is_last = n == len(files) - 1
        pos = 0
        ended = False
        while pos + BLANK_RECORD_BYTES <= limit:
            offset = mf.start_offset + pos
            size, magic = TOTAL_SIZE_MAGIC.unpack_from(buf, pos)
            if magic == BLANK_MAGIC:
                blanks += 1
                if size != mf.size_bytes - pos:
                    out.add(ProblemKind.BLANK_SIZE_MISMATCH, _where_record(offset),
                            f"end-of-file blank declares {size} bytes, {mf.size_bytes - pos} are left")
                ended = True
                break
            if magic != MESSAGE_MAGIC:
                out.add(ProblemKind.RECORD_UNDECODABLE, _where_record(offset),
                        f"no record magic (size {size}, magic {magic & 0xFFFFFFFF:#010x}); rest of the "
                        f"segment skipped")
                ended = True
                break
            try:
                try:
                    m = decode_record(buf, pos, with_body=False, limit=limit, strict_text=True)
                except MessageDecodeError:
                    # not UTF-8: properties are read as every reader and the dispatcher read them (U+FFFD),
                    # so the record is still checked against its queue entry; a topic stays undecodable, as
                    # the dispatcher refuses it (no queue entry to check).  4.9.3 stores a batch entry's
                    # properties as sent and recovers and serves such a record without complaint, so it is
                    # a problem only where its queue entry or the index disagree (see _not_utf8_problems)
                    m = decode_record(buf, pos, with_body=False, limit=limit, strict_topic=True)
                    recs.not_utf8.append(offset)
            except MessageDecodeError as exc:
                # a record damaged inside (one flipped byte in its topic or properties) whose size still leads
                # to the next record's magic: skip just it, or every later record of the segment (and each
                # queue entry pointing at one) would be reported too
                after = pos + size
                if size > BLANK_RECORD_BYTES and (after == limit or (
                        after + BLANK_RECORD_BYTES <= limit
                        and TOTAL_SIZE_MAGIC.unpack_from(buf, after)[1] in (MESSAGE_MAGIC, BLANK_MAGIC))):
                    out.add(ProblemKind.RECORD_UNDECODABLE, _where_record(offset),
                            f"{exc.reason}; skipped by its size ({size} bytes)")
                    pos = after
                    continue
                out.add(ProblemKind.RECORD_UNDECODABLE, _where_record(offset),
                        f"{exc.reason}; rest of the segment skipped")
                ended = True
                break
            if m.commit_log_offset != offset:
                out.add(ProblemKind.RECORD_OFFSET_MISMATCH, _where_record(offset),
                        f"PHYSICALOFFSET field says {m.commit_log_offset}")
            body_at, body_len = _body_span(buf, pos, m.sys_flag)
            crc = zlib.crc32(buf[body_at : body_at + body_len]) & 0x7FFFFFFF
            if crc != m.body_crc:
                out.add(ProblemKind.BODY_CRC_MISMATCH, _where_record(offset),
                        f"body CRC is {crc:#x}, the record says {m.body_crc:#x} ({m.topic}/{m.queue_id} "
                        f"queue offset {m.queue_offset})")
            props = parse_properties(m.properties_string)
            dispatchable = SysFlag.gets_queue_entry(m.sys_flag)
            key = (m.topic, m.queue_id)
            qid = recs.queues.setdefault(key, len(recs.queues))
            recs.offsets.append(offset)
            recs.sizes.append(m.store_size)
            recs.queue_ids.append(qid)
            recs.queue_offsets.append(m.queue_offset)
            recs.tags_codes.append(dispatcher.tags_code_of(m.topic, props, m.store_timestamp)
                                   if dispatchable else 0)
            recs.dispatchable.append(dispatchable)
            if m.sys_flag & SysFlag.TRANSACTION_MASK != SysFlag.TRANSACTION_ROLLBACK_TYPE:
                uniq = props.get(PropertyName.UNIQ_KEY)
                if uniq is not None:
                    recs.keys[(m.topic, uniq)].append(offset)
                keys = props.get(PropertyName.KEYS)
                if keys:
                    for k in keys.split(PropertyName.KEY_SEPARATOR):
                        if k:
                            recs.keys[(m.topic, k)].append(offset)
            pos += m.store_size
            if progress is not None and len(recs.offsets) % 4096 == 0:
                progress("commitlog", mf.start_offset + pos - first, end - first)
        if not ended and not is_last:
            out.add(ProblemKind.SEGMENT_WITHOUT_BLANK, _where_record(mf.start_offset + pos),
                    "a segment that is not the last one ends without an end-of-file blank record")
    if progress is not None:
        progress("commitlog", end - first, end - first)
    return recs, blanks


def _check_queues(store: MessageStore, recs: _Records, out: _Collector,
                  configured_topics: Collection[str] | None) -> tuple[int, int, dict[str, int]]:
    commitlog_min = store._commitlog.min_offset
    commitlog_end = store._commitlog.max_offset
    rec_offsets = np.frombuffer(recs.offsets, dtype=np.int64)
    rec_sizes = np.frombuffer(recs.sizes, dtype=np.int64)
    rec_queue = np.frombuffer(recs.queue_ids, dtype=np.int64)
    rec_qoff = np.frombuffer(recs.queue_offsets, dtype=np.int64)
    rec_tags = np.frombuffer(recs.tags_codes, dtype=np.int64)
    rec_disp = np.frombuffer(recs.dispatchable, dtype=np.int8).astype(bool)
    names = {v: k for k, v in recs.queues.items()}
    # dispatchable records grouped by queue, in commitlog order within each group
    disp_idx = np.flatnonzero(rec_disp)
    order = disp_idx[np.argsort(rec_queue[disp_idx], kind="stable")]
    groups = np.split(order, np.flatnonzero(np.diff(rec_queue[order])) + 1) if len(order) else []
    by_queue = {int(rec_queue[g[0]]): g for g in groups}
    deleted = (_take_deleted_incarnations(store, names, by_queue, rec_offsets, configured_topics)
               if configured_topics is not None else {})
    entries_checked = 0
    queue_count = 0

    for cq in store._queues:
        queue_count += 1
        topic, queue_id = cq.topic, cq.queue_id
        where = f"consumequeue/{topic}/{queue_id}"
        qid = recs.queues.get((topic, queue_id), -1)
        arr = cq.all_entries()
        base = cq.first_queue_offset_on_disk
        n = len(arr)
        phy = arr["offset"].astype(np.int64)
        size = arr["size"].astype(np.int64)
        tags = arr["tags_code"].astype(np.int64)
        qoffs = np.arange(base, base + n, dtype=np.int64)
        fill = size == PRE_BLANK_SIZE
        # Fill entries only lead the first segment; after the first real entry every slot is real.
        first_real = int(np.argmax(~fill)) if n and not fill.all() else n
        for i in (np.flatnonzero(fill[first_real:]) + first_real).tolist():
            out.add(ProblemKind.CQ_HOLE, f"{where}#{base + i}", "pre-blank fill entry after real entries")
        live = ~fill & (qoffs >= cq.min_offset)
        empty = live & ((phy < 0) | (size <= 0))
        for i in np.flatnonzero(empty).tolist():
            out.add(ProblemKind.CQ_HOLE, f"{where}#{base + i}",
                    f"empty entry (offset {int(phy[i])}, size {int(size[i])}) inside the queue")
        # entries whose commitlog segment was deleted are expired, not wrong
        live &= ~empty & (phy >= commitlog_min)
        entries_checked += int(live.sum())

        past = live & (phy + size > commitlog_end)
        for i in np.flatnonzero(past).tolist():
            out.add(ProblemKind.CQ_PAST_COMMITLOG_END, f"{where}#{base + i}",
                    f"points at {int(phy[i])}+{int(size[i])}, the commitlog ends at {commitlog_end}")
        live &= ~past

        idx = np.flatnonzero(live)
        if len(idx):
            pos = np.searchsorted(rec_offsets, phy[idx])
            r = np.minimum(pos, max(len(rec_offsets) - 1, 0))
            found = pos < len(rec_offsets)
            if len(rec_offsets):
                found &= rec_offsets[r] == phy[idx]
            for i in idx[~found].tolist():
                out.add(ProblemKind.CQ_NOT_RECORD_START, f"{where}#{base + i}",
                        f"commitlog offset {int(phy[i])} is not the start of a record")
            idx, r = idx[found], r[found]
            checks = (
                (ProblemKind.CQ_SIZE_MISMATCH, rec_sizes[r] != size[idx], "size {e} but the record has {r}",
                 size, rec_sizes),
                (ProblemKind.CQ_QUEUE_OFFSET_MISMATCH, rec_qoff[r] != qoffs[idx],
                 "entry {e} points at a record with QUEUEOFFSET {r}", qoffs, rec_qoff),
                (ProblemKind.CQ_TAGS_CODE_MISMATCH, rec_disp[r] & (rec_tags[r] != tags[idx]),
                 "tagsCode {e} but dispatch computes {r}", tags, rec_tags),
            )
            for kind, bad, text, entry_vals, rec_vals in checks:
                for j in np.flatnonzero(bad).tolist():
                    i, k = int(idx[j]), int(r[j])
                    out.add(kind, f"{where}#{base + i}", text.format(e=int(entry_vals[i]), r=int(rec_vals[k])))
                    if kind == ProblemKind.CQ_TAGS_CODE_MISMATCH:
                        recs.disagrees(int(rec_offsets[k]))
            for j in np.flatnonzero(rec_queue[r] != qid).tolist():
                i, k = int(idx[j]), int(r[j])
                t, q = names[int(rec_queue[k])]
                out.add(ProblemKind.CQ_QUEUE_MISMATCH, f"{where}#{base + i}",
                        f"points at commitlog {int(phy[i])}, a record of {t}/{q}")
            for j in np.flatnonzero(~rec_disp[r]).tolist():
                i = int(idx[j])
                out.add(ProblemKind.CQ_NOT_DISPATCHABLE, f"{where}#{base + i}",
                        f"points at commitlog {int(phy[i])}, a PREPARED or ROLLBACK record")
            uniq, counts = np.unique(phy[idx], return_counts=True)
            for offset, count in zip(uniq[counts > 1].tolist(), counts[counts > 1].tolist()):
                out.add(ProblemKind.CQ_DUPLICATE_ENTRY, where, f"{count} entries point at commitlog {offset}")

        mine = by_queue.pop(qid, None)
        if mine is not None:
            _check_queue_records(where, topic, queue_id, mine, base, phy, rec_offsets, rec_qoff, out)

    # dispatchable records of queues that have no consume queue at all
    for qid, mine in by_queue.items():
        topic, queue_id = names[qid]
        why = _why_no_queue(topic, configured_topics)
        for k in mine.tolist():
            out.add(ProblemKind.RECORD_NOT_IN_CQ, _where_record(int(rec_offsets[k])),
                    f"{topic}/{queue_id} has no consume queue{why}")
    return queue_count, entries_checked, deleted


def _why_no_queue(topic: str, configured_topics: Collection[str] | None) -> str:
    if configured_topics is None:
        return (" (or its topic was deleted, which leaves its records so: without the broker's "
                "config/topics.json verify cannot tell)")
    return " (its topic is in config/topics.json)" if topic in configured_topics else ""


def _deletion_points(store: MessageStore, names: dict[int, tuple[str, int]], by_queue: dict[int, np.ndarray],
                     rec_offsets: np.ndarray) -> dict[str, int]:
    """Topic -> the commitlog offset before which its records belong to a deleted incarnation: the least
    first-entry offset among its queues whose entry at queue offset 0 follows records of the same queue.
    A live queue's entry 0 is its first record; one with records before it was dropped and started again
    (deleting a topic drops all its queues at once, so every queue's old records lie before each new one)."""
    points: dict[str, int] = {}
    for qid, mine in by_queue.items():
        topic, queue_id = names[qid]
        cq = store._queues.get(topic, queue_id)
        first = cq.entry(0) if cq is not None else None
        if first is None or first[0] < 0 or first[1] <= 0 or first[1] == PRE_BLANK_SIZE:
            continue
        if int(rec_offsets[mine[0]]) < first[0]:
            points[topic] = min(points.get(topic, first[0]), first[0])
    return points


def _take_deleted_incarnations(store: MessageStore, names: dict[int, tuple[str, int]],
                               by_queue: dict[int, np.ndarray], rec_offsets: np.ndarray,
                               configured_topics: Collection[str]) -> dict[str, int]:
    """Take the records of deleted topics (and of a re-created topic's deleted incarnation) out of
    *by_queue*, so they are not checked against consume queues they no longer have; returns topic -> how
    many.  A queue without a consume queue counts whole only when the topic table lacks its topic and the
    broker would drop it (cleanUnusedTopic keeps SCHEDULE_TOPIC_XXXX, the transaction op topic and LMQ's)."""
    points = _deletion_points(store, names, by_queue, rec_offsets)
    deleted: dict[str, int] = defaultdict(int)
    for qid, mine in list(by_queue.items()):
        topic, queue_id = names[qid]
        droppable = topic not in KEPT_TOPICS and not topic.startswith(LMQ_TOPIC_PREFIX)
        if store._queues.get(topic, queue_id) is None and topic not in configured_topics and droppable:
            old = len(mine)
        elif topic in points:
            old = int(np.searchsorted(rec_offsets[mine], points[topic]))  # *mine* is in commitlog order
        else:
            continue
        if old:
            deleted[topic] += old
            if old == len(mine):
                del by_queue[qid]
            else:
                by_queue[qid] = mine[old:]
    return dict(deleted)


def _check_queue_records(where: str, topic: str, queue_id: int, mine: np.ndarray, base: int, phy: np.ndarray,
                         rec_offsets: np.ndarray, rec_qoff: np.ndarray, out: _Collector) -> None:
    """The dispatchable records of one queue: each has its entry; their QUEUEOFFSETs are dense."""
    n = len(phy)
    qo = rec_qoff[mine]
    rel = qo - base
    has = (rel >= 0) & (rel < n)
    if n:
        has &= phy[np.clip(rel, 0, n - 1)] == rec_offsets[mine]
    for j in np.flatnonzero(~has).tolist():
        out.add(ProblemKind.RECORD_NOT_IN_CQ, _where_record(int(rec_offsets[mine[j]])),
                f"{topic}/{queue_id} queue offset {int(qo[j])} has no entry pointing at this record")
    ordered = np.sort(qo)
    diffs = np.diff(ordered)
    for v in ordered[1:][diffs == 0].tolist():
        out.add(ProblemKind.QUEUE_OFFSET_DUPLICATE, where, f"several records carry QUEUEOFFSET {v}")
    for j in np.flatnonzero(diffs > 1).tolist():
        low, high = int(ordered[j]) + 1, int(ordered[j + 1]) - 1
        out.add(ProblemKind.QUEUE_OFFSET_GAP, where,
                f"no record carries QUEUEOFFSET {low}" + (f"..{high}" if high > low else ""))


def _check_index(store: MessageStore, recs: _Records, out: _Collector, progress: Progress | None = None) -> int:
    batch = store.config.max_msgs_num_batch
    index = store._index
    if index is None:
        return 0
    for n, ((topic, key), offsets) in enumerate(sorted(recs.keys.items())):
        if progress is not None and n % 1000 == 0:
            progress("index keys", n, len(recs.keys))
        wanted = set(offsets)
        damaged = False
        try:
            hits = store.query(topic, key, batch, 0, MAX_TIMESTAMP).messages
        except MessageDecodeError:  # a damaged record among the hits (the commitlog walk reports it)
            hits, damaged = (), True
        found = {m.commit_log_offset for m in hits}
        if not wanted <= found and (len(hits) >= batch or damaged
                                    or len(index.query(topic, key, batch, 0, MAX_TIMESTAMP)[0]) >= batch):
            # A query answers at most maxMsgsNumBatch hits; for a key on more records (a shared key, or one
            # whose hash collides) ask the index itself, with room for duplicates and collisions.  The
            # index's newest offsets may name records no longer there (a lost last segment), which the query
            # leaves out: fewer hits than the limit, yet the query was cut by it.
            found = set(index.query(topic, key, 4 * len(wanted) + 4 * batch, 0, MAX_TIMESTAMP)[0])
        for offset in sorted(wanted - found):
            out.add(ProblemKind.INDEX_KEY_NOT_FOUND, f"index {topic}#{key}",
                    f"a query by this key does not find the record at commitlog {offset}")
            recs.disagrees(offset)
    if progress is not None:
        progress("index keys", len(recs.keys), len(recs.keys))
    return len(recs.keys)


def _not_utf8_problems(recs: _Records, out: _Collector) -> None:
    """A record whose properties are not UTF-8 is a problem only where its queue entry's tagsCode or the
    index disagree with them as read: then a byte of them changed on disk after dispatch.  Where everything
    built from them agrees the record is as 4.9.3 stored it (a batch entry's properties are kept as sent)
    and as its recovery and dispatch read it: no problem."""
    names = {number: name for name, number in recs.queues.items()}
    for offset in sorted(recs.not_utf8_disagreeing):
        k = bisect_left(recs.offsets, offset)  # the record's row (its offset is among them)
        topic, queue_id = names[recs.queue_ids[k]]
        out.add(ProblemKind.PROPERTIES_NOT_UTF8, _where_record(offset),
                f"properties are not UTF-8 ({topic}/{queue_id} queue offset {recs.queue_offsets[k]}) and its "
                "queue entry or the index disagree with them as read (U+FFFD for each malformed sequence, as "
                "4.9.3 reads them): changed on disk")


def _entry_on_disk(queue_dir: str, segment_bytes: int, queue_offset: int) -> tuple[int, int, int] | None:
    """The consume-queue entry at *queue_offset* as the file holds it, None where no file or entry is."""
    pos = queue_offset * CQ_ENTRY_BYTES
    path = os.path.join(queue_dir, f"{pos - pos % segment_bytes:020d}")
    try:
        with open(path, "rb") as fh:
            raw = os.pread(fh.fileno(), CQ_ENTRY_BYTES, pos % segment_bytes)
    except (FileNotFoundError, IsADirectoryError):  # the open skips a directory in the file's place too
        return None
    return CQ_ENTRY.unpack(raw) if len(raw) == CQ_ENTRY_BYTES else None


def _record_on_disk(segments: SegmentFiles, offset: int, check_crc: bool) -> StoredMessage | None:
    """The whole message record at commitlog *offset* as its segment file holds it (its PHYSICALOFFSET
    saying so too when *check_crc*), None where there is none."""
    try:
        head = segments.read(offset, TOTAL_SIZE_MAGIC.size)
        if head is None:
            return None
        size, magic = TOTAL_SIZE_MAGIC.unpack(head)
        raw = segments.read(offset, size) if magic == MESSAGE_MAGIC else None
    except IsADirectoryError:
        return None
    if raw is None:
        return None
    try:
        m = decode_record(raw, check_crc=check_crc, with_body=False)
    except MessageDecodeError:
        return None
    return m if not check_crc or m.commit_log_offset == offset else None


def _first_record_past_cut(store: MessageStore) -> int | None:
    """The commitlog offset of a whole record the files hold past where crash recovery cut, None if none:
    the one right after the cut record (when its lengths still hold together) or the first of a later
    segment.  Only offsets from the store's end on count: below it lie the records a live store has written
    since the cut, over the cut ones, which are its own and not lost."""
    cut = store.recovery.valid_end
    end = store.max_commit_log_offset
    config = store.config
    segment_bytes = config.mapped_file_size_commit_log
    segments = SegmentFiles(config.commit_log_dir, segment_bytes)
    try:
        candidates = []
        damaged = _record_on_disk(segments, cut, check_crc=False)
        if damaged is not None:
            candidates.append(cut + damaged.store_size)
        candidates += [start for start in segments.starts if start > cut - cut % segment_bytes]
        for offset in candidates:
            if offset >= end and _record_on_disk(segments, offset, check_crc=True) is not None:
                return offset
        return None
    finally:
        segments.close()


def _check_crash_cut(store: MessageStore, out: _Collector) -> None:
    """After a crash recovery cuts the commitlog at the first record that fails its checks, taken for a torn
    tail.  A whole record on disk past it means the cut record was damaged, not torn: the cut loses what was
    written after it, as it does in RocketMQ 4.9.3, so the operator must hear of it before a recover."""
    rec = store.recovery
    after = _first_record_past_cut(store)
    if after is not None:
        out.add(ProblemKind.RECOVERY_TRUNCATES, _where_record(rec.valid_end),
                f"after a crash recovery cuts {rec.truncated_bytes} bytes at a record that fails its checks "
                f"({rec.first_invalid_reason or 'invalid record'}), but whole records follow it on disk (the "
                f"first at commitlog {after}): not a torn tail, the cut loses them")


def _check_dropped_entries(store: MessageStore, out: _Collector) -> None:
    """Consume-queue entries on disk that recovery dropped at open: the entry each queue's file holds just
    past what the opened store kept (one read a queue); only a queue that has one is read whole, privately,
    to say how many."""
    config = store.config
    root, segment_bytes = config.consume_queue_dir, config.consume_queue_file_bytes
    on_disk = ConsumeQueueTable(root, segment_bytes, writable=False)
    try:
        on_disk.load()  # maps the files, reads no entry
        for cq in on_disk:
            kept = store._queues.get(cq.topic, cq.queue_id)
            kept_end = kept.max_offset if kept is not None else cq.first_queue_offset_on_disk
            entry = _entry_on_disk(os.path.join(root, cq.topic, str(cq.queue_id)), segment_bytes, kept_end)
            if entry is None or entry[0] < 0 or entry[1] <= 0:
                continue  # nothing valid past what was kept: recovery dropped nothing here
            cq.recover()
            out.add(ProblemKind.RECOVERY_DROPS_CQ_ENTRIES, f"consumequeue/{cq.topic}/{cq.queue_id}#{kept_end}",
                    f"after a clean shutdown recovery drops queue offsets {kept_end}..{cq.max_offset - 1}: they "
                    f"point at commitlog {entry[0]} on, past the commitlog's end {store.max_commit_log_offset}")
    finally:
        on_disk.close()


def _check_store_directories(store: MessageStore, out: _Collector) -> None:
    """A file where commitlog/, consumequeue/ or index/ should be: a read-only open finds nothing there and
    the rest can look whole, but a broker (or ``store recover``) cannot create its files in it."""
    config = store.config
    for path in (config.commit_log_dir, config.consume_queue_dir, config.index_dir):
        if os.path.lexists(path) and not os.path.isdir(path):
            out.add(ProblemKind.NOT_A_DIRECTORY, path, "a file where the store keeps a directory")


def verify_store(store: MessageStore, *, max_problems: int = 1000, progress: Progress | None = None,
                 configured_topics: Collection[str] | None = None) -> VerifyReport:
    """Check commitlog, consume queues and index of an open *store* against each other; *progress* is
    called now and then with (phase, done, total): "commitlog" in bytes, then "index keys".
    *configured_topics*: the topics of the broker's topic table (config/topics.json), None for a store
    without one (embedded): with it a deleted topic's records are counted, not reported."""
    out = _Collector(max_problems)
    rec = store.recovery
    preview = RecoveryPreview(rec.abnormal, rec.start_segment, rec.valid_end, rec.truncated_bytes,
                              rec.records_checked, rec.first_invalid_reason)
    if rec.truncated_bytes and not rec.abnormal:
        out.add(ProblemKind.RECOVERY_TRUNCATES, _where_record(rec.valid_end),
                f"after a clean shutdown recovery cuts {rec.truncated_bytes} bytes: "
                f"{rec.first_invalid_reason or 'invalid record'}")
    if not rec.abnormal:
        _check_dropped_entries(store, out)
    elif rec.truncated_bytes:
        _check_crash_cut(store, out)
    _check_store_directories(store, out)
    recs, blanks = _walk_commitlog(store, out, progress)
    queue_count, entries, deleted = _check_queues(store, recs, out, configured_topics)
    index_keys = _check_index(store, recs, out, progress)
    _not_utf8_problems(recs, out)
    return VerifyReport(
        problems=tuple(out.items), problem_count=out.count, recovery_preview=preview,
        commit_log_min_offset=store.min_commit_log_offset, commit_log_max_offset=store.max_commit_log_offset,
        record_count=len(recs.offsets), blank_count=blanks, queue_count=queue_count, cq_entry_count=entries,
        index_key_count=index_keys, index_checked=store._index is not None, counts_by_kind=dict(out.by_kind),
        deleted_topic_records=deleted, properties_not_utf8=len(recs.not_utf8),
        properties_not_utf8_offsets=tuple(recs.not_utf8[:10]),  # walked in commitlog order
    )

