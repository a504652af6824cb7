"""Hypothesis: the frame decoder's contract on arbitrary input, and encode/decode round trips."""

from __future__ import annotations

import dataclasses
import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import ProtocolError
from rocketstore.remoting import (
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    RequestCode,
    SerializeType,
    decode_command,
    encode_command,
)
from rocketstore.remoting.codec import (
    _encode_json_header,
    _encode_json_header_reference,
    encode_command_parts,
)
from rocketstore.remoting.frame_decoder import _READ_BYTES
from rocketstore.remoting.header_fields import _SEND_V2_NAMES, HeaderFieldError, _decode, _specs
from rocketstore.remoting.send_headers import SendMessageRequestHeader

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
# Lone surrogates cannot be UTF-8 encoded; the codec writes them as '?', so they cannot round trip.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


def drain(decoder: FrameDecoder) -> list[RemotingCommand]:
    """Every command the decoder can give now; only ProtocolError may escape."""
    commands = []
    while (command := decoder.next_command()) is not None:
        commands.append(command)
    return commands


def feed_and_drain_allowing_protocol_errors(chunks: list[bytes], max_frame_bytes: int = 1 << 20) -> None:
    decoder = FrameDecoder(max_frame_bytes)
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            drain(decoder)
    except ProtocolError:
        pass


# --- arbitrary input ----------------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_yield_commands_need_more_or_protocol_error(data: bytes) -> None:
    feed_and_drain_allowing_protocol_errors([data])


@FUZZ
@given(st.lists(st.binary(max_size=64), max_size=20))
def test_arbitrary_chunks_yield_commands_need_more_or_protocol_error(chunks: list[bytes]) -> None:
    feed_and_drain_allowing_protocol_errors(chunks, max_frame_bytes=256)


def framed(header: bytes, body: bytes, type_byte: int) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (type_byte << 24) | len(header)) + header + body


@FUZZ
@given(st.binary(max_size=512), st.binary(max_size=16), st.integers(0, 3))
def test_well_framed_random_headers_never_raise_anything_but_protocol_error(
    header: bytes, body: bytes, type_byte: int
) -> None:
    feed_and_drain_allowing_protocol_errors([framed(header, body, type_byte)])


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
HEADER_KEYS = st.sampled_from(
    ["code", "language", "version", "opaque", "flag", "remark", "extFields", "serializeTypeCurrentRPC"]
)


@FUZZ
@given(
    st.dictionaries(HEADER_KEYS | TEXT, JSON_VALUES, max_size=8),
    st.dictionaries(TEXT, JSON_VALUES, max_size=5),
    st.sampled_from([b"", b"\n", b" "]),
)
def test_json_shaped_headers_decode_or_raise_protocol_error(
    header: dict[str, object], ext: dict[str, object], trailer: bytes
) -> None:
    header = dict(header)
    header.setdefault("extFields", ext)
    raw = json.dumps(header).encode() + trailer
    try:
        command = decode_command(framed(raw, b"", 0)[4:])
    except ProtocolError:
        return
    assert all(type(k) is str and type(v) is str for k, v in command.ext_fields.items())


@FUZZ
@given(st.binary(max_size=64), st.integers(-3, 80), st.integers(-3, 80))
def test_binary_headers_with_random_lengths_decode_or_raise_protocol_error(
    tail: bytes, remark_length: int, ext_length: int
) -> None:
    header = struct.pack(">hbhiii", 10, 1, 63, 1, 0, remark_length) + tail[:remark_length % 8]
    header += struct.pack(">i", ext_length) + tail
    try:
        decode_command(framed(header, b"", 1)[4:])
    except ProtocolError:
        pass


# --- round trips ------------------------------------------------------------------------------------


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    serialize_type = draw(st.sampled_from(SerializeType))
    return RemotingCommand(
        code=draw(INT16),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(INT16),
        opaque=draw(INT32),
        flag=draw(INT32),
        # An empty remark is "no remark" in the binary header; the JSON case keeps "" (a unit test covers it).
        remark=draw(st.none() | TEXT.filter(bool)),
        ext_fields=draw(st.dictionaries(TEXT, TEXT, max_size=6)),
        body=draw(st.binary(max_size=128)),
        serialize_type=serialize_type,
    )


@ROUND_TRIP
@given(commands())
def test_encode_then_decode_returns_the_same_command(command: RemotingCommand) -> None:
    frame = encode_command(command)

    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert decode_command(frame[4:]) == command


@ROUND_TRIP
@given(st.lists(commands(), min_size=1, max_size=5), commands(), st.data())
def test_stream_fed_whole_bytewise_or_chunked_yields_the_same_commands(
    sent: list[RemotingCommand], next_command: RemotingCommand, data: st.DataObject
) -> None:
    stream = b"".join(encode_command(c) for c in sent)
    next_frame = encode_command(next_command)
    # Trailing bytes: a strict prefix of one more frame, which must stay buffered.
    trailing = next_frame[: data.draw(st.integers(0, len(next_frame) - 1), label="trailing")]
    stream += trailing

    whole = FrameDecoder()
    whole.feed(stream)
    assert drain(whole) == sent
    assert whole.buffered_bytes == len(trailing)

    bytewise = FrameDecoder()
    got: list[RemotingCommand] = []
    for index in range(len(stream)):
        bytewise.feed(stream[index : index + 1])
        got.extend(drain(bytewise))
    assert got == sent

    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10), label="cuts"))
    chunked = FrameDecoder()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        chunked.feed(stream[start:end])
        got.extend(drain(chunked))
    assert got == sent

    chunked.feed(next_frame[len(trailing) :])
    assert drain(chunked) == [next_command]


@st.composite
def big_and_small_commands(draw: st.DrawFn) -> RemotingCommand:
    """Commands with bodies from empty to a few times the decoder's least read size."""
    command = draw(commands())
    size = draw(st.sampled_from([0, 1, 100, _READ_BYTES - 20, _READ_BYTES, 3 * _READ_BYTES + 7]))
    return dataclasses.replace(command, body=bytes([size % 251]) * size)


@ROUND_TRIP
@given(st.lists(big_and_small_commands(), min_size=1, max_size=6), st.data())
def test_stream_received_into_the_decoders_buffer_yields_the_same_commands(
    sent: list[RemotingCommand], data: st.DataObject
) -> None:
    """The transport's way in (writable_buffer, partly filled, then wrote), mixed with feed, in any
    chunking; the view stays alive while the frames are decoded, as uvloop releases it only after."""
    stream = b"".join(encode_command(c) for c in sent)
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    position = 0
    while position < len(stream):
        left = len(stream) - position
        if data.draw(st.booleans(), label="feed"):
            size = data.draw(st.integers(1, left), label="fed")
            decoder.feed(stream[position : position + size])
        else:
            view = decoder.writable_buffer()
            assert len(view) >= _READ_BYTES
            size = data.draw(st.integers(1, min(left, len(view))), label="received")
            view[:size] = stream[position : position + size]
            decoder.wrote(size)
            got.extend(drain(decoder))
            view.release()
        position += size
        got.extend(drain(decoder))
    assert got == sent
    assert decoder.buffered_bytes == 0


# --- the hand-written fast paths equal their plain statements ---------------------------------------

# Surrogates included: both encoders must write them as '?'.
ANY_TEXT = st.text(max_size=20)
EXT_VALUES = ANY_TEXT | st.none() | st.integers() | st.booleans()


@st.composite
def json_commands(draw: st.DrawFn) -> tuple[RemotingCommand, int]:
    """Commands the JSON encoder may meet, odd ones included (non-string extFields values, None values,
    IntEnum codes, out-of-range numbers, unknown languages)."""
    number = st.integers(-(2**31), 2**31 - 1) | st.integers() | st.sampled_from([True, RequestCode.SEND_MESSAGE_V2])
    command = RemotingCommand(
        code=draw(number),
        language=draw(st.sampled_from(LanguageCode) | st.integers(-2, 20)),
        version=draw(number),
        opaque=draw(number),
        flag=draw(number),
        remark=draw(st.none() | ANY_TEXT),
        ext_fields=draw(st.dictionaries(ANY_TEXT, EXT_VALUES, max_size=6)),
    )
    return command, draw(number)


@ROUND_TRIP
@given(json_commands())
def test_fast_json_header_encoder_matches_the_reference(case: tuple[RemotingCommand, int]) -> None:
    command, opaque = case
    try:
        expected: bytes | type[ProtocolError] = _encode_json_header_reference(command, opaque)
    except ProtocolError:
        expected = ProtocolError
    try:
        got: bytes | type[ProtocolError] = _encode_json_header(command, opaque)
    except ProtocolError:
        got = ProtocolError
    assert got == expected


@ROUND_TRIP
@given(commands(), INT32)
def test_encoding_with_an_opaque_equals_encoding_the_renumbered_command(command: RemotingCommand,
                                                                       opaque: int) -> None:
    assert encode_command(command, opaque) == encode_command(command.with_opaque(opaque))
    head, body = encode_command_parts(command, opaque)
    assert head + body == encode_command(command.with_opaque(opaque))


DIGITS = st.text(st.sampled_from("0123456789"), min_size=1, max_size=21)
SEND_VALUES = st.none() | DIGITS | st.sampled_from(["-1", "+3", " 1", "true", "TRUE", "1", "", "\u0661"]) | ANY_TEXT


@FUZZ
@given(st.fixed_dictionaries({}, optional={name: SEND_VALUES for name in "abcdefghijklm"}), st.booleans())
def test_fast_send_header_reader_matches_the_generic_reader(fields: dict[str, str], v2: bool) -> None:
    if not v2:
        fields = {v1: fields[v2_name] for v1, v2_name in _SEND_V2_NAMES.items() if v2_name in fields}
    specs = _specs(SendMessageRequestHeader, v2=v2)
    try:
        expected: object = _decode(SendMessageRequestHeader, specs, fields)
    except HeaderFieldError as exc:
        expected = (exc.field_name, exc.reason)
    parse = SendMessageRequestHeader.from_ext_fields_v2 if v2 else SendMessageRequestHeader.from_ext_fields
    try:
        got: object = parse(fields)
    except HeaderFieldError as exc:
        got = (exc.field_name, exc.reason)
    assert got == expected
