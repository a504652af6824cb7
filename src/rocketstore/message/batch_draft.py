"""The records of one batch drafted and encoded together: column-wise, with no Python step per record.

A batch's records share everything but BODY, FLAG and PROPERTIES (one topic, queue, sys flag, born time and
hosts), so :func:`draft_batch` checks and pre-encodes them as columns and :func:`encode_batch_draft` packs
them, once the commitlog knows where they go, with C-level ``map`` / ``zip`` over those columns: one
``struct`` per record when they all have one size (a producer's usual batch).  The layout itself is
:mod:`rocketstore.message.record`'s, whose private layout helpers this module shares.
"""

from __future__ import annotations

import operator
import struct
import zlib
from collections.abc import Sequence
from itertools import accumulate, chain, repeat
from typing import Final, NamedTuple

from rocketstore.errors import MessageFieldError, MessageTooLargeError, PropertiesTooLargeError
from rocketstore.message.record import (
    _PROP_LEN,
    _TOPIC_PARTS,
    _WRITE_HEADERS,
    MESSAGE_MAGIC,
    _pack_field_ranges,
    _topic_part,
    host_flags,
)

__all__ = ["BatchDraft", "draft_batch", "encode_batch_draft"]


class BatchDraft(NamedTuple):
    """The records of a batch ready to be placed (see :func:`draft_batch`): columns of what differs between
    them, one value of what they share.  :func:`encode_batch_draft` lays them down once the writer knows
    QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP.  Callers read ``total``, ``sizes``, ``queue_id`` and
    ``sys_flag``."""

    header: struct.Struct
    #: the struct of a whole record when every record has one size (the usual batch), else None
    layout: struct.Struct | None
    total: int
    sizes: list[int]
    crcs: list[int]
    queue_id: int
    flags: Sequence[int]
    sys_flag: int
    born_timestamp: int
    born: bytes
    store: bytes
    reconsume_times: int
    prepared_offset: int
    body_lengths: list[int]
    bodies: Sequence[bytes]
    topic_part: bytes
    properties_lengths: list[int]
    properties: Sequence[bytes]
    suffixes: Sequence[bytes]


_add = operator.add
_pack_prop_len = _PROP_LEN.pack
_CRC_MASK: Final = 0x7FFFFFFF
_crc_mask = _CRC_MASK.__and__
_crc32 = zlib.crc32
#: (host bits, body, topic part, properties, suffix lengths) -> the struct of a whole record of that shape
_RECORD_LAYOUTS: dict[tuple[int, int, int, int, int], struct.Struct] = {}
_RECORD_LAYOUTS_MAX = 1024
#: TOTALSIZE + MAGICCODE of a batch's records of one size, packed once a batch
_pack_size_magic = struct.Struct(">ii").pack
#: by host bits, SYSFLAG through BODYLENGTH (what every record of a one-size batch shares), packed once a batch
_SHARED_MIDDLES: Final = tuple(struct.Struct(">iq%dsq%dsiqi" % (20 if bits & 1 else 8, 20 if bits & 2 else 8))
                               for bits in range(4))
#: by host bits, SYSFLAG through PREPAREDOFFSET (shared by a batch's records of several sizes), packed once a
#: batch, and the fixed part of such a record with them as one bytes field
_SHARED_PARTS: Final = tuple(struct.Struct(middle.format[:-1]) for middle in _SHARED_MIDDLES)
_MIXED_HEADERS: Final = tuple(struct.Struct(f">iiiiiqq{part.size}si") for part in _SHARED_PARTS)


def _record_layout(host_bits: int, body_len: int, topic_part_len: int, props_len: int,
                   suffix_len: int) -> struct.Struct:
    """A record of this shape in a batch of one record size as one struct: TOTALSIZE + MAGICCODE and the
    shared SYSFLAG..BODYLENGTH as bytes packed once a batch, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET and
    PHYSICALOFFSET packed per record, then BODY, TOPICLENGTH + TOPIC + PROPLENGTH (shared bytes too), the
    entry's PROPERTIES and the appended suffix: one pack of eleven items per record."""
    key = (host_bits, body_len, topic_part_len, props_len, suffix_len)
    layout = _RECORD_LAYOUTS.get(key)
    if layout is None:
        layout = struct.Struct(f">8siiiqq{_SHARED_MIDDLES[host_bits].size}s{body_len}s{topic_part_len + 2}s"
                               f"{props_len}s{suffix_len}s")
        if len(_RECORD_LAYOUTS) >= _RECORD_LAYOUTS_MAX:
            _RECORD_LAYOUTS.clear()
        _RECORD_LAYOUTS[key] = layout
    return layout


def draft_batch(topic: str, queue_id: int, flags: Sequence[int], bodies: Sequence[bytes],
                properties: Sequence[bytes], suffix: bytes = b"", *, sys_flag: int = 0, born_timestamp: int = 0,
                born: bytes, store: bytes, reconsume_times: int = 0, prepared_offset: int = 0,
                max_message_bytes: int = 0x7FFFFFFF) -> BatchDraft:
    """Validate and pre-encode the records of a batch: one record per ``bodies[i]`` with ``flags[i]`` and
    everything else shared; hosts as :func:`host_bytes`.

    Record i's properties are ``properties[i]`` (UTF-8, as given), then, when *suffix* is non-empty, a
    0x02 separator unless ``properties[i]`` is empty or already ends with one, then *suffix*: what RocketMQ's
    batch encoder writes for an entry's properties followed by the batch's own.

    Raises what :func:`draft_message` raises (InvalidTopicError, PropertiesTooLargeError,
    MessageTooLargeError, MessageFieldError), each checked over the whole batch in that order, and builds
    nothing then.  The work per record is a few C-level passes over columns, no Python step per record."""
    topic_part = _TOPIC_PARTS.get(topic)
    if topic_part is None:
        topic_part = _topic_part(topic)
    n = len(bodies)
    props_lens = list(map(len, properties))
    entry_props_len = props_lens[0] if n else 0
    same_props_len = props_lens.count(entry_props_len) == n
    suffixes: Sequence[bytes]
    if not suffix:
        suffixes = [b""] * n
        suffix_len = 0
    else:
        separated = b"\x02" + suffix
        # an entry ends with 0x02 exactly when 0x02 precedes a 0xFF separator in this join (one C call, not a
        # call per entry); 0xFF is no UTF-8 byte, so only entries that are not UTF-8 can take the exact path
        # below for nothing
        if 0 in props_lens or b"\x02\xff" in b"\xff".join(properties) + b"\xff":
            suffixes = [separated if length and not p.endswith(b"\x02") else suffix
                        for p, length in zip(properties, props_lens)]
            props_lens = list(map(_add, props_lens, map(len, suffixes)))
            suffix_len = -1 if suffixes.count(suffixes[0]) != n else len(suffixes[0])
        else:
            suffixes = [separated] * n
            suffix_len = len(separated)
            props_lens = ([entry_props_len + suffix_len] * n if same_props_len
                          else list(map(_add, props_lens, repeat(suffix_len))))
    longest_props = props_lens[0] if n and props_lens.count(props_lens[0]) == n else max(props_lens, default=0)
    if longest_props > 32767:
        raise PropertiesTooLargeError(longest_props)
    sys_flag, extra = host_flags(sys_flag & ~0x30, born, store)
    fixed = 90 + len(topic_part) + extra  # 91 bytes of fixed fields, TOPICLENGTH in topic_part
    body_lens = list(map(len, bodies))
    body_len = body_lens[0] if n else 0
    layout = None
    if same_props_len and suffix_len >= 0 and body_lens.count(body_len) == n and n:
        # the usual batch: one record size, one layout
        size = fixed + body_len + props_lens[0]
        if size > max_message_bytes:
            raise MessageTooLargeError(size, max_message_bytes)
        sizes = [size] * n
        layout = _record_layout(sys_flag >> 4 & 3, body_len, len(topic_part), entry_props_len, suffix_len)
    else:
        sizes = list(map(_add, map(_add, body_lens, props_lens), repeat(fixed)))
        largest = max(sizes, default=0)
        if largest > max_message_bytes:
            raise MessageTooLargeError(largest, max_message_bytes)
    if queue_id < 0:
        raise MessageFieldError(f"queue id {queue_id} is negative")
    try:
        if n and flags.count(flags[0]) == n:  # (one flag: the usual batch; min and max would both be flags[0])
            _pack_field_ranges(queue_id, flags[0], sys_flag, reconsume_times, born_timestamp, prepared_offset)
        else:
            _pack_field_ranges(queue_id, min(flags, default=0), sys_flag, reconsume_times, born_timestamp,
                               prepared_offset)
            _pack_field_ranges(queue_id, max(flags, default=0), sys_flag, reconsume_times, born_timestamp,
                               prepared_offset)
    except struct.error as exc:
        raise MessageFieldError("an int field is outside Java's int range or a long field outside long's: "
                                f"{exc}") from exc
    crcs = list(map(_crc_mask, map(_crc32, bodies)))
    return BatchDraft(_WRITE_HEADERS[sys_flag >> 4 & 3], layout, sum(sizes), sizes, crcs, queue_id, flags, sys_flag,
                      born_timestamp, born, store, reconsume_times, prepared_offset, body_lens, bodies, topic_part,
                      props_lens, properties, suffixes)


def encode_batch_draft(draft: BatchDraft, queue_offset: int, commit_log_offset: int, store_timestamp: int, *,
                       queue_step: int = 1) -> bytes:
    """The records of *draft* back to back, the first at *commit_log_offset* with *queue_offset* (the next
    ones *queue_step* further each, 0 for records that take no queue entry), all stamped *store_timestamp*.

    Every record is packed and joined by C-level iteration (map / zip / chain): the records of a batch of
    64 cost a few dozen Python steps in all."""
    sizes = draft.sizes
    n = len(sizes)
    queue_offsets = range(queue_offset, queue_offset + n) if queue_step else repeat(queue_offset, n)
    layout = draft.layout
    if layout is not None:
        size = sizes[0]
        # (a store timestamp that does not pack fails here, before any record is packed, as it did in the first)
        middle = _SHARED_MIDDLES[draft.sys_flag >> 4 & 3].pack(
            draft.sys_flag, draft.born_timestamp, draft.born, store_timestamp, draft.store, draft.reconsume_times,
            draft.prepared_offset, draft.body_lengths[0])
        return b"".join(map(layout.pack, repeat(_pack_size_magic(size, MESSAGE_MAGIC)), draft.crcs,
                            repeat(draft.queue_id), draft.flags, queue_offsets,
                            range(commit_log_offset, commit_log_offset + n * size, size), repeat(middle), draft.bodies,
                            repeat(draft.topic_part + _pack_prop_len(draft.properties_lengths[0])), draft.properties,
                            draft.suffixes))
    host_bits = draft.sys_flag >> 4 & 3
    shared = _SHARED_PARTS[host_bits].pack(draft.sys_flag, draft.born_timestamp, draft.born, store_timestamp,
                                           draft.store, draft.reconsume_times, draft.prepared_offset)
    headers = map(_MIXED_HEADERS[host_bits].pack, sizes, repeat(MESSAGE_MAGIC), draft.crcs, repeat(draft.queue_id),
                  draft.flags, queue_offsets, accumulate(sizes, initial=commit_log_offset), repeat(shared),
                  draft.body_lengths)
    return b"".join(chain.from_iterable(zip(headers, draft.bodies, repeat(draft.topic_part),
                                            map(_pack_prop_len, draft.properties_lengths), draft.properties,
                                            draft.suffixes)))
