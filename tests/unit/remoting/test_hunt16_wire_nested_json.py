"""A JSON header whose extFields values or remark are objects or arrays: 4.9.3 decodes headers with fastjson,
which reads any JSON value into a String field (StringCodec: a parsed JSONObject/JSONArray's toString()), so
the request is served with the value's compact JSON text; it is not a decode error that closes the
connection."""

from __future__ import annotations

import struct

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting.frame_decoder import FrameDecoder, decode_command


def frame(header: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(header), len(header)) + header


HEADER = (b'{"code":10,"extFields":{"o":{"b":1,"n":null,"f":1.50,"s":"a\\"\\u00e9"},'
          b'"a":[1,null,"x",false,{"c":[]}],"e":{},"plain":"p"},"flag":0,"opaque":7,"remark":["r",2]}')
EXPECTED_EXT = {"o": '{"b":1,"f":1.50,"s":"a\\"\u00e9"}', "a": '[1,null,"x",false,{"c":[]}]', "e": "{}",
                "plain": "p"}


def test_object_and_array_values_become_their_json_text() -> None:
    command = decode_command(frame(HEADER)[4:])
    assert command.ext_fields == EXPECTED_EXT
    assert command.remark == '["r",2]'
    assert command.opaque == 7


@pytest.mark.parametrize("split", ["whole", "bytewise", "trailing"])
def test_the_stream_decoder_reads_them_in_any_split(split: str) -> None:
    data = frame(HEADER) + (frame(b'{"code":11}')[:6] if split == "trailing" else b"")
    decoder = FrameDecoder()
    commands = []
    chunks = [data[i:i + 1] for i in range(len(data))] if split == "bytewise" else [data]
    for chunk in chunks:
        decoder.feed(chunk)
        while (command := decoder.next_command()) is not None:
            commands.append(command)
    assert [c.ext_fields for c in commands] == [EXPECTED_EXT]


def test_a_value_nested_past_the_decoders_depth_is_still_a_protocol_error() -> None:
    deep = b'{"code":10,"extFields":{"k":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    with pytest.raises(ProtocolError):
        decode_command(frame(deep)[4:])
