"""The batch body of a batch send: the concatenation of short per-message records.

Each entry (big-endian)::

    +0  TOTALSIZE   int     4+4+4+4+4+B+2+P (informational: readers parse sequentially)
    +4  MAGICCODE   int     0 as clients write it
    +8  BODYCRC     int     0 as clients write it (the broker recomputes)
    +12 FLAG        int
    +16 BODYLEN     int     B
    +20 BODY        B bytes
        PROPLEN     short   P
        PROPERTIES  P bytes UTF-8 properties string

The broker stores each entry as its own commitlog record, with the entry's properties bytes as sent, then
(when both are non-empty and the entry's do not already end with one) a 0x02 separator, then the batch's
own properties string (the request header's properties plus CLUSTER): RocketMQ 4.9.3's
``MessageExtBatchEncoder`` copies the bytes rather than re-parsing them, so WAIT and any duplicate names
stay in the record as the client wrote them.  :class:`MessageBatch` carries a batch that way from the
broker to the store, and :func:`split_batch` / :func:`key_columns` are the bulk readers its put path uses.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, itemgetter

from rocketstore.errors import MessageDecodeError, PropertiesTooLargeError
from rocketstore.message.host import HostAddress

__all__ = ["BATCH_ENTRY_HEADER", "BatchEntry", "MessageBatch", "decode_batch", "encode_batch",
           "key_columns", "split_batch"]

BATCH_ENTRY_HEADER = struct.Struct(">iiiii")
_PROP_LEN = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class BatchEntry:
    body: bytes
    properties_string: str
    flag: int = 0


_entry_properties = attrgetter("properties_string")
_entry_body = attrgetter("body")
_entry_flag = attrgetter("flag")
_add = operator.add
#: (body length, properties length) -> the struct of a whole entry of that shape, for writing
_UNIFORM_WRITE: dict[tuple[int, int], struct.Struct] = {}


def encode_batch(entries: list[BatchEntry]) -> bytes:
    """The batch body of *entries*; PropertiesTooLargeError when an entry's properties exceed 32767 bytes.

    Column-wise, as the producer's hot path: every entry packed by C-level iteration, one struct per entry
    when all have one shape (a producer's usual batch), else a header and three parts each."""
    props = list(map(str.encode, map(_entry_properties, entries)))
    bodies = list(map(_entry_body, entries))
    props_lens = list(map(len, props))
    longest = max(props_lens, default=0)
    if longest > 32767:
        raise PropertiesTooLargeError(longest)
    body_lens = list(map(len, bodies))
    flags = map(_entry_flag, entries)
    n = len(entries)
    if n and props_lens.count(props_lens[0]) == n and body_lens.count(body_lens[0]) == n:
        body_len, props_len = body_lens[0], props_lens[0]
        layout = _UNIFORM_WRITE.get((body_len, props_len))
        if layout is None:
            layout = struct.Struct(f">iiiii{body_len}sh{props_len}s")
            if len(_UNIFORM_WRITE) >= _UNIFORM_MAX:
                _UNIFORM_WRITE.clear()
            _UNIFORM_WRITE[(body_len, props_len)] = layout
        return b"".join(map(layout.pack, repeat(layout.size), repeat(0), repeat(0), flags, body_lens, bodies,
                            props_lens, props))
    totals = map(_add, map(_add, body_lens, props_lens), repeat(22))
    headers = map(BATCH_ENTRY_HEADER.pack, totals, repeat(0), repeat(0), flags, body_lens)
    return b"".join(chain.from_iterable(zip(headers, bodies, map(_PROP_LEN.pack, props_lens), props)))


def decode_batch(data: bytes | memoryview) -> list[BatchEntry]:
    """Entries of a batch body; MessageDecodeError at the first inconsistent entry (see :func:`split_batch`)."""
    flags, bodies, properties = split_batch(data)
    return [BatchEntry(body, props.decode("utf-8"), flag) for flag, body, props in zip(flags, bodies, properties)]


@dataclass(frozen=True, slots=True)
class MessageBatch:
    """A batch of one topic and queue as the store takes it (RocketMQ's MessageExtBatch): the entries as
    columns, the fields they share, and the batch's own properties string, appended to each entry's
    properties as described in the module docstring.

    ``properties`` holds each entry's properties as UTF-8 bytes, exactly as they are to be stored (before the
    batch's string is appended).  ``store_host`` None means the store's own address, ``born_host`` None too;
    ``store_timestamp`` None lets the store stamp the batch (one time for every record, as RocketMQ does).
    """

    topic: str
    queue_id: int
    flags: Sequence[int]
    bodies: Sequence[bytes]
    properties: Sequence[bytes]
    batch_properties: str = ""
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostAddress | None = None
    store_host: HostAddress | None = None
    reconsume_times: int = 0
    store_timestamp: int | None = None

    @classmethod
    def from_body(cls, topic: str, queue_id: int, data: bytes | memoryview, **fields: object) -> MessageBatch:
        """The batch of a send request's body; MessageDecodeError as :func:`decode_batch`."""
        flags, bodies, properties = split_batch(data)
        return cls(topic, queue_id, flags, bodies, properties, **fields)  # type: ignore[arg-type]


#: (body length, properties length) -> the struct of one entry of that shape, reading FLAG, BODYLEN, BODY,
#: PROPLENGTH and PROPERTIES (TOTALSIZE, MAGICCODE and BODYCRC are skipped, as the broker ignores them)
_UNIFORM: dict[tuple[int, int], struct.Struct] = {}
_UNIFORM_MAX = 256


def _uniform_entry(body_len: int, props_len: int) -> struct.Struct:
    layout = _UNIFORM.get((body_len, props_len))
    if layout is None:
        layout = struct.Struct(f">12xii{body_len}sh{props_len}s")
        if len(_UNIFORM) >= _UNIFORM_MAX:
            _UNIFORM.clear()
        _UNIFORM[(body_len, props_len)] = layout
    return layout


#: (body length, properties length, entries) -> the struct of a whole batch body of that shape: every
#: entry as :func:`_uniform_entry` reads it, for batches of at most _WHOLE_MAX_ENTRIES
_UNIFORM_BATCH: dict[tuple[int, int, int], struct.Struct] = {}
_WHOLE_MAX_ENTRIES = 1024


def _uniform_batch(body_len: int, props_len: int, count: int) -> struct.Struct:
    layout = _UNIFORM_BATCH.get((body_len, props_len, count))
    if layout is None:
        entry = _uniform_entry(body_len, props_len).format
        layout = struct.Struct(entry[0] + entry[1:] * count)
        if len(_UNIFORM_BATCH) >= _UNIFORM_MAX:
            _UNIFORM_BATCH.clear()
        _UNIFORM_BATCH[(body_len, props_len, count)] = layout
    return layout


def split_batch(data: bytes | memoryview) -> tuple[Sequence[int], Sequence[bytes], Sequence[bytes]]:
    """(flags, bodies, properties as UTF-8 bytes) of a batch body, or MessageDecodeError naming the first
    inconsistent entry (a truncated header, a length that does not fit, properties that are not UTF-8).

    The usual batch (one producer, bodies and properties of one length each) is read with one
    ``struct.iter_unpack`` call instead of a Python step per entry; anything else entry by entry."""
    if type(data) is not bytes:
        data = bytes(data)
    end = len(data)
    if end >= 22:
        body_len = BATCH_ENTRY_HEADER.unpack_from(data, 0)[4]
        if 0 <= body_len <= end - 22:
            props_len = _PROP_LEN.unpack_from(data, 20 + body_len)[0]
            stride = 22 + body_len + props_len
            if props_len >= 0 and end % stride == 0:
                n = end // stride
                if n <= _WHOLE_MAX_ENTRIES:
                    # one unpack of the whole body, its columns cut out by C-level slicing: about half the
                    # cost of an unpack per entry and a transposition (~4 us against ~7 for 64 entries)
                    fields = _uniform_batch(body_len, props_len, n).unpack(data)
                    flags, body_lens, bodies = fields[0::5], fields[1::5], fields[2::5]
                    props_lens, props = fields[3::5], fields[4::5]
                else:
                    entries = _uniform_entry(body_len, props_len).iter_unpack(data)
                    flags, body_lens, bodies, props_lens, props = zip(*entries)
                if body_lens.count(body_len) == n and props_lens.count(props_len) == n:
                    # one decode checks every entry's UTF-8: an ASCII separator between them keeps a broken
                    # sequence at one entry's end from pairing up with the next entry's start
                    if not props_len or b"\x02".join(props).isascii():
                        return flags, bodies, props
                    try:
                        b"\x02".join(props).decode("utf-8")
                    except UnicodeDecodeError:
                        pass  # the entry-by-entry walk below says which entry
                    else:
                        return flags, bodies, props
    flags_out: list[int] = []
    bodies_out: list[bytes] = []
    props_out: list[bytes] = []
    unpack_header = BATCH_ENTRY_HEADER.unpack_from
    unpack_prop_len = _PROP_LEN.unpack_from
    pos = 0
    while pos < end:
        if pos + 20 > end:
            raise MessageDecodeError("truncated batch entry header", pos)
        _, _, _, flag, body_len = unpack_header(data, pos)
        p = pos + 20
        if body_len < 0 or p + body_len + 2 > end:
            raise MessageDecodeError(f"batch entry body length {body_len} does not fit", pos)
        bodies_out.append(data[p : p + body_len])
        p += body_len
        (props_len,) = unpack_prop_len(data, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise MessageDecodeError(f"batch entry properties length {props_len} does not fit", pos)
        entry_props = data[p : p + props_len]
        if not entry_props.isascii():
            try:
                entry_props.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MessageDecodeError("batch entry properties are not UTF-8", pos) from exc
        props_out.append(entry_props)
        flags_out.append(flag)
        pos = p + props_len
    return flags_out, bodies_out, props_out


_TAGS = "TAGS"
_KEYS = "KEYS"
_UNIQ_KEY = "UNIQ_KEY"
_KEY_NAMES = (_TAGS, _UNIQ_KEY, _KEYS)
#: a TAGS, KEYS or UNIQ_KEY pair as Java's string2messageProperties keeps it: at the start of a pair, with a
#: non-empty value (a pair with an empty value is dropped, so an earlier pair of that name stands)
_KEY_PAIR = re.compile("(?:^|\x02)(TAGS|KEYS|UNIQ_KEY)\x01([^\x02]+)")
#: below this many entries the template's fixed cost (a few dozen C-level calls, ~20 us here) is more than
#: reading each entry (~1-2 us each)
_TEMPLATE_MIN_ENTRIES = 16


def key_columns(properties: Sequence[bytes], batch_properties: dict[str, str] | None = None,
                ) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """(TAGS, UNIQ_KEY, KEYS) of each record whose stored properties are ``properties[i]`` (UTF-8, already
    checked) followed by the batch's properties (*batch_properties*, parsed), as a reader of the stored
    string finds them: the last non-empty pair of each name wins, so a name the batch's properties hold
    overrides every entry's.

    A batch from one producer mostly repeats one properties layout with only some values changing (a
    UNIQ_KEY each, perhaps a key each): :func:`_template_columns` reads such a batch from its first entry
    and the byte columns that vary, with no Python step per entry but a slice per changing value; any
    other batch is read entry by entry with one regular-expression pass each."""
    n = len(properties)
    columns = _template_columns(properties) if n >= _TEMPLATE_MIN_ENTRIES else None
    if columns is None:
        pairs = list(map(dict, map(_KEY_PAIR.findall, map(bytes.decode, properties))))
        get = dict.get
        columns = [list(map(get, pairs, repeat(name))) for name in _KEY_NAMES]
    if batch_properties:
        for name, column in zip(_KEY_NAMES, columns):
            value = batch_properties.get(name)
            if value:
                column[:] = [value] * n
    return columns[0], columns[1], columns[2]


def _varying_columns(joined: bytes, rows: int, first: bytes, width: int) -> bytes:
    """One byte per column of *joined* (*rows* rows of *width* bytes): zero where every row equals *first*,
    non-zero where some row differs.  Big-integer arithmetic instead of a step per row: the rows XORed
    against the first row repeated, then folded in halves with OR (no bit carries into a neighbouring
    byte), so a batch costs a few dozen C-level operations on numbers of its size."""
    diff = int.from_bytes(joined, "big") ^ int.from_bytes(first * rows, "big")
    row_bits = 8 * width
    while rows > 1 and diff:
        low_rows = rows // 2
        low_bits = row_bits * low_rows
        diff = (diff >> low_bits) | (diff & ((1 << low_bits) - 1))
        rows -= low_rows
    return diff.to_bytes(width, "big") if rows == 1 or not diff else b"\x00" * width


def _template_columns(properties: Sequence[bytes]) -> list[list[str | None]] | None:
    """:func:`key_columns` (without the batch's properties) when every entry has the first entry's layout:
    the same length, and equal bytes except inside the values of the first entry's well-formed pairs, where
    no 0x02 separator appears.  Then each entry's pairs sit where the first entry's do, so a value that
    never changes is decoded once and one that does is sliced out of each entry.  None for any other batch.

    No Python step per entry: the columns that change come from :func:`_varying_columns`, and an entry
    holds an extra 0x02 in them exactly when the batch holds more than the first entry's count times n
    (no column the first entry has as a value byte holds one there)."""
    n = len(properties)
    first = properties[0]
    width = len(first)
    if not width or list(map(len, properties)).count(width) != n:
        return None
    joined = b"".join(properties)
    varying = _varying_columns(joined, n, first, width)
    changed = width - varying.count(0)
    # the first entry's well-formed pairs (non-empty name and value), as Java's parser keeps them
    spans: dict[bytes, tuple[int, int]] = {}
    changed_in_values = 0
    pos = 0
    for item in first.split(b"\x02"):
        sep = item.find(b"\x01")
        if 0 < sep < len(item) - 1:
            start, end = pos + sep + 1, pos + len(item)
            spans[item[:sep]] = (start, end)
            changed_in_values += end - start - varying.count(0, start, end)
        pos += len(item) + 1
    if changed != changed_in_values:
        return None  # a name or separator differs somewhere
    if changed and joined.count(b"\x02") != n * first.count(b"\x02"):
        return None  # a changed value holds a separator: that entry has other pairs
    columns: list[list[str | None]] = []
    for name in _KEY_NAMES:
        span = spans.get(name.encode())
        if span is None:
            columns.append([None] * n)
            continue
        start, end = span
        if varying.count(0, start, end) == end - start:
            columns.append([first[start:end].decode("utf-8")] * n)
        else:
            # a slice between two ASCII separators of valid UTF-8 is valid UTF-8
            columns.append(list(map(bytes.decode, map(itemgetter(slice(start, end)), properties))))
    return columns
