"""Recovery at open: find the valid end of the commitlog and bring consume queues and index in line.

Normal recovery (no abort file: the last close was clean) walks the last three segments and cuts after
the last valid record.  Abnormal recovery (abort file present: a crash) starts from the newest segment
whose first record is older than the checkpoint says is safe, re-dispatches every valid record from there
(the dispatcher's idempotency skips what was already built) and cuts the same way.  Either way consume
queue entries pointing past the cut are dropped.  A record is valid when it decodes whole and, with
``check_crc``, its body CRC matches.

Imports store pieces, never the facade.
"""

from __future__ import annotations

import logging
import mmap
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rocketstore.message.hashing import tags_code
from rocketstore.message.properties import parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    header_layout,
    store_timestamp_position,
)
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.dispatch import SCHEDULE_TOPIC, Dispatcher
from rocketstore.store.mapped_file import MappedFile
from rocketstore.store.recovery_scan import scan_chunk

__all__ = ["RecoveryReport", "recover", "scan_and_dispatch", "scan_valid_end", "validate_record"]

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">ii")
_CRC_AND_FLAG = struct.Struct(">i24xi")  # BODYCRC at +8 and SYSFLAG at +36, read from +8
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_BODY_AT = {0: 84, 0x10: 96, 0x20: 96, 0x30: 108}  # BODYLENGTH position by host-family bits
_LAYOUTS = {bits: header_layout(bool(bits & 0x10), bool(bits & 0x20)) for bits in (0, 0x10, 0x20, 0x30)}
#: records whose facts are collected before they are dispatched as one run
_FACTS_RUN = 8192


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    abnormal: bool
    start_segment: int
    valid_end: int
    truncated_bytes: int
    records_checked: int
    first_invalid_reason: str | None


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
    if q + 2 < end and mm[end - 1] == 0:
        # The body CRC does not cover topic and properties.  A properties string never ends in NUL, so a
        # record whose last byte is zero lost its end (a torn write into a zero-filled segment).
        return "INVALID", 0, "record ends in zero bytes (torn write)"
    if check_crc and zlib.crc32(mm[body_at + 4 : p]) & 0x7FFFFFFF != crc:
        return "INVALID", 0, "body CRC mismatch"
    return "MESSAGE", size, ""


def scan_valid_end(commitlog: CommitLog, start_index: int, check_crc: bool,
                   on_record: Callable[[MappedFile, int, int], None] | None = None,
                   progress: Callable[[int], None] | None = None) -> tuple[int, int, str | None]:
    """Walk records from segment *start_index*; returns (valid end offset, records, why it stopped)."""
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
            if on_record is not None:
                on_record(mf, pos, size)
            pos += size
            records += 1
            continue
        if kind == "BLANK":
            index += 1
            if progress is not None:
                progress(mf.size_bytes)
            if index >= len(files):
                return mf.start_offset + mf.size_bytes, records, None
            mf = files[index]
            pos = 0
            continue
        reason = why
        break
    if progress is not None:
        progress(mf.size_bytes)  # the segment the walk ended in counts as scanned too
    return mf.start_offset + pos, records, reason if (reason and reason != "no record magic") else None


def scan_and_dispatch(commitlog: CommitLog, start_index: int, check_crc: bool, dispatcher: Dispatcher,
                      progress: Callable[[int], None] | None = None) -> tuple[int, int, str | None]:
    """``scan_valid_end`` that also re-dispatches every valid record: the same checks as
    ``validate_record``, and from the same reads the facts ``Dispatcher.dispatch_facts`` takes, dispatched
    a run at a time (abnormal recovery walks every record of the store, so one decode per record and
    batched queue and index writes matter)."""
    files = commitlog.files.files
    if not files:
        return 0, 0, None
    records = 0
    index = start_index
    mf = files[index]
    pos = 0
    reason: str | None = None
    facts: list[tuple] = []  # type: ignore[type-arg]
    head = _HEAD
    crc32 = zlib.crc32
    topics: dict[bytes, str] = {}
    schedule = SCHEDULE_TOPIC
    while True:
        mm = mf.buffer
        limit = mf.size_bytes
        base = mf.start_offset
        chunked = True
        while True:
            if chunked:
                try:
                    got = scan_chunk(mm, pos, limit, base, check_crc, dispatcher.tags_code_of, topics)
                except UnicodeDecodeError:
                    got = None
                if got is None:
                    chunked = False  # the rest of this segment one record at a time
                    continue
                pos, chunk, reason = got
                dispatcher.dispatch_facts(chunk)
                records += len(chunk)
                if reason is None:
                    continue
                break
            if pos + 8 > limit:
                reason = "end of segment"
                break
            size, magic = head.unpack_from(mm, pos)
            if magic != MESSAGE_MAGIC:
                if magic == BLANK_MAGIC:
                    reason = "BLANK"
                elif magic == 0 and size == 0:
                    reason = "no record magic"
                else:
                    reason = f"bad magic {magic & 0xFFFFFFFF:#x}"
                break
            end = pos + size
            if size < MIN_RECORD_BYTES or end > limit:
                reason = f"size {size} does not fit"
                break
            sys_flag = _INT.unpack_from(mm, pos + 36)[0]
            layout = _LAYOUTS[sys_flag & 0x30]
            if pos + layout.size + 3 > end:
                reason = "body length does not fit"
                break
            (_, _, crc, queue_id, _, queue_offset, _, _, _, _, _, store_ts, _, _, _, _,
             body_len) = layout.unpack_from(mm, pos)
            body_at = pos + layout.size
            p = body_at + body_len
            if body_len < 0 or p + 3 > end:
                reason = "body length does not fit"
                break
            q = p + 1 + mm[p]
            if q + 2 > end or q + 2 + ((mm[q] << 8) | mm[q + 1]) != end or mm[q] & 0x80:
                reason = "lengths disagree with the record size"
                break
            if q + 2 < end and mm[end - 1] == 0:
                reason = "record ends in zero bytes (torn write)"
                break
            if check_crc and crc32(mm[body_at:p]) & 0x7FFFFFFF != crc:
                reason = "body CRC mismatch"
                break
            raw_topic = mm[p + 1 : q]
            topic = topics.get(raw_topic)
            try:
                if topic is None:
                    topic = raw_topic.decode("utf-8")
                    topics[raw_topic] = topic
                props = parse_properties(mm[q + 2 : end].decode("utf-8")) if q + 2 < end else {}
            except UnicodeDecodeError:
                # let the dispatcher's own decoder report it, in order
                dispatcher.dispatch_facts(facts)
                facts = []
                dispatcher.dispatch_record(base + pos, mm, pos)
                pos = end
                records += 1
                continue
            if topic == schedule:
                code = dispatcher.tags_code_of(topic, props, store_ts)
            else:
                tags = props.get("TAGS")
                code = tags_code(tags) if tags else 0
            facts.append((base + pos, size, topic, queue_id, queue_offset, sys_flag, store_ts, code,
                          props.get("UNIQ_KEY"), props.get("KEYS")))
            pos = end
            records += 1
            if len(facts) >= _FACTS_RUN:
                dispatcher.dispatch_facts(facts)
                facts = []
        dispatcher.dispatch_facts(facts)
        facts = []
        if reason == "BLANK":
            reason = None
            index += 1
            if progress is not None:
                progress(mf.size_bytes)
            if index >= len(files):
                return mf.start_offset + mf.size_bytes, records, None
            mf = files[index]
            pos = 0
            continue
        break
    if progress is not None:
        progress(mf.size_bytes)
    return mf.start_offset + pos, records, reason if (reason and reason != "no record magic") else None


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


def _used_bytes_after(buffer: mmap.mmap, pos: int, chunk_bytes: int = 1 << 20) -> int:
    """``len(buffer[pos:].rstrip(b"\\0"))`` without copying the tail: a preallocated segment's tail is
    mostly zeros (up to a whole 1 GiB segment), so scan it backwards a chunk at a time through a numpy view."""
    view = np.frombuffer(buffer, dtype=np.uint8)
    chunk = view[:0]
    try:
        stop = len(view)
        while stop > pos:
            start = max(pos, stop - chunk_bytes)
            chunk = view[start:stop]
            if chunk.any():
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
        cq.recover()
    max_phy_in_queues = queues.max_physic_offset()
    files = commitlog.files.files
    if not files:
        for cq in list(queues):
            cq.destroy()
        queues.queues = {}
        return RecoveryReport(abnormal, 0, 0, 0, 0, None)
    if not abnormal:
        start = max(0, len(files) - 3)
        on_record = None
    else:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            if _matches_checkpoint(files[i], checkpoint, index_safe):
                start = i
                break

        # Entries for records from the start segment on are rebuilt from the commitlog: they may have been
        # written back only in part (a torn page can leave an entry with a plausible but wrong size).
        # Entries before it were durable when the checkpoint was written.
        rebuild_from = files[start].start_offset
        for cq in queues:
            if cq.max_physic_offset > rebuild_from:
                cq.truncate_dirty(rebuild_from)

    if abnormal:
        end, records, reason = scan_and_dispatch(commitlog, start, check_crc, dispatcher, progress)
    else:
        end, records, reason = scan_valid_end(commitlog, start, check_crc, on_record, progress)
    # bytes after `end` that held anything: what the cut discards
    truncated = 0
    for mf in commitlog.files.files:
        if mf.end_offset > end:
            truncated += _used_bytes_after(mf.buffer, max(0, end - mf.start_offset))
    commitlog.files.set_positions(end)
    commitlog.files.truncate_after(end)
    if max_phy_in_queues >= end:
        for cq in queues:
            cq.truncate_dirty(end)
    if dispatcher.index is not None:
        dispatcher.index.truncate_past(end)
    if reason:
        log.warning("recovery stopped at commitlog offset %d: %s", end, reason)
    return RecoveryReport(abnormal, files[start].start_offset if files else 0, end, truncated, records, reason)
