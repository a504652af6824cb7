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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rocketstore.errors import MessageDecodeError, PropertiesTooLargeError

__all__ = ["BATCH_ENTRY_HEADER", "BatchEntry", "decode_batch", "decode_batch_fields", "encode_batch"]

BATCH_ENTRY_HEADER = struct.Struct(">iiiii")
_PROP_LEN = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class BatchEntry:
    body: bytes
    properties_string: str
    flag: int = 0


def encode_batch(entries: list[BatchEntry]) -> bytes:
    out = bytearray()
    for entry in entries:
        props = entry.properties_string.encode("utf-8")
        if len(props) > 32767:
            raise PropertiesTooLargeError(len(props))
        total = 20 + len(entry.body) + 2 + len(props)
        out += BATCH_ENTRY_HEADER.pack(total, 0, 0, entry.flag, len(entry.body))
        out += entry.body
        out += _PROP_LEN.pack(len(props))
        out += props
    return bytes(out)


def decode_batch(data: bytes | memoryview) -> list[BatchEntry]:
    """Entries of a batch body; MessageDecodeError at the first inconsistent entry."""
    return [BatchEntry(body, props, flag) for body, props, flag in decode_batch_fields(data)]


def decode_batch_fields(data: bytes | memoryview) -> list[tuple[bytes, str, int]]:
    """:func:`decode_batch` as plain (body, properties string, flag) tuples: what the broker's send
    handler reads, once per message of every batch, without a frozen dataclass per entry."""
    entries: list[tuple[bytes, str, int]] = []
    if type(data) is not bytes:
        data = bytes(data)
    unpack_header = BATCH_ENTRY_HEADER.unpack_from
    unpack_prop_len = _PROP_LEN.unpack_from
    pos = 0
    end = len(data)
    while pos < end:
        if pos + 20 > end:
            raise MessageDecodeError("truncated batch entry header", pos)
        _, _, _, flag, body_len = unpack_header(data, pos)
        p = pos + 20
        if body_len < 0 or p + body_len + 2 > end:
            raise MessageDecodeError(f"batch entry body length {body_len} does not fit", pos)
        body = data[p : p + body_len]
        p += body_len
        (props_len,) = unpack_prop_len(data, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise MessageDecodeError(f"batch entry properties length {props_len} does not fit", pos)
        try:
            props = data[p : p + props_len].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MessageDecodeError("batch entry properties are not UTF-8", pos) from exc
        entries.append((body, props, flag))
        pos = p + props_len
    return entries
