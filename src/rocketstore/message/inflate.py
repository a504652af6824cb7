"""Inflating a message body flagged COMPRESSED (sysFlag bit 0), bounded.

A compressed body comes from the wire (a pull or query answer, a CONSUME_MESSAGE_DIRECTLY push, a reply
message), so how far it inflates is the sender's choice: deflate reaches about 1000:1, and one 16 MiB frame of
zeros inflates to some 16 GiB.  4.9.3's UtilAll.uncompress inflates without a bound; here a body that would
inflate past :data:`MAX_INFLATED_BODY_BYTES` is refused as it inflates (never more held) with the
``zlib.error`` an undecodable body raises, so every caller treats it as it treats a body that does not
inflate.  A body within the bound gives exactly what ``zlib.decompress`` gives (bytes after the stream's end
ignored, a truncated stream an error), except an empty one: 4.9.3 never inflates a zero-length body
(MessageDecoder reads none, UtilAll.uncompress reads into a zero-length buffer and stops), so a message
flagged COMPRESSED with no body reaches its consumer with no body, not as one that does not inflate.

Pure: no I/O.
"""

from __future__ import annotations

import zlib
from typing import Final

__all__ = ["MAX_INFLATED_BODY_BYTES", "inflate_body"]

#: the most one compressed message body may inflate to: 16 times 4.9.3's default maxMessageSize (4 MiB),
#: which a producer checks before it compresses, so no body a default producer sends comes near it
MAX_INFLATED_BODY_BYTES: Final = 64 * 1024 * 1024
#: deflate's largest ratio: a 258-byte match coded in 2 bits at best, so n bytes inflate to at most 1032 n
_MAX_DEFLATE_RATIO: Final = 1032


def inflate_body(body: bytes, max_bytes: int = MAX_INFLATED_BODY_BYTES) -> bytes:
    """The inflated *body* (empty for an empty one, see above); ``zlib.error`` when it is not a whole zlib
    stream or inflates past *max_bytes*."""
    if not body:
        return b""
    if len(body) * _MAX_DEFLATE_RATIO <= max_bytes:  # cannot inflate past the bound: zlib's own, faster call
        return zlib.decompress(body)
    inflater = zlib.decompressobj()
    raw = inflater.decompress(body, max_bytes + 1)
    if len(raw) > max_bytes:
        raise zlib.error(f"compressed body inflates past {max_bytes} bytes")
    if not inflater.eof:  # output room was left, so all the input was read: the stream is cut short
        raise zlib.error("incomplete or truncated stream")
    return raw
