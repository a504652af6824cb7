"""A header's malformed UTF-8 is replaced as Java's ``new String(bytes, UTF_8)`` replaces it: one U+FFFD per
malformed sequence as Java counts them, not one per byte.

The official C++ client (PyPI rocketmq 0.4.4) sends a property given as raw bytes as they are.  For the
value ``b"a\\xed\\xa0\\x80b"`` (a surrogate encoded in three bytes) 4.9.3's broker stored and delivered
``"a\\ufffdb"`` (a 171-byte record, captured by the session-31 nulprop helper against the 4.9.3 Java broker);
we stored ``"a\\ufffd\\ufffd\\ufffdb"`` (177 bytes), Python's "replace" giving one U+FFFD per byte.
"""

from __future__ import annotations

import struct

from rocketstore.remoting.frame_decoder import _decode_binary_map, decode_command

SURROGATE = b"a\xed\xa0\x80b"  # what the C++ client put in the header, as it was given


def json_frame(header: bytes) -> bytes:
    return struct.pack(">I", len(header)) + header


def test_a_json_header_replaces_an_encoded_surrogate_by_one_character() -> None:
    header = (b'{"code":310,"extFields":{"b":"T","i":"p\x01' + SURROGATE + b'\x02"},"flag":0,'
              b'"language":"CPP","opaque":7,"serializeTypeCurrentRPC":"JSON","version":395}')
    command = decode_command(json_frame(header))
    assert command.ext_fields["i"] == "p\x01a\ufffdb\x02"  # 4.9.3: "a\ufffdb"


def test_other_malformed_bytes_still_give_one_character_each_sequence() -> None:
    header = b'{"code":310,"extFields":{"k":"x\xffy\xc3"},"opaque":1}'
    assert decode_command(json_frame(header)).ext_fields["k"] == "x\ufffdy\ufffd"


def test_a_binary_header_map_replaces_as_java_too() -> None:
    key, value = b"i", SURROGATE
    raw = struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value
    assert _decode_binary_map(raw, 0, len(raw)) == {"i": "a\ufffdb"}
