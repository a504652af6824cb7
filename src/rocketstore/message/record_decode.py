"""A pull or query body decoded: every record of it, back to back, as StoredMessage values.

Owns :func:`decode_records`, the fast path a consumer takes through a pull body: it reads an IPv4 record's
fixed part with one struct call, and a run of records of one layout (one topic and producer host, equal body
and properties lengths) with one ``iter_unpack``, and hands any other record to
:func:`rocketstore.message.record.decode_record`, so records and errors are the same as that function's in a
loop.  The byte layout is :mod:`rocketstore.message.record`'s, whose private layout helpers this module
shares; it imports only that module, the errors and host modules of this package, and numpy.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, Final, NamedTuple

import numpy as np

from rocketstore.errors import MessageError
from rocketstore.message.host import HostAddress
from rocketstore.message.properties import HasTagsAndKeys
from rocketstore.message.record import (
    _BORN_HOST_POS,
    _CACHE_LIMIT,
    _HEADER_V4,
    _HOSTS,
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    SYS_FLAG_POS,
    StoredMessage,
    _host,
    decode_record,
    store_timestamp_position,
    v4_run_formats,
)

__all__ = ["decode_records"]

#: Decoded topic names, shared by every record: a pull answers dozens of records of one topic (host
#: addresses are cached in record.py, which decode_record shares).
_TOPIC_NAMES: dict[bytes, str] = {}


class _StoredMessageSlots(HasTagsAndKeys):
    """StoredMessage's slots without its frozen ``__setattr__``: decode_records fills one with plain
    attribute stores and then sets its ``__class__`` to StoredMessage, which CPython allows because the two
    slot layouts (and bases) are the same.  About 3x cheaper than 16 slot-descriptor calls and 5x cheaper than the
    dataclass's ``__init__`` (which looks up ``object.__setattr__`` per field); the result is an ordinary
    StoredMessage (equal, hashable and frozen like any other)."""

    __slots__ = StoredMessage.__slots__


def _stored_message(size: int, crc: int, queue_id: int, flag: int, queue_offset: int, physical_offset: int,
                    sys_flag: int, born_ts: int, born_host: HostAddress, store_ts: int, store_host: HostAddress,
                    reconsume: int, prepared: int, body: bytes, topic: str, props: str) -> StoredMessage:
    """``StoredMessage(...)`` for already-checked fields (see :class:`_StoredMessageSlots`)."""
    m: Any = _new_object(_StoredMessageSlots)
    m.store_size = size
    m.body_crc = crc
    m.queue_id = queue_id
    m.flag = flag
    m.queue_offset = queue_offset
    m.commit_log_offset = physical_offset
    m.sys_flag = sys_flag
    m.born_timestamp = born_ts
    m.born_host = born_host
    m.store_timestamp = store_ts
    m.store_host = store_host
    m.reconsume_times = reconsume
    m.prepared_transaction_offset = prepared
    m.body = body
    m.topic = topic
    m.properties_string = props
    m.__class__ = StoredMessage
    return m  # type: ignore[no-any-return]


_new_object = object.__new__
if len(dataclasses.fields(StoredMessage)) != 16:  # the constructors above must set every field
    raise AssertionError(f"StoredMessage fields changed: {StoredMessage.__slots__}")


#: A pull body is mostly runs of records of one layout: one topic from one producer host, bodies and
#: properties of equal lengths, so equal record sizes.  decode_records decodes the first record of a run on its
#: own, checks in numpy that the records after it hold the same bytes wherever the layout is fixed (size,
#: magic, sysFlag, hosts, body length, topic and properties lengths), and unpacks the rest of the run with one
#: ``iter_unpack`` of just the fields that differ.  Runs shorter than this are not worth the numpy calls.
_RUN_MIN_RECORDS: Final = 8
_RUN_FIRST_CHECK: Final = 16  # records checked in the first numpy step; each further step checks 4x more
#: After a run shorter than _RUN_MIN_RECORDS, the next attempt waits twice as many records as the last wait,
#: up to this many: an attempt that gets past the first record costs ~9 us in numpy, as much as decoding five
#: records one by one, and records of equal size from producers that take turns in pairs would otherwise pay
#: it at every other record.
_RUN_MAX_WAIT_RECORDS: Final = 256
_BODY_POS_V4: Final = _HEADER_V4.size  # 88: BODY of a record between IPv4 hosts, BODYLENGTH before it
_BODY_LENGTH_POS_V4: Final = _BODY_POS_V4 - 4
_STORE_HOST_POS_V4: Final = store_timestamp_position(0) + 8


class _RunLayout(NamedTuple):
    """How to read a run of IPv4 records with one body, topic and properties length."""

    #: byte positions at which every record of the run equals the first
    fixed: np.ndarray
    #: the same bytes as a few bytes fields: comparing two records without numpy
    fixed_fields: struct.Struct
    #: CRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, BORNTIMESTAMP, STORETIMESTAMP, RECONSUMETIMES,
    #: PREPAREDOFFSET, BODY and PROPERTIES of one record (what the fixed bytes do not hold)
    rows: struct.Struct


_RUN_LAYOUTS: dict[tuple[int, int, int], _RunLayout] = {}


def _run_layout(body_len: int, topic_len: int, props_len: int) -> _RunLayout:
    key = (body_len, topic_len, props_len)
    layout = _RUN_LAYOUTS.get(key)
    if layout is None:
        lengths = _BODY_POS_V4 + body_len  # TOPICLENGTH, TOPIC, PROPLENGTH
        fixed = np.r_[0:8, SYS_FLAG_POS : SYS_FLAG_POS + 4, _BORN_HOST_POS : _BORN_HOST_POS + 8,
                      _STORE_HOST_POS_V4 : _STORE_HOST_POS_V4 + 8, _BODY_LENGTH_POS_V4:_BODY_POS_V4,
                      lengths : lengths + 3 + topic_len]
        shared, differing = v4_run_formats(body_len, topic_len, props_len)
        fixed_fields = struct.Struct(shared)
        rows = struct.Struct(differing)
        layout = _RunLayout(fixed, fixed_fields, rows)
        if len(_RUN_LAYOUTS) >= _CACHE_LIMIT:
            _RUN_LAYOUTS.clear()
        _RUN_LAYOUTS[key] = layout
    return layout


def _run_length(buf: bytes, start: int, size: int, max_count: int, layout: _RunLayout) -> int:
    """How many of the *max_count* records of *size* bytes from *start* hold the first one's bytes at the
    layout's fixed positions (the first included); checked in growing steps, so a short run costs little."""
    fields = layout.fixed_fields.unpack_from
    if fields(buf, start + size) != fields(buf, start):
        return 1  # the usual end of a run, found without numpy
    fixed = layout.fixed
    records = np.frombuffer(buf, np.uint8, max_count * size, start).reshape(max_count, size)
    first = records[0, fixed]
    count = 2
    step = _RUN_FIRST_CHECK
    while count < max_count:
        stop = min(count + step, max_count)
        same = (records[count:stop, fixed] == first).all(1)
        if not same.all():
            return count + int(same.argmin())
        count = stop
        step *= 4
    return count


def _decode_run(rows: struct.Struct, view: memoryview, size: int, sys_flag: int, born_host: HostAddress,
                store_host: HostAddress, topic: str, out: list[StoredMessage]) -> int:
    """Append the records of *view*, all of *rows*' layout and sharing the given fields, to *out*; returns how
    many, stopping before a record whose properties are not UTF-8 (the caller decodes it alone: see
    decode_record)."""
    count = len(out)
    append = out.append
    new = _new_object
    slots = _StoredMessageSlots
    stored = StoredMessage
    m: Any
    try:
        for (crc, queue_id, flag, queue_offset, physical_offset, born_ts, store_ts, reconsume, prepared, body,
             raw_props) in rows.iter_unpack(view):
            props = raw_props.decode("utf-8")
            m = new(slots)  # _stored_message inlined: calling it per record made a run ~13 % slower
            m.store_size = size
            m.body_crc = crc
            m.queue_id = queue_id
            m.flag = flag
            m.queue_offset = queue_offset
            m.commit_log_offset = physical_offset
            m.sys_flag = sys_flag
            m.born_timestamp = born_ts
            m.born_host = born_host
            m.store_timestamp = store_ts
            m.store_host = store_host
            m.reconsume_times = reconsume
            m.prepared_transaction_offset = prepared
            m.body = body
            m.topic = topic
            m.properties_string = props
            m.__class__ = stored
            append(m)
    except UnicodeDecodeError:
        pass  # the caller decodes that record on its own, which says what is wrong with it
    return len(out) - count


def decode_records(buf: bytes | bytearray | memoryview, pos: int = 0,
                   end: int | None = None) -> list[StoredMessage]:
    """Every record of *buf* from *pos* to *end*, back to back (a pull or query body).

    The same records and the same MessageDecodeError as :func:`decode_record` called in a loop: an IPv4
    record whose fixed part unpacks with one struct call and whose fields all check out is built here, and so
    is the run of records after it that share its layout (see ``_RUN_MIN_RECORDS``); any other record (IPv6
    hosts, or one that fails a check) goes through :func:`decode_record`, which says what is wrong with it.
    """
    if type(buf) is not bytes:
        buf = bytes(buf)  # one copy, so that every slice below is already the bytes it needs
    if end is None:
        end = len(buf)
    if pos < 0 and pos < end:
        decode_record(buf, pos, limit=end)  # raises, as for any negative position
    out: list[StoredMessage] = []
    append = out.append
    unpack = _HEADER_V4.unpack_from
    topics = _TOPIC_NAMES
    hosts = _HOSTS
    last_topic_len, last_raw_topic, last_topic = -1, b"", ""
    last_born = last_store = None
    last_born_ip = last_store_ip = b""
    last_born_port = last_store_port = -1
    run_wait = 0  # records to skip before the next run attempt, see _RUN_MAX_WAIT_RECORDS
    next_run_pos = pos
    while pos < end:
        if pos + 88 > end:
            m = decode_record(buf, pos, limit=end)  # raises: no record this short is whole
            append(m)
            pos += m.store_size
            continue
        (size, magic, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts, born_ip, born_port,
         store_ts, store_ip, store_port, reconsume, prepared, body_len) = unpack(buf, pos)
        rec_end = pos + size
        p = pos + 88 + body_len
        if (magic != MESSAGE_MAGIC or sys_flag & 0x30 or size < MIN_RECORD_BYTES or rec_end > end
                or body_len < 0 or p + 3 > rec_end):
            m = decode_record(buf, pos, limit=end)
            append(m)
            pos += m.store_size
            continue
        topic_len = buf[p]
        q = p + 1 + topic_len
        if topic_len > 127 or q + 2 > rec_end or buf[q] & 0x80 or q + 2 + ((buf[q] << 8) | buf[q + 1]) != rec_end:
            m = decode_record(buf, pos, limit=end)  # raises: topic / properties length
            append(m)
            pos += m.store_size
            continue
        # consecutive records mostly share their topic and hosts: compare with the last ones before any lookup
        topic: str | None
        if topic_len == last_topic_len and buf.startswith(last_raw_topic, p + 1):
            topic = last_topic
        else:
            last_raw_topic = buf[p + 1 : q]
            topic = topics.get(last_raw_topic)
        born_host = last_born if born_ip == last_born_ip and born_port == last_born_port else hosts.get(
            (born_ip, born_port))
        store_host = last_store if store_ip == last_store_ip and store_port == last_store_port else hosts.get(
            (store_ip, store_port))
        try:
            if topic is None:
                topic = last_raw_topic.decode("utf-8")
                if len(topics) >= _CACHE_LIMIT:
                    topics.clear()
                topics[last_raw_topic] = topic
            props = buf[q + 2 : rec_end].decode("utf-8")
            if born_host is None:
                born_host = _host(born_ip, born_port)
            if store_host is None:
                store_host = _host(store_ip, store_port)
        except (UnicodeDecodeError, MessageError):
            last_topic_len = -1
            # not UTF-8 (read as 4.9.3 reads it) or a host out of range (raises): the one-record path decides
            m = decode_record(buf, pos, limit=end)
            append(m)
            pos += m.store_size
            continue
        last_topic_len, last_topic = topic_len, topic
        last_born, last_born_ip, last_born_port = born_host, born_ip, born_port
        last_store, last_store_ip, last_store_port = store_host, store_ip, store_port
        append(_stored_message(size, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts,
                               born_host, store_ts, store_host, reconsume, prepared, buf[pos + 88 : p],
                               topic, props))
        if pos >= next_run_pos and end - rec_end >= size * _RUN_MIN_RECORDS and buf[rec_end + 3] == size & 0xFF:
            layout = _run_layout(body_len, topic_len, rec_end - q - 2)  # a run may follow
            count = _run_length(buf, pos, size, (end - pos) // size, layout) - 1
            if count:
                with memoryview(buf) as view:
                    count = _decode_run(layout.rows, view[rec_end : rec_end + count * size], size, sys_flag,
                                        born_host, store_host, topic, out)
                rec_end += count * size
            if count + 1 < _RUN_MIN_RECORDS:
                run_wait = min(2 * run_wait + 1, _RUN_MAX_WAIT_RECORDS)
                next_run_pos = rec_end + run_wait * size
            else:
                run_wait = 0
        pos = rec_end
    return out
