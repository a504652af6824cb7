"""Byte-level tests of the remoting frame codec, the command value and the code tables."""

from __future__ import annotations

import json
import struct
import tracemalloc

import pytest

from rocketstore.errors import FrameTooLargeError, ProtocolError
from rocketstore.remoting import (
    MAX_FRAME_BYTES,
    MQ_VERSION,
    PUT_STATUS_RESPONSE_CODES,
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    decode_command,
    encode_command,
    response_code_for_put_status,
)
from rocketstore.remoting.frame_decoder import _RETAINED_BUFFER_BYTES


def json_frame(header: bytes, body: bytes = b"", type_byte: int = 0) -> bytes:
    """A whole frame around raw header bytes, the way any client lays it out."""
    return struct.pack(">iI", 4 + len(header) + len(body), (type_byte << 24) | len(header)) + header + body


def decode_one(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    command = decoder.next_command()
    assert command is not None
    assert decoder.next_command() is None
    assert decoder.buffered_bytes == 0
    return command


# --- the spec's examples, byte for byte --------------------------------------------------------------

JAVA_SEND_RESPONSE = (
    b'{"code":0,"extFields":{"queueId":"1","TRACE_ON":"true","MSG_REGION":"DefaultRegion",'
    b'"msgId":"0A00000100002A9F0000000000001234","queueOffset":"7"},"flag":1,"language":"JAVA",'
    b'"opaque":42,"serializeTypeCurrentRPC":"JSON","version":399}'
)
JAVA_SEND_RESPONSE_EXT = {
    "queueId": "1",
    "TRACE_ON": "true",
    "MSG_REGION": "DefaultRegion",
    "msgId": "0A00000100002A9F0000000000001234",
    "queueOffset": "7",
}


def test_java_success_send_response_is_encoded_byte_for_byte() -> None:
    response = RemotingCommand.response(ResponseCode.SUCCESS, 42, ext_fields=JAVA_SEND_RESPONSE_EXT)

    assert encode_command(response) == json_frame(JAVA_SEND_RESPONSE)


def test_java_success_send_response_decodes_to_its_fields() -> None:
    command = decode_one(json_frame(JAVA_SEND_RESPONSE))

    assert command.code == ResponseCode.SUCCESS
    assert command.opaque == 42
    assert command.flag == 1 and command.is_response and not command.is_oneway
    assert command.language is LanguageCode.JAVA
    assert command.version == MQ_VERSION == 399
    assert command.remark is None
    assert command.ext_fields == JAVA_SEND_RESPONSE_EXT
    assert command.body == b""
    assert command.serialize_type is SerializeType.JSON


CPP_SEND_REQUEST = (
    b'{"code":10,"extFields":{"AccessKey":"","OnsChannel":"","Signature":"",'
    b'"bornTimestamp":"1700000000000","defaultTopic":"TBW102","defaultTopicQueueNums":4,"flag":0,'
    b'"producerGroup":"pg","properties":"TAGS\\u0001tagA\\u0002","queueId":1,"sysFlag":0,'
    b'"topic":"TopicTest"},"flag":0,"language":"CPP","opaque":3,"remark":"","version":63}\n'
)


def test_cpp_header_with_trailing_newline_and_int_ext_fields_decodes() -> None:
    command = decode_one(json_frame(CPP_SEND_REQUEST, b"hello"))

    assert command.code == RequestCode.SEND_MESSAGE
    assert command.language is LanguageCode.CPP
    assert command.version == 63
    assert command.opaque == 3
    assert command.remark == ""
    assert command.body == b"hello"
    assert command.ext_fields == {
        "AccessKey": "",
        "OnsChannel": "",
        "Signature": "",
        "bornTimestamp": "1700000000000",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "flag": "0",
        "producerGroup": "pg",
        "properties": "TAGS\x01tagA\x02",
        "queueId": "1",
        "sysFlag": "0",
        "topic": "TopicTest",
    }


def test_raw_control_characters_inside_json_strings_are_accepted() -> None:
    header = b'{"code":10,"extFields":{"properties":"TAGS\x01a\x02"},"opaque":1}'

    assert decode_one(json_frame(header)).ext_fields == {"properties": "TAGS\x01a\x02"}


ALI_ONS_SEND_REQUEST = (
    b'{"code":310,"language":"JAVA","opaque":7,"flag":0,"version":121,"extFields":{"a":"pg",'
    b'"b":"TopicTest","c":"TBW102","d":4,"e":0,"f":0,"g":1700000000000,"h":0,'
    b'"i":"TAGS\\u0001null\\u0002","k":false,"x":true}}'
)


def test_ali_ons_header_numbers_and_booleans_are_stringified_like_fastjson() -> None:
    command = decode_one(json_frame(ALI_ONS_SEND_REQUEST))

    assert command.code == RequestCode.SEND_MESSAGE_V2
    assert command.version == 121
    assert command.remark is None
    assert command.ext_fields == {
        "a": "pg",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": "TAGS\x01null\x02",
        "k": "false",
        "x": "true",
    }


def test_float_ext_values_are_stringified_like_java_bigdecimal() -> None:
    header = b'{"code":10,"extFields":{"a":1.5,"b":1e3,"c":-0}}'

    assert decode_one(json_frame(header)).ext_fields == {"a": "1.5", "b": "1E+3", "c": "0"}


def test_null_ext_values_are_dropped() -> None:
    header = b'{"code":10,"extFields":{"a":null,"b":"x"}}'

    assert decode_one(json_frame(header)).ext_fields == {"b": "x"}


@pytest.mark.parametrize("ext", [b"", b',"extFields":null', b',"extFields":{}'])
def test_missing_null_or_empty_ext_fields_decode_as_empty_dict(ext: bytes) -> None:
    assert decode_one(json_frame(b'{"code":34' + ext + b"}")).ext_fields == {}


@pytest.mark.parametrize(("remark", "expected"), [(b'""', ""), (b"null", None), (b'"busy"', "busy")])
def test_remark_empty_null_or_text_is_kept_as_sent(remark: bytes, expected: str | None) -> None:
    assert decode_one(json_frame(b'{"code":2,"remark":' + remark + b"}")).remark == expected


def test_unknown_keys_and_serialize_type_current_rpc_are_ignored() -> None:
    header = b'{"code":34,"serializeTypeCurrentRPC":"ROCKETMQ","future":[1,{"x":2}],"opaque":5}'
    command = decode_one(json_frame(header))

    assert command.serialize_type is SerializeType.JSON
    assert command.opaque == 5


def test_absent_scalar_keys_take_java_defaults() -> None:
    command = decode_one(json_frame(b'{"code":34}'))

    assert (command.language, command.version, command.opaque, command.flag) == (LanguageCode.JAVA, 0, 0, 0)


def test_numeric_strings_are_accepted_for_int_keys() -> None:
    command = decode_one(json_frame(b'{"code":"10","opaque":"-3","flag":"+2"}'))

    assert (command.code, command.opaque, command.flag) == (10, -3, 2)
    assert command.is_oneway


def test_unknown_language_name_decodes_as_other() -> None:
    assert decode_one(json_frame(b'{"code":34,"language":"RUST"}')).language is LanguageCode.OTHER


def test_language_given_as_ordinal_is_accepted() -> None:
    assert decode_one(json_frame(b'{"code":34,"language":3}')).language is LanguageCode.PYTHON


def test_unknown_request_codes_decode_as_plain_ints() -> None:
    command = decode_one(json_frame(b'{"code":9999}'))

    assert command.code == 9999 and not command.is_response


# --- JSON output rules ----------------------------------------------------------------------------------


def test_json_output_omits_null_remark_and_empty_ext_fields() -> None:
    header = encode_command(RemotingCommand.request(RequestCode.HEART_BEAT, opaque=1))[8:]

    assert header == (
        b'{"code":34,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":399}'
    )


def test_json_output_keeps_an_empty_remark() -> None:
    header = encode_command(RemotingCommand.response(1, 2, remark=""))[8:]

    assert b'"remark":""' in header


def test_json_output_writes_non_ascii_as_raw_utf8_without_escapes() -> None:
    frame = encode_command(RemotingCommand.request(10, {"topic": "主题"}, remark="é"))

    assert "主题".encode() in frame and "é".encode() in frame
    assert b"\\u" not in frame


def test_json_output_writes_lone_surrogates_as_question_marks_as_java_does() -> None:
    frame = encode_command(RemotingCommand.request(10, {"k": "a\ud800b"}))

    assert decode_one(frame).ext_fields == {"k": "a?b"}


def test_json_output_renders_non_string_ext_values_as_java_strings() -> None:
    ext: dict[str, object] = {"i": 4, "f": False, "t": True, "n": None}
    command = RemotingCommand.request(10, ext)  # type: ignore[arg-type]
    header = json.loads(encode_command(command)[8:])

    assert header["extFields"] == {"i": "4", "f": "false", "t": "true"}


@pytest.mark.parametrize(
    "command",
    [
        RemotingCommand.request(10, {"k": [1]}),  # type: ignore[dict-item]
        RemotingCommand(code=2**31),
        RemotingCommand(code=True),
        RemotingCommand(code=10, opaque=-(2**31) - 1),
        RemotingCommand(code=10, language=99),  # type: ignore[arg-type]
        RemotingCommand(code=10, serialize_type=5),  # type: ignore[arg-type]
        RemotingCommand(code=40000, serialize_type=SerializeType.ROCKETMQ),
        RemotingCommand(code=10, version=40000, serialize_type=SerializeType.ROCKETMQ),
        RemotingCommand(code=10, ext_fields={"k" * 40000: "v"}, serialize_type=SerializeType.ROCKETMQ),
    ],
)
def test_unrepresentable_commands_raise_protocol_error_on_encode(command: RemotingCommand) -> None:
    with pytest.raises(ProtocolError):
        encode_command(command)


# --- ROCKETMQ binary header ---------------------------------------------------------------------------

def binary_pull_header() -> bytes:
    ext = b"\x00\x05topic\x00\x00\x00\x01T" + b"\x00\x07queueId\x00\x00\x00\x013"
    return (
        struct.pack(">hbhii", 11, 1, 63, 9, 0)
        + struct.pack(">i", 2)
        + b"ok"
        + struct.pack(">i", len(ext))
        + ext
    )


def test_binary_header_decodes_from_hand_built_bytes() -> None:
    command = decode_one(json_frame(binary_pull_header(), b"payload", type_byte=1))

    assert command == RemotingCommand(
        code=11,
        language=LanguageCode.CPP,
        version=63,
        opaque=9,
        flag=0,
        remark="ok",
        ext_fields={"topic": "T", "queueId": "3"},
        body=b"payload",
        serialize_type=SerializeType.ROCKETMQ,
    )


def test_binary_header_encodes_to_hand_built_bytes() -> None:
    command = RemotingCommand(
        code=11,
        language=LanguageCode.CPP,
        version=63,
        opaque=9,
        remark="ok",
        ext_fields={"topic": "T", "queueId": "3"},
        body=b"payload",
        serialize_type=SerializeType.ROCKETMQ,
    )

    assert encode_command(command) == json_frame(binary_pull_header(), b"payload", type_byte=1)


def test_binary_header_negative_lengths_mean_absent_as_in_java() -> None:
    header = struct.pack(">hbhiii", 34, 0, 399, 1, 0, -5) + struct.pack(">i", -1)
    command = decode_one(json_frame(header, type_byte=1))

    assert command.remark is None and command.ext_fields == {}


def test_binary_header_empty_remark_decodes_as_none() -> None:
    frame = encode_command(RemotingCommand(code=1, remark="", serialize_type=SerializeType.ROCKETMQ))

    assert decode_one(frame).remark is None


def test_binary_header_malformed_utf8_is_replaced_as_java_does() -> None:
    ext = b"\x00\x01k\x00\x00\x00\x01\xff"
    header = struct.pack(">hbhiii", 34, 0, 399, 1, 0, 0) + struct.pack(">i", len(ext)) + ext

    assert decode_one(json_frame(header, type_byte=1)).ext_fields == {"k": "\ufffd"}


@pytest.mark.parametrize(
    "header",
    [
        b"\x00\x0b\x01",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 10) + b"short",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0),
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 50) + b"\x00",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 3) + b"\xff\xff\x00",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 1) + b"\x00",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 5) + b"\x00\x01k\x00\x00",
        struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 7) + b"\x00\x00\xff\xff\xff\xff\x00",
    ],
)
def test_malformed_binary_headers_raise_protocol_error(header: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_command(json_frame(header, type_byte=1)[4:])


# --- framing -----------------------------------------------------------------------------------------------


def test_header_length_word_high_byte_selects_the_serialize_type() -> None:
    frame = encode_command(RemotingCommand(code=34, serialize_type=SerializeType.ROCKETMQ))

    assert frame[4] == 1
    assert decode_command(frame[4:]).serialize_type is SerializeType.ROCKETMQ


@pytest.mark.parametrize("type_byte", [2, 0x7F, 0xFF])
def test_unknown_serialize_type_byte_raises_protocol_error(type_byte: int) -> None:
    with pytest.raises(ProtocolError):
        decode_command(json_frame(b'{"code":34}', type_byte=type_byte)[4:])


@pytest.mark.parametrize(
    "header",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'"code"',
        # ({} and {"code":null} are request code 0, as 4.9.3 reads them: test_hunt30_edges_header_without_code)
        b'{"code":true}',
        b'{"code":1.0}',
        b'{"code":"ten"}',
        b'{"code":"' + b"1" * 5000 + b'"}',
        b'{"code":2147483648}',
        b'{"code":10,"opaque":-2147483649}',
        b'{"code":10,"flag":[]}',
        b'{"code":10,"language":{}}',
        b'{"code":10,"extFields":[1]}',
        b'{"code":10,"extFields":{"k":NaN}}',
        b'{"code":Infinity}',
        b'\xff{"code":10}',  # malformed UTF-8 is replaced (U+FFFD), as Java's new String does: still not JSON
        b"\xef\xbb\xbf{\"code\":10}",
        b'{"code":10} trailing',
        b'{"code":1' + b"0" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_malformed_json_headers_raise_protocol_error(header: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_command(json_frame(header)[4:])


def test_header_length_beyond_the_frame_raises_protocol_error() -> None:
    frame = struct.pack(">iI", 8, 100) + b"{}{}"

    with pytest.raises(ProtocolError):
        decode_command(frame[4:])


def test_decode_command_accepts_bytearray_and_memoryview() -> None:
    frame = encode_command(RemotingCommand.request(10, {"a": "b"}, b"xyz"))[4:]

    assert decode_command(bytearray(frame)) == decode_command(memoryview(frame)) == decode_command(frame)


def test_decoder_asks_for_more_until_the_frame_is_complete() -> None:
    frame = encode_command(RemotingCommand.request(10, {"a": "b"}, b"xyz", opaque=1))
    decoder = FrameDecoder()

    for byte in frame[:-1]:
        decoder.feed(bytes([byte]))
        assert decoder.next_command() is None
    decoder.feed(frame[-1:])

    assert decoder.next_command() == RemotingCommand.request(10, {"a": "b"}, b"xyz", opaque=1)
    assert decoder.next_command() is None


def test_decoder_returns_several_frames_from_one_chunk_in_order() -> None:
    commands = [RemotingCommand.request(34, opaque=n) for n in range(5)]
    decoder = FrameDecoder()
    decoder.feed(b"".join(encode_command(c) for c in commands) + b"\x00\x00")

    assert [decoder.next_command() for _ in range(5)] == commands
    assert decoder.next_command() is None
    assert decoder.buffered_bytes == 2


def test_over_long_declared_length_fails_before_anything_is_allocated() -> None:
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        decoder.feed(struct.pack(">i", 0x7FFFFFF0))
        with pytest.raises(FrameTooLargeError) as caught:
            decoder.next_command()
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert caught.value.length_bytes == 0x7FFFFFF0 + 4
    assert caught.value.limit_bytes == MAX_FRAME_BYTES == 16_777_216
    assert peak_bytes < 1_000_000


def test_frame_limit_counts_the_length_prefix_as_netty_does() -> None:
    at_limit = FrameDecoder()
    at_limit.feed(struct.pack(">i", MAX_FRAME_BYTES - 4))
    assert at_limit.next_command() is None  # waits for the rest

    over_limit = FrameDecoder()
    over_limit.feed(struct.pack(">i", MAX_FRAME_BYTES - 3))
    with pytest.raises(FrameTooLargeError):
        over_limit.next_command()


def test_max_frame_length_is_a_constructor_argument() -> None:
    frame = encode_command(RemotingCommand.request(10, body=b"x" * 100))
    small = FrameDecoder(max_frame_bytes=64)
    small.feed(frame)

    assert small.max_frame_bytes == 64
    with pytest.raises(FrameTooLargeError):
        small.next_command()


@pytest.mark.parametrize("length", [-1, -(2**31), 0, 3])
def test_negative_or_tiny_frame_lengths_raise_protocol_error(length: int) -> None:
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">i", length) + b"\x00" * 8)

    with pytest.raises(ProtocolError):
        decoder.next_command()


def test_decoder_stays_failed_after_a_protocol_error() -> None:
    decoder = FrameDecoder()
    decoder.feed(json_frame(b"garbage"))
    with pytest.raises(ProtocolError) as first:
        decoder.next_command()

    decoder.feed(encode_command(RemotingCommand.request(34)))
    with pytest.raises(ProtocolError) as second:
        decoder.next_command()

    assert second.value is first.value
    assert decoder.buffered_bytes == 0


def receive(decoder: FrameDecoder, data: bytes) -> None:
    """*data* the way a transport delivers it: written into the decoder's own buffer, a view at a time."""
    while data:
        with decoder.writable_buffer() as view:
            size = min(len(view), len(data))
            view[:size] = data[:size]
        decoder.wrote(size)
        data = data[size:]


def test_decoder_releases_the_buffer_of_a_frame_above_the_retained_size() -> None:
    big = RemotingCommand.request(10, body=b"b" * (4 << 20))  # RocketMQ's largest message
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        receive(decoder, encode_command(big))
        command = decoder.next_command()
        assert command == big
        del command
        held_bytes, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert 4 << 20 > _RETAINED_BUFFER_BYTES
    assert peak_bytes > 4 << 20  # the frame was buffered whole
    assert held_bytes < _RETAINED_BUFFER_BYTES // 2
    small = RemotingCommand.request(11, body=b"s")
    receive(decoder, encode_command(small))
    assert decoder.next_command() == small


def test_decoder_keeps_its_buffer_for_frames_up_to_the_retained_size() -> None:
    answer = RemotingCommand.response(0, 1, body=b"p" * (_RETAINED_BUFFER_BYTES - 1000))
    decoder = FrameDecoder()
    receive(decoder, encode_command(answer))
    assert decoder.next_command() == answer
    buffer = decoder._buffer

    for _ in range(3):
        receive(decoder, encode_command(answer))
        assert decoder.next_command() == answer

    assert decoder._buffer is buffer  # neither freed nor grown again between frames


def test_decoder_offers_room_for_the_whole_frame_once_its_length_arrived() -> None:
    # a frame up to 64 KiB; beyond, the buffer grows as the frame arrives (test_hunt29_adversary_frame_reserve)
    frame = encode_command(RemotingCommand.request(10, body=b"x" * 60_000))
    decoder = FrameDecoder()
    with decoder.writable_buffer() as view:
        view[:8] = frame[:8]
    decoder.wrote(8)

    with decoder.writable_buffer() as view:
        assert len(view) >= len(frame) - 8


def test_a_declared_huge_frame_does_not_reserve_its_length_before_it_arrives() -> None:
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">i", MAX_FRAME_BYTES - 4))

    with decoder.writable_buffer() as view:
        assert len(view) < _RETAINED_BUFFER_BYTES
    assert decoder.next_command() is None


def test_failed_decoder_discards_what_the_transport_writes() -> None:
    decoder = FrameDecoder()
    decoder.feed(json_frame(b"garbage"))
    with pytest.raises(ProtocolError) as first:
        decoder.next_command()

    receive(decoder, encode_command(RemotingCommand.request(34)))

    assert decoder.buffered_bytes == 0
    with pytest.raises(ProtocolError) as second:
        decoder.next_command()
    assert second.value is first.value


# --- the command value -----------------------------------------------------------------------------------


def test_request_flags_mark_oneway_and_not_response() -> None:
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True)

    assert oneway.flag == 2 and oneway.is_oneway and not oneway.is_response
    assert RemotingCommand.request(10).flag == 0


def test_response_echoes_the_request_opaque_and_sets_flag_bit_zero() -> None:
    request = RemotingCommand.request(10, {"a": "b"}, language=LanguageCode.CPP, version=63, opaque=77)
    response = request.make_response(ResponseCode.SUCCESS, ext_fields={"queueId": "1"}, body=b"b")

    assert response.opaque == 77
    assert response.flag == 1 and response.is_response
    assert (response.language, response.version) == (LanguageCode.JAVA, 399)
    assert response.ext_fields == {"queueId": "1"} and response.body == b"b"


def test_response_to_a_json_request_is_json_even_when_binary_is_preferred() -> None:
    request = RemotingCommand.request(10, opaque=1)

    response = request.make_response(0, preferred_serialize_type=SerializeType.ROCKETMQ)

    assert response.serialize_type is SerializeType.JSON


def test_response_to_a_binary_request_uses_the_preferred_type_json_by_default() -> None:
    request = RemotingCommand.request(10, opaque=1, serialize_type=SerializeType.ROCKETMQ)

    assert request.make_response(0).serialize_type is SerializeType.JSON
    binary = request.make_response(0, preferred_serialize_type=SerializeType.ROCKETMQ)
    assert binary.serialize_type is SerializeType.ROCKETMQ


def test_with_opaque_returns_a_copy_with_the_new_id() -> None:
    request = RemotingCommand.request(10, {"a": "b"})

    assert request.with_opaque(9).opaque == 9 and request.opaque == 0


def test_commands_are_hashable_despite_their_ext_fields_dict() -> None:
    assert hash(RemotingCommand.request(10, {"a": "b"})) == hash(RemotingCommand.request(10, {"a": "c"}))


# --- code tables -------------------------------------------------------------------------------------------


def test_language_codes_have_the_binary_ordinals_of_the_spec() -> None:
    names = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS"]

    assert [(language.name, language.value) for language in LanguageCode] == list(
        zip(names, range(12), strict=True)
    )


def test_serialize_types_and_version_match_java_4_9_3() -> None:
    assert (SerializeType.JSON, SerializeType.ROCKETMQ) == (0, 1)
    assert MQ_VERSION == 399


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("PUT_OK", 0),
        ("FLUSH_DISK_TIMEOUT", 10),
        ("FLUSH_SLAVE_TIMEOUT", 12),
        ("SLAVE_NOT_AVAILABLE", 11),
        ("CREATE_MAPEDFILE_FAILED", 1),
        ("MESSAGE_ILLEGAL", 13),
        ("PROPERTIES_SIZE_EXCEEDED", 13),
        ("SERVICE_NOT_AVAILABLE", 14),
        ("OS_PAGECACHE_BUSY", 1),
        ("LMQ_CONSUME_QUEUE_NUM_EXCEEDED", 1),
        ("UNKNOWN_ERROR", 1),
    ],
)
def test_put_status_names_map_to_send_response_codes(status: str, code: int) -> None:
    assert PUT_STATUS_RESPONSE_CODES[status] == code
    assert response_code_for_put_status(status) == code


def test_unlisted_put_status_maps_to_system_error() -> None:
    assert response_code_for_put_status("SOMETHING_NEW") is ResponseCode.SYSTEM_ERROR


def test_request_and_response_codes_cover_the_spec_anchors() -> None:
    assert RequestCode.SEND_MESSAGE_V2 == 310 and RequestCode.SEND_BATCH_MESSAGE == 320
    assert RequestCode.GET_ROUTEINFO_BY_TOPIC == 105 and RequestCode.ADD_WRITE_PERM_OF_BROKER == 327
    assert ResponseCode.PULL_OFFSET_MOVED == 21 and ResponseCode.NO_MESSAGE == 208
