"""A send request's header (SEND_MESSAGE_V2 as our producer and 4.9.3's Java client write it) is read by an
exact-layout match instead of the general JSON decoder: the broker reads one per send.  Whatever the match
takes must read as the general decoder reads it, and anything else must go to the general decoder."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import ProtocolError
from rocketstore.remoting import RemotingCommand, decode_command, frame_decoder
from rocketstore.remoting.templates import JsonRequestTemplate

# captured from 4.9.3's Java client (DefaultMQProducer.send of Message(topic, "TagA", body)), read off the
# socket of the broker it sent to (strace); the second with keys "k1 k2"
JAVA_SEND = (
    '{"code":310,"extFields":{"a":"pg-jsend","b":"SendPathT","c":"TBW102","d":"4","e":"2","f":"0",'
    '"g":"1795924206868","h":"0","i":"UNIQ_KEY\\u0001FD0000000000000000000000000000021FEA5FFD2B279104BD140000'
    '\\u0002WAIT\\u0001true\\u0002TAGS\\u0001TagA","j":"0","k":"false","m":"false"},"flag":0,"language":"JAVA",'
    '"opaque":4,"serializeTypeCurrentRPC":"JSON","version":399}')
JAVA_KEYED_SEND = (
    '{"code":310,"extFields":{"a":"pg-jsend","b":"SendPathT","c":"TBW102","d":"4","e":"1","f":"0",'
    '"g":"1795924206954","h":"0","i":"KEYS\\u0001k1 k2\\u0002UNIQ_KEY\\u0001FD0000000000000000000000000000021FE'
    'A5FFD2B279104BD6A0003\\u0002WAIT\\u0001true\\u0002TAGS\\u0001TagA","j":"0","k":"false","m":"false"},'
    '"flag":0,"language":"JAVA","opaque":10,"serializeTypeCurrentRPC":"JSON","version":399}')
BODY = b"hello0"

CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _frame_of(header: str, body: bytes = BODY) -> bytes:
    """The frame without its total-length word (what decode_command takes)."""
    data = header.encode()
    return struct.pack(">I", len(data)) + data + body


def _general_decode(frame: bytes) -> RemotingCommand:
    """decode_command through the general JSON path: a space after the header (JSON whitespace, which the
    general decoder accepts) keeps the exact-layout matches from applying."""
    (word,) = struct.unpack_from(">I", frame)
    end = 4 + (word & 0xFFFFFF)
    return decode_command(struct.pack(">I", word + 1) + frame[4:end] + b" " + frame[end:])


def _outcome(frame: bytes, decode=decode_command) -> object:  # type: ignore[no-untyped-def]
    try:
        command = decode(frame)
    except ProtocolError:
        return ProtocolError
    # the extFields' order too (the general decoder keeps the header's)
    return command, list(command.ext_fields.items())


class _NoGeneralDecoder:
    def raw_decode(self, text: str) -> object:
        raise AssertionError(f"the general JSON decoder read {text[:60]!r}")

    decode = raw_decode


@pytest.mark.parametrize("header", [JAVA_SEND, JAVA_KEYED_SEND])
def test_a_java_clients_send_request_takes_the_fast_path(header: str, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame_of(header)
    expected = _outcome(frame, _general_decode)
    monkeypatch.setattr(frame_decoder, "_JSON_DECODER", _NoGeneralDecoder())
    command = decode_command(frame)
    assert _outcome(frame) == expected
    assert command.ext_fields["i"].startswith(("UNIQ_KEY\x01FD", "KEYS\x01k1 k2\x02UNIQ_KEY\x01"))
    assert (command.code, command.opaque, command.version, command.flag, command.body) == (
        310, int(header.split('"opaque":')[1].split(",")[0]), 399, 0, BODY)


def _our_template() -> JsonRequestTemplate:
    """The template our producer sends a plain message with (the keys and order of _ext_fields_v2)."""
    ext = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": None, "h": "0", "i": None,
           "j": "0", "k": "false", "m": "false"}
    return JsonRequestTemplate(310, ext, ("g", "i"))


def test_our_producers_send_request_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _our_template().encode(("1795924206868", "UNIQ_KEY\x01C0A80001\x02WAIT\x01true\x02TAGS\x01TagA"),
                                   BODY, 7)[4:]
    expected = _outcome(frame, _general_decode)
    monkeypatch.setattr(frame_decoder, "_JSON_DECODER", _NoGeneralDecoder())
    assert _outcome(frame) == expected


@pytest.mark.parametrize("header", [
    JAVA_SEND.replace("TagA", "Tag\\u0041"),  # other escapes in the properties: the general path
    JAVA_SEND.replace("TagA", 'Tag\\"A'),
    JAVA_SEND.replace("TagA", "Tag\\\\"),
    JAVA_SEND.replace("TagA", "Tag\\\\u0001"),  # an escaped backslash before u0001: not a separator
    JAVA_SEND.replace("TagA", "Tag\\\\\\u0001"),
    JAVA_SEND.replace("TagA", "Tag\\u000a"),
    JAVA_SEND.replace("TagA", "Tag\\u2028"),
    JAVA_SEND.replace("TagA", "Tag\x01A\x7fé中"),  # raw control and non-ASCII characters: kept verbatim
    JAVA_SEND.replace("TagA", "Tag\\u0001\\u0002"),
    JAVA_SEND.replace('"TagA"', '"TagA\\\\"'),
    JAVA_SEND.replace('\\u0002WAIT', '\\",\\"j\\":\\"0\\u0002WAIT'),  # an escaped quote in the properties
    JAVA_SEND.replace("pg-jsend", "pg\\u0001jsend"),  # an escape in another value: the general path
    JAVA_SEND.replace("pg-jsend", 'pg\\"jsend'),
    JAVA_SEND.replace("SendPathT", "Send\\\\PathT"),
    JAVA_SEND.replace('"m":"false"', '"m":"f\\u0061lse"'),
    JAVA_SEND.replace("pg-jsend", "pg\x02jsend"),
    JAVA_SEND.replace('"i":"UNIQ', '"i":"","x":"UNIQ'),
    JAVA_SEND.replace('"k":"false"', '"k":"false","l":"16"'),  # a retry's maxReconsumeTimes
    JAVA_SEND.replace('"k":"false",', ""),
    JAVA_SEND.replace('"e":"2"', '"e":2'),  # C++ style bare numbers
    JAVA_SEND.replace('"code":310', '"code":320'),
    JAVA_SEND.replace('"code":310', '"code":325'),
    JAVA_SEND.replace('"code":310', '"code":0310'),
    JAVA_SEND.replace('"opaque":4', '"opaque":-2147483648'),
    JAVA_SEND.replace('"opaque":4', '"opaque":2147483648'),
    JAVA_SEND.replace('"opaque":4', '"opaque":999999999'),
    JAVA_SEND.replace('"version":399', '"version":-1'),
    JAVA_SEND.replace('"flag":0', '"flag":2'),
    JAVA_SEND.replace('"language":"JAVA"', '"language":"CPP"'),
    JAVA_SEND.replace('"flag":0,', '"flag":0,"remark":"r",'),
    JAVA_SEND + "\n",
    JAVA_SEND[:-1],
    JAVA_SEND.replace("{", " {", 1),
])
def test_send_request_variants_decode_as_the_general_decoder_reads_them(header: str) -> None:
    frame = _frame_of(header)
    assert _outcome(frame) == _outcome(frame, _general_decode)


TRICKY_TEXT = st.text(st.sampled_from('ab"\\%{}u0\x00\x01\x02\x1f\x7f\u00e9\u2028\u4e2d\U0001f600\ud800')
                      | st.characters(), max_size=24)


@CASES
@given(st.tuples(TRICKY_TEXT, TRICKY_TEXT), TRICKY_TEXT, st.integers(-(2**31), 2**31 - 1),
       st.sampled_from([310, 320, 325, 10]))
def test_template_send_requests_decode_as_the_general_decoder_reads_them(values: tuple[str, str], group: str,
                                                                          opaque: int, code: int) -> None:
    ext = {"a": group, "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": None, "h": "0", "i": None,
           "j": "0", "k": "false", "m": "false"}
    frame = JsonRequestTemplate(code, ext, ("g", "i")).encode(values, BODY, opaque)[4:]
    assert _outcome(frame) == _outcome(frame, _general_decode)
