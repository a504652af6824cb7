"""The batch send body: concatenated short records (TOTALSIZE, 0, 0, FLAG, BODY, PROPERTIES)."""

from __future__ import annotations

import struct

import pytest

from rocketstore.errors import MessageDecodeError, PropertiesTooLargeError
from rocketstore.message.batch import BatchEntry, decode_batch, encode_batch


def entry_bytes(body: bytes, props: bytes, flag: int = 0, total: int | None = None, magic: int = 0) -> bytes:
    size = 20 + len(body) + 2 + len(props) if total is None else total
    return struct.pack(">iiiii", size, magic, 0, flag, len(body)) + body + struct.pack(">h", len(props)) + props


def test_encode_writes_the_documented_layout() -> None:
    data = encode_batch([BatchEntry(b"hello", "TAGS\x01A", flag=7)])
    assert data == (
        struct.pack(">i", 20 + 5 + 2 + 6)  # TOTALSIZE
        + struct.pack(">i", 0)  # MAGICCODE
        + struct.pack(">i", 0)  # BODYCRC
        + struct.pack(">i", 7)  # FLAG
        + struct.pack(">i", 5)  # BODYLEN
        + b"hello"
        + struct.pack(">h", 6)
        + b"TAGS\x01A"
    )


def test_encode_then_decode_round_trips_several_entries() -> None:
    entries = [
        BatchEntry(b"", ""),
        BatchEntry(b"\x00\xff" * 100, "KEYS\x01a b\x02TAGS\x01T", flag=-1),
        BatchEntry(b"x", "p\x01\u00e9\U0001F600", flag=2**31 - 1),
    ]
    assert decode_batch(encode_batch(entries)) == entries


def test_decode_accepts_a_memoryview() -> None:
    data = encode_batch([BatchEntry(b"ab", "A\x01b")])
    assert decode_batch(memoryview(data)) == [BatchEntry(b"ab", "A\x01b")]


def test_decode_of_empty_body_is_no_entries() -> None:
    assert decode_batch(b"") == []


def test_decode_ignores_the_informational_total_size_and_magic() -> None:
    data = entry_bytes(b"abc", b"A\x01b", flag=3, total=999, magic=12345) + entry_bytes(b"", b"")
    assert decode_batch(data) == [BatchEntry(b"abc", "A\x01b", 3), BatchEntry(b"", "")]


def test_decode_keeps_a_cpp_trailing_separator_in_the_properties_string() -> None:
    assert decode_batch(entry_bytes(b"x", b"TAGS\x01A\x02"))[0].properties_string == "TAGS\x01A\x02"


def test_encode_rejects_properties_over_32767_bytes() -> None:
    encode_batch([BatchEntry(b"", "a" * 32767)])
    with pytest.raises(PropertiesTooLargeError):
        encode_batch([BatchEntry(b"", "\u00e9" * 16384)])


GOOD = entry_bytes(b"body", b"A\x01b")


@pytest.mark.parametrize(
    "data",
    [
        GOOD[:19],  # truncated header
        GOOD[:-1],  # truncated properties
        GOOD[:23],  # truncated body
        GOOD[:25],  # missing properties length
        GOOD + b"\x00" * 5,  # trailing partial header
        struct.pack(">iiiii", 0, 0, 0, 0, -1) + b"\x00\x00",  # negative body length
        struct.pack(">iiiii", 0, 0, 0, 0, 2**31 - 1) + b"\x00\x00",  # body length past the end
        struct.pack(">iiiii", 0, 0, 0, 0, 0) + struct.pack(">h", -1),  # negative properties length
        struct.pack(">iiiii", 0, 0, 0, 0, 0) + struct.pack(">h", 5) + b"ab",  # properties past the end
        entry_bytes(b"", b"\xff\xfe"),  # properties not UTF-8
        GOOD + entry_bytes(b"", b"\xc3"),  # second entry broken
    ],
)
def test_malformed_batches_raise_message_decode_error(data: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        decode_batch(data)


def test_every_truncation_of_a_batch_raises_message_decode_error() -> None:
    data = encode_batch([BatchEntry(b"one", "A\x01b"), BatchEntry(b"two!", "C\x01d", flag=9)])
    first_end = 20 + 3 + 2 + 3
    for cut in range(1, len(data)):
        if cut == first_end:
            assert decode_batch(data[:cut]) == [BatchEntry(b"one", "A\x01b")]
            continue
        with pytest.raises(MessageDecodeError):
            decode_batch(data[:cut])


def test_decode_batch_reads_entries_of_every_shape_from_bytes_or_a_memoryview() -> None:
    entries = [BatchEntry(b"", "", 0), BatchEntry(b"body", "TAGS\x01a\x02UNIQ_KEY\x01b", 7),
               BatchEntry(b"\x00" * 300, "k\x01\u00e9", -1)]
    data = encode_batch(entries)
    assert decode_batch(memoryview(data)) == decode_batch(data)
    assert decode_batch(data) == entries
