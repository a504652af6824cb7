"""Offset message ids: store host IP + port + commitlog offset, as upper-case hex.

16 bytes (32 hex characters) for an IPv4 store host, 28 bytes (56 characters) for IPv6::

    +0  IP          4 | 16
    +4  PORT        int
    +8  OFFSET      long      (positions shown for IPv4)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import accumulate, islice

from rocketstore.errors import InvalidMessageIdError
from rocketstore.message.host import HostAddress

__all__ = ["decode_offset_message_id", "encode_offset_message_id", "encode_offset_message_ids"]

_PORT_OFFSET = struct.Struct(">iq")
_PORT = struct.Struct(">i")


def encode_offset_message_id(store_host: HostAddress, commit_log_offset: int) -> str:
    return (store_host.ip + _PORT_OFFSET.pack(store_host.port, commit_log_offset)).hex().upper()


def encode_offset_message_ids(store_host: HostAddress, first_offset: int, record_sizes: Sequence[int]) -> str:
    """The ids of records laid back to back from *first_offset*, joined by commas (a batch send's answer).

    The ids share their IP and port: the offsets are packed in one call and hexed in one, a comma before
    each, and every comma then followed by the hexed IP and port with one ``str.replace`` (~4 us for 64 ids
    where a pack per id took ~9)."""
    n = len(record_sizes)
    if not n:
        return ""
    size = record_sizes[0]
    offsets = (range(first_offset, first_offset + n * size, size) if record_sizes.count(size) == n
               else islice(accumulate(record_sizes, initial=first_offset), n))
    prefix = (store_host.ip + _PORT.pack(store_host.port)).hex().upper()
    return prefix + struct.pack(f">{n}q", *offsets).hex(",", 8).upper().replace(",", "," + prefix)


def decode_offset_message_id(message_id: str) -> tuple[HostAddress, int]:
    """(store host, commitlog offset) of an offset message id; InvalidMessageIdError if malformed."""
    if len(message_id) not in (32, 56):
        raise InvalidMessageIdError(message_id, "an offset message id has 32 or 56 hex characters")
    try:
        raw = bytes.fromhex(message_id)
    except ValueError as exc:
        raise InvalidMessageIdError(message_id, "not hexadecimal") from exc
    if 2 * len(raw) != len(message_id):  # fromhex skips whitespace: the fields would be read shifted
        raise InvalidMessageIdError(message_id, "not hexadecimal")
    ip_len = len(raw) - 12
    port, offset = _PORT_OFFSET.unpack_from(raw, ip_len)
    if not 0 <= port <= 0xFFFF or offset < 0:
        raise InvalidMessageIdError(message_id, "port or offset out of range")
    return HostAddress(raw[:ip_len], port), offset
