"""Abnormal recovery's record walk, a chunk of records at a time with numpy.

Python follows the TOTALSIZE chain (the only step that must be sequential); the fixed header fields, the
length checks of ``recovery.validate_record`` and the positions of topic and properties are then read for
the whole chunk with a few numpy gathers.  What stays per record in Python is the body CRC (zlib, on a
memoryview: no copy), the topic and the properties string.  A chunk with an IPv6 host record is left to the
record-at-a-time walk in recovery.py, which applies the same checks.

Imports numpy and record layout facts only; recovery.py calls it.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Callable

import numpy as np

from rocketstore.message.columnar import SCAN_COLUMNS, header_dtype
from rocketstore.message.hashing import tags_code
from rocketstore.message.properties import parse_properties
from rocketstore.message.record import BLANK_MAGIC, MESSAGE_MAGIC, MIN_RECORD_BYTES
from rocketstore.store.dispatch import SCHEDULE_TOPIC

__all__ = ["CHUNK_RECORDS", "scan_chunk"]

#: records per chunk: bounds the gather's temporaries (~6 MB) and is the dispatch run length
CHUNK_RECORDS = 8192
_HEAD = struct.Struct(">ii")
#: TOTALSIZE .. BODYLENGTH of a record with IPv4 born and store hosts (positions from record.py's layout)
_V4 = header_dtype(SCAN_COLUMNS)
_V4_BYTES = _V4.itemsize
_SPAN = np.arange(_V4_BYTES, dtype=np.int64)


def _stop_reason(size: int, magic: int) -> str:
    if magic == BLANK_MAGIC:
        return "BLANK"
    if magic != MESSAGE_MAGIC:
        return "no record magic" if magic == 0 and size == 0 else f"bad magic {magic & 0xFFFFFFFF:#x}"
    return f"size {size} does not fit"


def scan_chunk(mm: mmap.mmap, pos: int, limit: int, base: int, check_crc: bool,
               schedule_code: Callable[[str, dict[str, str], int], int],
               topics: dict[bytes, str]) -> tuple[int, list[tuple], str | None] | None:  # type: ignore[type-arg]
    """Check up to CHUNK_RECORDS records from *pos* of one segment (*base* its commitlog offset).

    Returns (position after the last valid record, their dispatch facts, why the walk stopped or None when
    the chunk simply filled), or None when the chunk holds an IPv6-host record (walk it one by one).
    Raises UnicodeDecodeError for a topic or properties string that is not UTF-8 (nothing consumed).
    """
    positions: list[int] = []
    append = positions.append
    unpack = _HEAD.unpack_from
    reason: str | None = None
    p = pos
    while len(positions) < CHUNK_RECORDS:
        if p + 8 > limit:
            reason = "end of segment"
            break
        size, magic = unpack(mm, p)
        if magic != MESSAGE_MAGIC or size < MIN_RECORD_BYTES or p + size > limit:
            reason = _stop_reason(size, magic)
            break
        append(p)
        p += size
    if not positions:
        return pos, [], reason
    arr = np.frombuffer(mm, dtype=np.uint8)
    try:
        starts = np.asarray(positions, dtype=np.int64)
        if (arr[starts + 39] & 0x30).any():  # SYSFLAG's host-family bits (its low byte)
            return None
        head = arr[starts[:, None] + _SPAN].view(_V4).ravel()
        ends = starts + head["size"].astype(np.int64)
        body_len = head["body_len"].astype(np.int64)
        body_end = starts + _V4_BYTES + body_len
        body_ok = (body_len >= 0) & (body_end + 3 <= ends)
        safe_body_end = np.where(body_ok, body_end, starts)
        props_at = safe_body_end + 1 + arr[safe_body_end]
        lengths_ok = props_at + 2 <= ends
        safe_props_at = np.where(body_ok & lengths_ok, props_at, starts)
        high = arr[safe_props_at]
        props_len = high.astype(np.int64) * 256 + arr[safe_props_at + 1]
        lengths_ok &= (high < 128) & (safe_props_at + 2 + props_len == ends)
        torn = (safe_props_at + 2 < ends) & (arr[ends - 1] == 0)
        valid = body_ok & lengths_ok & ~torn
        n = len(positions)
        if not valid.all():
            k = int(np.argmin(valid))
            reason = ("body length does not fit" if not body_ok[k] else
                      "lengths disagree with the record size" if not lengths_ok[k] else
                      "record ends in zero bytes (torn write)")
            n = k
        # one copy of the chunk's bytes: slicing bytes is several times cheaper than slicing the mapping
        data = mm[pos:p]
        rel_start_l = (starts[:n] - pos).tolist()
        end_l = (ends[:n] - pos).tolist()
        body_at_l = (starts[:n] + (_V4_BYTES - pos)).tolist()
        body_end_l = (body_end[:n] - pos).tolist()
        props_at_l = (props_at[:n] - pos).tolist()
        if check_crc:
            crc_l = head["crc"][:n].tolist()
            mv = memoryview(data)
            try:
                crc32 = zlib.crc32
                for i in range(n):
                    if crc32(mv[body_at_l[i] : body_end_l[i]]) & 0x7FFFFFFF != crc_l[i]:
                        n = i
                        reason = "body CRC mismatch"
                        break
            finally:
                mv.release()
        queue_id_l = head["queue_id"][:n].tolist()
        queue_offset_l = head["queue_offset"][:n].tolist()
        sys_flag_l = head["sys_flag"][:n].tolist()
        ts_l = head["store_timestamp"][:n].tolist()
    finally:
        del arr
    facts: list[tuple] = []  # type: ignore[type-arg]
    fact = facts.append
    base += pos
    for i in range(n):
        start = rel_start_l[i]
        end = end_l[i]
        q = props_at_l[i]
        raw_topic = data[body_end_l[i] + 1 : q]
        topic = topics.get(raw_topic)
        if topic is None:
            topic = raw_topic.decode("utf-8")
            if len(topics) < 4096:
                topics[raw_topic] = topic
        props = parse_properties(data[q + 2 : end].decode("utf-8")) if q + 2 < end else {}
        if topic == SCHEDULE_TOPIC:
            code = schedule_code(topic, props, ts_l[i])
        else:
            tags = props.get("TAGS")
            code = tags_code(tags) if tags else 0
        fact((base + start, end - start, topic, queue_id_l[i], queue_offset_l[i], sys_flag_l[i], ts_l[i], code,
              props.get("UNIQ_KEY"), props.get("KEYS")))
    return (positions[n] if n < len(positions) else p), facts, reason
