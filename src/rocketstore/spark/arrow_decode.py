"""Commitlog records -> one Arrow record batch of the ``rocketmq-store`` schema, column by column.

The decoding is :mod:`rocketstore.message.columnar` (numpy); this module wraps its arrays as Arrow
buffers (``Array.from_buffers``), so no column is built by a Python loop over records.  Only the columns
the schema asks for are computed.

Variable-length columns (body, topic, properties, property names and values) are cut out of their buffer
by Arrow's ``take``: the buffer, zero-copy, as a string array of alternate gaps and wanted ranges (offsets
built with numpy), of which every other value is taken; Arrow copies them in C++.  Measured per 4,096
records: 1 KiB bodies 0.24 ms, 20k property values of ~10 bytes 0.21 ms (0.56 ms for a numpy gather).
Ranges that do not follow one another (the values of a repeated property name) fall back to *view*
arrays (``binary_view`` cells pointing into the buffer, cast to plain binary/string) for long values and
to a numpy gather for short ones.

Properties strings are split by :func:`rocketstore.message.columnar_properties.split_properties`.

Topics and properties strings are checked for UTF-8 by Arrow's full validation of the string column (one
C++ pass); a column holding bytes that are not UTF-8 is rebuilt with them read as ``decode_record`` reads
them (4.9.3's ``new String(bytes, UTF_8)``).

With *check_crc*, each body that becomes a row is checked against the CRC its record holds (a byte changed
on disk after the record was stored: recovery re-checks only the commitlog's tail).  zlib has no batched
CRC, so that is one ``zlib.crc32`` call per body over a memoryview slice (no copy): measured per 4,096
bodies of 1 KiB, 2.6-3.3 ms against 2.1 ms for the calls alone on one 1 KiB ``bytes``.

Imports pyarrow and numpy; only the Spark source imports this module.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketstore.errors import MessageDecodeError
from rocketstore.message.columnar import RecordColumns, decode_columns, gather, host_texts, message_ids
from rocketstore.message.columnar_properties import (
    PropertyColumns,
    find_pairs,
    repeated_names,
    split_properties,
)
from rocketstore.message.inflate import inflate_body
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import SysFlag

__all__ = ["micros_from_ms", "record_batch", "record_batches"]

_MICROS_PER_MS = 1000
#: the milliseconds whose microseconds fit Arrow's int64 timestamp; a record's born or store time is any Java
#: long (a producer sets bornTimestamp), and a larger one saturates instead of wrapping to around 1970
_MS_LIMITS = (-(2**63 // _MICROS_PER_MS), (2**63 - 1) // _MICROS_PER_MS)


def micros_from_ms(ms: np.ndarray) -> np.ndarray:
    """Java millisecond times (int64) as the microseconds of Arrow's timestamp type, saturated at its range."""
    return np.clip(ms, *_MS_LIMITS) * _MICROS_PER_MS
_PROPERTY_COLUMNS = {"tags": PropertyName.TAGS, "keys": PropertyName.KEYS, "uniqKey": PropertyName.UNIQ_KEY}


_STRING = pa.string()
_BINARY = pa.binary()


def _string_array(offsets: np.ndarray, data: np.ndarray, typ: pa.DataType = _STRING,
                   valid: np.ndarray | None = None) -> pa.Array:
    n = len(offsets) - 1
    bitmap = None
    nulls = 0
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        nulls = int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
                                 null_count=nulls)


def _checked_utf8(array: pa.Array) -> pa.Array:
    """*array* after Arrow's full UTF-8 validation; where a value is not UTF-8 (the error path only), the
    array again with every value read as 4.9.3's MessageDecoder reads it (``new String(bytes, UTF_8)``,
    U+FFFD per malformed sequence), as the store's other readers do."""
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        values = array.cast(_BINARY).to_pylist()
        return pa.array([None if value is None else java_utf8(value) for value in values], array.type)
    return array


_INLINE = 12  # a view value of at most 12 bytes is stored inside its cell
_SPAN = np.arange(_INLINE, dtype=np.int32)
#: mean value length up to which a numpy gather beats views + cast (measured: 20k names of ~5 bytes,
#: 0.4 ms against 2 ms; 4k bodies of 1 KiB, 60 ms against 2 ms)
_GATHER_MAX_MEAN = 32


def _in_order(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether the ranges lie inside *buf* one after another, without overlapping (gaps allowed)."""
    if not len(starts):
        return True
    return (int(starts[0]) >= 0 and int(starts[-1] + lengths[-1]) <= len(buf)
            and bool((starts[1:] >= starts[:-1] + lengths[:-1]).all()))


def _taken(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, typ: pa.DataType,
           valid: np.ndarray | None) -> pa.Array:
    """Ranges in order, by Arrow's take: *buf* cut into alternate gap and range values (offsets only,
    zero-copy), then every other value taken (one C++ copy).  Measured per 4,096 records: bodies of 1 KiB
    0.24 ms (views + cast 0.25), properties strings of ~90 bytes 0.06 ms (0.14), 20k property values of
    ~10 bytes 0.21 ms (numpy gather 0.56)."""
    n = len(starts)
    cuts = np.empty(2 * n + 2, dtype=np.int32)
    cuts[0] = 0
    cuts[1:-1:2] = starts
    cuts[2:-1:2] = starts + lengths
    cuts[-1] = len(buf)
    pieces = pa.Array.from_buffers(typ, 2 * n + 1, [None, pa.py_buffer(cuts), pa.py_buffer(buf)])
    index = np.arange(1, 2 * n, 2, dtype=np.int64)
    return pieces.take(pa.array(index, mask=None if valid is None or valid.all() else ~valid))


def _ranges(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, typ: pa.DataType = _BINARY,
            valid: np.ndarray | None = None) -> pa.Array:
    """``buf[starts[i] : starts[i] + lengths[i]]`` as an Arrow binary or string array of type *typ*."""
    n = len(starts)
    if len(buf) < 1 << 31 and _in_order(buf, starts, lengths):
        return _taken(buf, starts, lengths, typ, valid)
    # ranges out of order (values of a repeated property name) or a huge buffer (offsets are int32)
    if len(buf) >= 1 << 31 or int(lengths.sum()) <= _GATHER_MAX_MEAN * n:
        # short values (names, tags, keys) or a huge buffer (view offsets are int32): a numpy gather
        offsets, data = gather(buf, starts, lengths)
        return _string_array(offsets, data, typ, valid)
    cells = np.zeros((n, 4), dtype=np.int32)
    cells[:, 0] = lengths
    cells[:, 3] = starts
    raw = cells.view(np.uint8).reshape(n, 16)
    if n and len(buf):
        short = lengths <= _INLINE
        all_short = bool(short.all())
        width = _INLINE if short.any() else 4
        index = starts.astype(np.int32)[:, None] + _SPAN[:width]
        if int(starts.max()) + width > len(buf):
            np.minimum(index, len(buf) - 1, out=index)
        head = buf[index]
        if width == _INLINE:
            head *= _SPAN[None, :] < lengths[:, None]  # bytes past a short value's end must be zero
        if all_short:
            raw[:, 4:16] = head
        else:
            raw[:, 4:8] = head[:, :4]
            if width == _INLINE:
                raw[short, 4:16] = head[short]
    bitmap = None
    nulls = 0
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        nulls = int(n - np.count_nonzero(valid))
    view_type = pa.string_view() if typ == pa.string() else pa.binary_view()
    views = pa.Array.from_buffers(view_type, n, [bitmap, pa.py_buffer(cells), pa.py_buffer(buf)],
                                  null_count=nulls)
    return views.cast(typ)




class _Decoded:
    """The columns of one batch, each computed on first use."""

    def __init__(self, cols: RecordColumns, queue_offsets: np.ndarray, include_body: bool,
                 max_body_bytes: int | None = None) -> None:
        self.cols = cols
        self.queue_offsets = queue_offsets
        self.include_body = include_body
        #: inflated bodies past this many bytes make the body column chunked (record_batches cuts there)
        self.max_body_bytes = max_body_bytes
        self._props: PropertyColumns | None = None
        self._repeated: tuple[list[bytes], np.ndarray] | None = None
        self._columns: dict[tuple[str, pa.DataType], pa.Array | pa.ChunkedArray] = {}
        self._values: pa.Array | None = None

    @property
    def props(self) -> PropertyColumns:
        if self._props is None:
            c = self.cols
            # built as string without a check, then checked once (a cast from binary would check twice)
            strings = _checked_utf8(_ranges(c.buf, c.properties_start, c.properties_length, _STRING))
            offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)[: len(c) + 1].astype(np.int64)
            data = np.frombuffer(strings.buffers()[2], dtype=np.uint8) if strings.buffers()[2] is not None \
                else np.zeros(0, dtype=np.uint8)
            self._props = split_properties(data, offsets)
            self._repeated = repeated_names(self._props)
        return self._props

    @property
    def values(self) -> pa.Array:
        """Every kept property value, pair after pair."""
        if self._values is None:
            p = self.props
            self._values = _ranges(p.data, p.value_start, p.value_length, _STRING)
        return self._values

    @property
    def names(self) -> pa.Array:
        """Every kept property name, pair after pair (when every record has the same names, the names
        once and taken from them)."""
        p = self.props
        if self._repeated is None:
            return _ranges(p.data, p.name_start, p.name_length, _STRING)
        texts = self._repeated[0]
        rows = len(p.pair_offsets) - 1
        lengths = np.array([len(t) for t in texts], dtype=np.int64)
        # the names' bytes once per record, end to end: numpy tiles them (0.02 ms for 20k names; take 0.14)
        firsts = np.zeros(len(texts), dtype=np.int64)
        np.cumsum(lengths[:-1], out=firsts[1:])
        offsets = np.empty(rows * len(texts) + 1, dtype=np.int64)
        per_row = int(lengths.sum())
        offsets[:-1] = (np.arange(rows, dtype=np.int64)[:, None] * per_row + firsts).reshape(-1)
        offsets[-1] = rows * per_row
        data = np.tile(np.frombuffer(b"".join(texts), dtype=np.uint8), rows)
        return _string_array(offsets, data)

    def property_values(self, key: str) -> pa.Array:
        """The value of property *key* per record, null where a record has none."""
        p = self.props
        if self._repeated is None:
            pair = find_pairs(p, key)
            return self.values.take(pa.array(pair, mask=pair < 0))
        # every record has the same names in the same order: the key's pair is at the same place in each
        texts = self._repeated[0]
        rows = len(p.pair_offsets) - 1
        raw = key.encode("utf-8")
        if raw not in texts:
            return pa.nulls(rows, _STRING)
        return self.values.take(pa.array(np.arange(texts.index(raw), rows * len(texts), len(texts), dtype=np.int64)))

    def column(self, name: str, typ: pa.DataType) -> pa.Array | pa.ChunkedArray:
        key = (name, typ)
        done = self._columns.get(key)
        if done is None:
            done = self._columns[key] = self._build(name, typ)
        return done

    def _build(self, name: str, typ: pa.DataType) -> pa.Array | pa.ChunkedArray:
        c = self.cols
        n = len(c)
        if name == "topic":
            return _checked_utf8(_ranges(c.buf, c.topic_start, c.topic_length, typ))
        if name == "queueId":
            return pa.array(c.queue_id.astype(np.int32), typ)
        if name == "queueOffset":
            return pa.array(self.queue_offsets.astype(np.int64), typ)
        if name == "commitLogOffset":
            return pa.array(c.commit_log_offset, typ)
        if name == "msgId":
            return _string_array(*message_ids(c), typ)
        if name == "body":
            if not self.include_body:
                return pa.nulls(n, typ)
            return _inflated(_ranges(c.buf, c.body_start, c.body_length, typ), c, self.max_body_bytes)
        if name in _PROPERTY_COLUMNS:
            # a value of the properties map, taken from it (Arrow's take copies in C++)
            return self.property_values(_PROPERTY_COLUMNS[name])
        if name == "properties":
            p = self.props
            arr = pa.MapArray.from_arrays(pa.array(p.pair_offsets.astype(np.int32)), self.names, self.values)
            return arr if arr.type.equals(typ) else arr.cast(typ)
        if name in ("bornTimestamp", "storeTimestamp"):
            ms = c.born_timestamp if name == "bornTimestamp" else c.store_timestamp
            return pa.array(micros_from_ms(ms), pa.int64()).view(typ)
        if name in ("bornHost", "storeHost"):
            born = name == "bornHost"
            texts, index = host_texts(c.born_ip if born else c.store_ip, c.born_port if born else c.store_port,
                                      c.born_v6 if born else c.store_v6)
            if len(texts) == 1:  # the usual case: one host for the whole batch
                return pa.repeat(pa.scalar(texts[0], typ), n)
            return pa.array(texts, typ).take(pa.array(index))
        if name == "sysFlag":
            return pa.array(c.sys_flag.astype(np.int32), typ)
        if name == "flag":
            return pa.array(c.flag.astype(np.int32), typ)
        if name == "reconsumeTimes":
            return pa.array(c.reconsume_times.astype(np.int32), typ)
        raise KeyError(name)


def _inflated(bodies: pa.Array, c: RecordColumns, max_bytes: int | None = None) -> pa.Array | pa.ChunkedArray:
    """*bodies* with those of compressed records (sysFlag bit 0) inflated, as 4.9.3's MessageDecoder gives
    them to a consumer (and the client's pull does); a body that does not inflate is a MessageDecodeError at
    its record's position.

    The records were cut into chunks by their stored size, and a few KiB of deflated body may inflate to
    4 MiB: with *max_bytes*, bodies adding up to more come back as a chunked array of pieces of at most
    that many bytes (or one record), so that no batch outgrows its budget nor Arrow's 2 GiB of binary."""
    compressed = np.flatnonzero(c.sys_flag & SysFlag.COMPRESSED)
    if not len(compressed):
        return bodies
    values = bodies.to_pylist()
    for i in compressed.tolist():
        try:
            values[i] = inflate_body(values[i])
        except zlib.error as exc:
            raise MessageDecodeError(f"compressed body does not inflate: {exc}", int(c.positions[i])) from exc
    if max_bytes is None:
        return pa.array(values, bodies.type)
    pieces, first, filled = [], 0, 0
    for i, value in enumerate(values):
        size = len(value) if value is not None else 0
        if i > first and filled + size > max_bytes:
            pieces.append(pa.array(values[first:i], bodies.type))
            first, filled = i, 0
        filled += size
    pieces.append(pa.array(values[first:], bodies.type))
    return pieces[0] if len(pieces) == 1 else pa.chunked_array(pieces, bodies.type)


def _check_body_crcs(c: RecordColumns, queue_offsets: np.ndarray,
                     expect: tuple[np.ndarray, np.ndarray] | None, keep: pa.Array | None) -> None:
    """MessageDecodeError naming the first record whose (stored, still compressed) body fails its CRC: by
    commitlog offset, topic, queue id and queue offset, so that a user can find it with ``store dump`` or
    ``store verify``.  Records a tag filter drops (*keep* false) are not checked: they make no row."""
    rows = np.arange(len(c)) if keep is None else np.flatnonzero(keep.to_numpy(zero_copy_only=False))
    if not len(rows):
        return
    view = memoryview(c.buf)  # type: ignore[arg-type]  # (an ndarray is a buffer)
    starts = c.body_start[rows]
    crc32 = zlib.crc32
    ends = starts + c.body_length[rows]
    got = np.fromiter((crc32(view[a:b]) for a, b in zip(starts.tolist(), ends.tolist())), dtype=np.int64,
                      count=len(rows))
    bad = np.flatnonzero((got & 0x7FFFFFFF) != c.body_crc[rows])
    if not len(bad):
        return
    i = int(rows[bad[0]])
    at = int(expect[0][i]) if expect is not None else int(c.commit_log_offset[i])
    topic = bytes(c.buf[c.topic_start[i] : c.topic_start[i] + c.topic_length[i]]).decode("utf-8", "replace")
    crc, held = int(got[bad[0]]) & 0x7FFFFFFF, int(c.body_crc[i])
    raise MessageDecodeError(
        f"body CRC mismatch (CRC {crc:#x}, the record says {held:#x}) in the record at commitlog offset {at} "
        f"of topic {topic} queue {int(c.queue_id[i])} queue offset {int(queue_offsets[i])}: its body changed "
        "after it was stored; option checkCRC=false reads such bodies as they are", at)


def _at_commit_log_offset(exc: MessageDecodeError, positions: np.ndarray,
                          expect: tuple[np.ndarray, np.ndarray] | None) -> MessageDecodeError | None:
    """*exc*, raised at a position in the buffer, re-aimed at the record's commitlog offset; None when that
    is not known (a buffer position, "offset 0" of a batch, does not lead a user to the damaged record)."""
    if expect is None or exc.offset is None:
        return None
    at = np.flatnonzero(positions == exc.offset)
    return MessageDecodeError(exc.reason, int(expect[0][int(at[0])])) if len(at) else None


def _located(exc: MessageDecodeError, positions: np.ndarray,
             expect: tuple[np.ndarray, np.ndarray] | None) -> MessageDecodeError:
    """*exc* re-aimed at its record's commitlog offset (chained to it) where that is known, else *exc*."""
    located = _at_commit_log_offset(exc, positions, expect)
    if located is None:
        return exc
    located.__cause__ = exc
    return located


def record_batch(buf: np.ndarray | bytes, positions: np.ndarray, queue_offsets: np.ndarray, schema: pa.Schema, *,
                 include_body: bool = True, tag_set: Collection[str] | None = None,
                 expect: tuple[np.ndarray, np.ndarray] | None = None,
                 check_crc: bool = False) -> pa.RecordBatch:
    """The records at *positions* of *buf* as a batch of *schema* (a subset of the source's columns).

    *queue_offsets* are the records' consume-queue offsets (the queue's word, not the record's field).
    With *tag_set*, only records whose TAGS is one of its members are kept (the exact check after a
    tags-code match, as a RocketMQ client does it).  *expect* (commitlog offsets, sizes) are what the
    consume queue says each record is: a record whose own PHYSICALOFFSET or TOTALSIZE differs is refused.
    With *expect*, a MessageDecodeError names the record's commitlog offset; without, its position in *buf*.
    With *check_crc* and a body column, a body that fails its CRC is a MessageDecodeError at its record's
    commitlog offset (without *expect*, the one the record holds), naming its topic, queue and queue offset.
    """
    arrays, keep = _arrays(buf, positions, queue_offsets, schema, include_body, tag_set, expect, None,
                           check_crc)
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    if keep is not None and not pc.all(keep).as_py():
        batch = batch.filter(keep)
    return batch


def record_batches(buf: np.ndarray | bytes, positions: np.ndarray, queue_offsets: np.ndarray, schema: pa.Schema, *,
                   max_body_bytes: int, include_body: bool = True, tag_set: Collection[str] | None = None,
                   expect: tuple[np.ndarray, np.ndarray] | None = None,
                   check_crc: bool = False) -> list[pa.RecordBatch]:
    """:func:`record_batch`, cut into batches whose bodies, once inflated, add up to at most *max_body_bytes*
    (or hold one record): one batch unless compressed bodies inflate past it."""
    arrays, keep = _arrays(buf, positions, queue_offsets, schema, include_body, tag_set, expect, max_body_bytes,
                           check_crc)
    if not any(isinstance(a, pa.ChunkedArray) for a in arrays):
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        if keep is not None and not pc.all(keep).as_py():
            batch = batch.filter(keep)
        return [batch]
    table = pa.Table.from_arrays(arrays, schema=schema)  # other columns are cut where the bodies are
    if keep is not None and not pc.all(keep).as_py():
        table = table.filter(keep)
    return table.to_batches()


def _arrays(buf: np.ndarray | bytes, positions: np.ndarray, queue_offsets: np.ndarray, schema: pa.Schema,
            include_body: bool, tag_set: Collection[str] | None, expect: tuple[np.ndarray, np.ndarray] | None,
            max_body_bytes: int | None, check_crc: bool = False
            ) -> tuple[list[pa.Array | pa.ChunkedArray], pa.Array | None]:
    """The columns of *schema* for the records at *positions*, and the tag filter's mask (None: keep all)."""
    try:
        cols = decode_columns(buf, positions)
    except MessageDecodeError as exc:
        raise _located(exc, positions, expect)  # noqa: B904 - chained to exc when re-aimed
    if expect is not None:
        wrong = np.flatnonzero((cols.commit_log_offset != expect[0]) | (cols.total_size != expect[1]))
        if len(wrong):
            raise MessageDecodeError("the record disagrees with its consume-queue entry (offset or size)",
                                     int(expect[0][wrong[0]]))
    decoded = _Decoded(cols, np.asarray(queue_offsets), include_body, max_body_bytes)
    keep = None
    try:
        if tag_set is not None:
            tags = decoded.column("tags", pa.string())
            keep = pc.fill_null(pc.is_in(tags, value_set=pa.array(sorted(tag_set), pa.string())), False)
    except MessageDecodeError as exc:
        raise _located(exc, positions, expect)  # noqa: B904 - chained to exc when re-aimed
    if check_crc and include_body and "body" in schema.names:
        # the CRC covers the body only: checked where a body becomes a row, before it is inflated
        _check_body_crcs(cols, np.asarray(queue_offsets), expect, keep)
    try:
        arrays = [decoded.column(f.name, f.type) for f in schema]
    except MessageDecodeError as exc:
        raise _located(exc, positions, expect)  # noqa: B904 - chained to exc when re-aimed
    return arrays, keep
