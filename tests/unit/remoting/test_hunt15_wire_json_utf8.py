"""A JSON header holding malformed UTF-8 decodes with U+FFFD in its place, as 4.9.3 reads it (the header
bytes become a String through ``new String(data, UTF_8)`` before fastjson parses it), instead of failing the
frame and closing the connection: the C++ 1.x client writes a GBK message key into the header as raw bytes.
What is still not JSON after the replacement stays a ProtocolError.
"""

from __future__ import annotations

import struct

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting.frame_decoder import FrameDecoder, decode_command

GBK_KEY = "\u4f60\u597d".encode("gbk")  # b"\xc4\xe3\xba\xc3": not UTF-8


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), len(header)) + header + body


def test_malformed_utf8_in_header_strings_is_replaced_not_refused() -> None:
    header = (b'{"code":310,"flag":0,"language":"CPP","opaque":7,"version":395,"remark":"r\xff",'
              b'"extFields":{"b":"T","i":"KEYS\x01' + GBK_KEY + b'\x02"}}')
    command = decode_command(json_frame(header, b"body")[4:])
    assert (command.code, command.opaque, command.body) == (310, 7, b"body")
    assert command.remark == "r\ufffd"
    assert command.ext_fields["b"] == "T"
    key = command.ext_fields["i"].split("\x01")[1].rstrip("\x02")
    assert key and set(key) == {"\ufffd"}


def test_the_stream_decoder_goes_on_after_a_header_with_malformed_utf8() -> None:
    decoder = FrameDecoder()
    decoder.feed(json_frame(b'{"code":30,"opaque":1,"extFields":{"topic":"\xc4\xe3"}}')
                 + json_frame(b'{"code":30,"opaque":2,"extFields":{"topic":"T"}}'))
    first, second = decoder.next_command(), decoder.next_command()
    assert first is not None and second is not None
    assert set(first.ext_fields["topic"]) == {"\ufffd"} and second.ext_fields == {"topic": "T"}


@pytest.mark.parametrize("header", [b"\xff\xfe\xfd\xfc", b'\xff{"code":10}', b'{"code":1\xff}'])
def test_what_is_not_json_once_replaced_is_still_a_protocol_error(header: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_command(json_frame(header)[4:])
