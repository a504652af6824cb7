"""The send path's hand-written shortcuts equal their plain statements: the tuple send-header reader, the
JSON response template, and a connection writing an immediate handler's pre-encoded answer."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import ConnectionClosedError, ProtocolError, RequestTimeoutError
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode, decode_command, encode_command
from rocketstore.remoting.codes import MQ_VERSION, LanguageCode, SerializeType
from rocketstore.remoting.command import new_command
from rocketstore.remoting.frame_decoder import _SEND_ANSWER_MATCH
from rocketstore.remoting.header_fields import _SEND_V2_NAMES, HeaderFieldError
from rocketstore.remoting.send_headers import parse_send_message_header, send_message_header_fields
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.templates import JsonRequestTemplate, JsonResponseTemplate
from rocketstore.remoting.transport import Connection, connect, run

CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.asynccontextmanager
async def _serving(code: int, handler: Any, immediate: Any = None) -> AsyncIterator[Connection]:
    """A RemotingServer on 127.0.0.1 answering *code* with *handler* (and *immediate*), and a client
    connected to it; both closed on the way out."""
    router = RequestRouter()
    router.add(code, handler, immediate=immediate)
    server = RemotingServer(router)
    await server.start("127.0.0.1", 0)
    client = await connect(server.address)
    try:
        yield client
    finally:
        await client.aclose()
        await server.close()


# surrogates included: both encoders must write them as '?'
ANY_TEXT = st.text(max_size=20)
DIGITS = st.text(st.sampled_from("0123456789"), min_size=1, max_size=21)
SEND_VALUES = st.none() | DIGITS | st.sampled_from(["-1", "+3", " 1", "true", "TRUE", "1", "", "\u0661"]) | ANY_TEXT
SEND_CODES = st.sampled_from([RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                              int(RequestCode.SEND_MESSAGE_V2)])


@CASES
@given(st.fixed_dictionaries({}, optional={name: SEND_VALUES for name in "abcdefghijklm"}), SEND_CODES)
def test_send_header_fields_are_the_parsed_headers_values(fields: dict[str, str], code: int) -> None:
    if code == RequestCode.SEND_MESSAGE:
        fields = {v1: fields[v2] for v1, v2 in _SEND_V2_NAMES.items() if v2 in fields}
    try:
        header = parse_send_message_header(code, fields)
        expected: object = tuple(getattr(header, f.name) for f in dataclasses.fields(header))
    except HeaderFieldError as exc:
        expected = (exc.field_name, exc.reason)
    try:
        got: object = send_message_header_fields(code, fields)
    except HeaderFieldError as exc:
        got = (exc.field_name, exc.reason)
    assert got == expected


def test_send_header_fields_read_a_cpp_v1_header() -> None:
    ext = {"producerGroup": "CPG", "topic": "BenchTopic", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
           "queueId": "2", "sysFlag": "0", "bornTimestamp": "1795650421063", "flag": "0",
           "properties": "KEYS\x01key-2\x02WAIT\x01true\x02", "reconsumeTimes": "0", "unitMode": "0",
           "batch": "0"}
    assert send_message_header_fields(RequestCode.SEND_MESSAGE, ext) == (
        "CPG", "BenchTopic", "TBW102", 4, 2, 0, 1795650421063, 0, "KEYS\x01key-2\x02WAIT\x01true\x02", 0, False,
        False, None)


KEYS = st.lists(ANY_TEXT, min_size=1, max_size=4, unique=True)


@CASES
@given(KEYS, st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=3), st.data(),
       st.integers(-(2**31), 2**31 - 1) | st.sampled_from(list(ResponseCode)), st.integers(-(2**31), 2**31 - 1))
def test_response_template_frames_equal_encoded_responses(keys: list[str], constant: dict[str, str],
                                                          data: st.DataObject, code: int, opaque: int) -> None:
    constant = {key: value for key, value in constant.items() if key not in keys}
    values = tuple(data.draw(ANY_TEXT) for _ in keys)
    template = JsonResponseTemplate(tuple(keys), constant)
    expected = encode_command(RemotingCommand.response(code, opaque, ext_fields={**dict(zip(keys, values)),
                                                                                 **constant}))
    assert template.encode(code, opaque, values) == expected


def test_send_answer_template_matches_the_java_brokers_layout() -> None:
    template = JsonResponseTemplate(("msgId", "queueId", "queueOffset"),
                                    {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
    frame = template.encode(0, 7, ("C0A8070900002A9F0000000000000000", "3", "42"))
    header = (b'{"code":0,"extFields":{"msgId":"C0A8070900002A9F0000000000000000","queueId":"3","queueOffset":"42",'
              b'"MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA","opaque":7,'
              b'"serializeTypeCurrentRPC":"JSON","version":399}')
    assert frame == (4 + len(header)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header


@pytest.mark.parametrize(("code", "opaque"), [(True, 1), (0, 2**31), (2**31, 0), ("0", 1)])
def test_response_template_refuses_what_the_encoder_refuses(code: object, opaque: object) -> None:
    template = JsonResponseTemplate(("k",), {})
    with pytest.raises(ProtocolError):
        encode_command(RemotingCommand.response(code, opaque, ext_fields={"k": "v"}))  # type: ignore[arg-type]
    with pytest.raises(ProtocolError):
        template.encode(code, opaque, ("v",))  # type: ignore[arg-type]


def test_response_template_needs_distinct_variable_keys() -> None:
    with pytest.raises(ValueError, match="at least one"):
        JsonResponseTemplate((), {"a": "b"})
    with pytest.raises(ValueError, match="distinct"):
        JsonResponseTemplate(("a", "a"), {})
    with pytest.raises(ValueError, match="distinct"):
        JsonResponseTemplate(("a",), {"a": "b"})


def test_an_immediate_handlers_encoded_answer_is_written_as_it_is_and_oneway_requests_get_none() -> None:
    template = JsonResponseTemplate(("echo",), {"how": "frame"})
    served: list[str] = []

    def now(conn: Connection, request: RemotingCommand) -> bytes:
        served.append(request.ext_fields["x"])
        return template.encode(ResponseCode.SUCCESS, request.opaque, (request.ext_fields["x"],))

    async def later(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        raise AssertionError("the immediate path answers every request here")

    async def go() -> None:
        async with _serving(1000, later, immediate=now) as client:
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": str(i)}), 5)
                                             for i in range(16)))
            assert [(r.code, r.ext_fields) for r in replies] == [(0, {"echo": str(i), "how": "frame"})
                                                                 for i in range(16)]
            await client.oneway(RemotingCommand.request(1000, {"x": "quiet"}))
            reply = await client.request(RemotingCommand.request(1000, {"x": "after"}), 5)
            # the oneway request was served and its answer dropped: the next answer is the next request's
            assert reply.ext_fields["echo"] == "after" and served[-2:] == ["quiet", "after"]
            assert client.pending_count == 0

    run(go())


# --- a producer's request frames from a template ----------------------------------------------------

# quotes, backslashes, control characters, '%', non-ASCII and surrogates among the drawn texts
TRICKY_TEXT = st.text(st.sampled_from('ab"\\%{}\x00\x01\x02\x1f\x7f\u00e9\u4e2d\U0001f600\ud800') | st.characters(),
                      max_size=20)
EXT_VALUES = st.none() | TRICKY_TEXT


@CASES
@given(st.dictionaries(TRICKY_TEXT, EXT_VALUES, min_size=1, max_size=6), st.data(),
       st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 2]), st.integers(-(2**31), 2**31 - 1),
       st.binary(max_size=64))
def test_request_template_frames_equal_encoded_requests(ext: dict[str, str | None], data: st.DataObject, code: int,
                                                        flag: int, opaque: int, body: bytes) -> None:
    keys = list(ext)
    variable = tuple(key for key in keys if data.draw(st.booleans())) or (keys[-1],)
    values = tuple(data.draw(TRICKY_TEXT) for _ in variable)
    template = JsonRequestTemplate(code, ext, variable, flag=flag)
    # None values stay: the encoder leaves them out, as Java skips null fields
    filled: dict[str, str] = {**ext, **dict(zip(variable, values))}  # type: ignore[dict-item]
    expected = encode_command(new_command(code, LanguageCode.JAVA, MQ_VERSION, opaque, flag, None, filled, body,
                                          SerializeType.JSON))
    assert template.encode(values, body, opaque) == expected


def test_request_template_writes_a_producers_send_as_encode_command_does() -> None:
    ext = {"a": "group-\u00e9", "b": 'Topic"\\%s', "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "", "h": "0",
           "i": "", "j": "0", "k": "false", "m": "false"}
    template = JsonRequestTemplate(RequestCode.SEND_MESSAGE_V2, ext, ("g", "i"))
    values = ("1795650421063", "TAGS\x01TagA\x02UNIQ_KEY\x01C0A8\x02WAIT\x01true")
    frame = template.encode(values, b"hello", 77)
    command = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {**ext, "g": values[0], "i": values[1]}, b"hello")
    assert frame == encode_command(command, 77)
    assert decode_command(frame[4:]) == command.with_opaque(77)


@pytest.mark.parametrize("opaque", [True, 2**31, -(2**31) - 1, "1"])
def test_request_template_refuses_what_the_encoder_refuses(opaque: object) -> None:
    template = JsonRequestTemplate(10, {"k": "v"}, ("k",))
    with pytest.raises(ProtocolError):
        encode_command(RemotingCommand.request(10, {"k": "v"}), opaque)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError):
        template.encode(("v",), b"", opaque)  # type: ignore[arg-type]


def test_request_template_needs_distinct_variable_keys_of_its_fields_in_order() -> None:
    for variable in [(), ("a", "a"), ("z",), ("b", "a")]:
        with pytest.raises(ValueError):
            JsonRequestTemplate(10, {"a": "1", "b": "2"}, variable)


# --- the send answer's fast decode path -------------------------------------------------------------


def _general_decode(frame: bytes) -> RemotingCommand:
    """decode_command through the general JSON path: a space after the header (JSON whitespace, which the
    general decoder accepts) keeps the send answer's exact-layout match from applying."""
    (word,) = struct.unpack_from(">I", frame, 4)
    end = 8 + (word & 0xFFFFFF)
    spaced = struct.pack(">I", word + 1) + frame[8:end] + b" " + frame[end:]
    return decode_command(spaced)


def _outcome(decode: Callable[[bytes], RemotingCommand], frame: bytes) -> object:
    try:
        return decode(frame)
    except ProtocolError:
        return ProtocolError


ANSWER_KEYS = ("msgId", "queueId", "queueOffset")


@CASES
@given(st.tuples(TRICKY_TEXT, TRICKY_TEXT, TRICKY_TEXT), TRICKY_TEXT, TRICKY_TEXT,
       st.integers(-(2**31), 2**31 - 1) | st.sampled_from(list(ResponseCode)), st.integers(-(2**31), 2**31 - 1))
def test_send_answers_decode_as_the_general_decoder_reads_them(values: tuple[str, str, str], region: str,
                                                               trace: str, code: int, opaque: int) -> None:
    frame = JsonResponseTemplate(ANSWER_KEYS, {"MSG_REGION": region, "TRACE_ON": trace}).encode(code, opaque, values)
    assert _outcome(decode_command, frame[4:]) == _outcome(_general_decode, frame)


ANSWER_FIELD_NAMES = [*ANSWER_KEYS, "MSG_REGION", "TRACE_ON", "extra", "msgid"]


@CASES
@given(st.lists(st.sampled_from(ANSWER_FIELD_NAMES), unique=True, max_size=7), st.data(),
       st.none() | TRICKY_TEXT, st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1),
       st.sampled_from(list(LanguageCode)), st.integers(-(2**31), 2**31 - 1), st.binary(max_size=8))
def test_any_response_decodes_as_the_general_decoder_reads_it(keys: list[str], data: st.DataObject,
                                                               remark: str | None, code: int, opaque: int,
                                                               language: LanguageCode, version: int,
                                                               body: bytes) -> None:
    ext = {key: data.draw(TRICKY_TEXT | st.sampled_from(["3", "42", "DefaultRegion", "true"])) for key in keys}
    command = RemotingCommand.response(code, opaque, ext_fields=ext, remark=remark, body=body)
    frame = encode_command(dataclasses.replace(command, version=version, language=language))
    assert _outcome(decode_command, frame[4:]) == _outcome(_general_decode, frame)


CANONICAL = ('{"code":0,"extFields":{"msgId":"C0A8070900002A9F0000000000000000","queueId":"3","queueOffset":"42",'
             '"MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA","opaque":7,'
             '"serializeTypeCurrentRPC":"JSON","version":399}')


def _frame_of(header: str) -> bytes:
    data = header.encode()
    return struct.pack(">iI", 4 + len(data), len(data)) + data


def test_the_canonical_send_answer_takes_the_fast_path_and_reads_as_the_general_decoder() -> None:
    frame = _frame_of(CANONICAL)
    assert _SEND_ANSWER_MATCH(CANONICAL) is not None
    command = decode_command(frame[4:])
    assert command == _general_decode(frame)
    assert (command.code, command.opaque, command.flag, command.remark, command.version) == (0, 7, 1, None, 399)
    assert list(command.ext_fields.items()) == [
        ("msgId", "C0A8070900002A9F0000000000000000"), ("queueId", "3"), ("queueOffset", "42"),
        ("MSG_REGION", "DefaultRegion"), ("TRACE_ON", "true")]


@pytest.mark.parametrize("header", [
    CANONICAL.replace('"code":0', '"code":1'),  # still the layout: other codes are read by the fast path too
    CANONICAL.replace('"opaque":7', '"opaque":-2147483648'),  # 10 digits: the general path
    CANONICAL.replace('"opaque":7', '"opaque":999999999'),
    CANONICAL.replace('"opaque":7', '"opaque":-999999999'),
    CANONICAL.replace('"code":0', '"code":-0'),
    CANONICAL.replace('"DefaultRegion"', '"Region\u00e9"'),  # an escape: declined
    CANONICAL.replace('"DefaultRegion"', '"Region \"x\""'),
    CANONICAL.replace('"DefaultRegion"', '"Regioné"'),  # raw control and non-ASCII: kept verbatim
    CANONICAL.replace('"flag":1,', '"flag":1,"remark":"r",'),
    CANONICAL.replace('"language":"JAVA","opaque":7', '"language":"JAVA","opaque":7,"remark":null'),
    CANONICAL.replace('"TRACE_ON":"true"', '"TRACE_ON":"true","extra":"x"'),
    CANONICAL.replace('"queueId":"3","queueOffset":"42"', '"queueOffset":"42","queueId":"3"'),
    CANONICAL.replace('"queueId":"3"', '"queueId":3'),
    CANONICAL.replace('"language":"JAVA"', '"language":"CPP"'),
    CANONICAL.replace('"flag":1', '"flag":3'),
    CANONICAL.replace('"code":0', '"code":00'),  # invalid JSON both ways
    CANONICAL.replace('"code":0', '"code":2147483648'),  # out of range both ways
    CANONICAL.replace('"version":399', '"version":-2147483649'),
    CANONICAL.replace('"opaque":7', '"opaque":99999999999'),
    CANONICAL.replace('"opaque":7', '"opaque":٧'),
    CANONICAL.replace('"opaque":7', '"opaque":7.0'),
    CANONICAL + "\n",
    CANONICAL[:-1],
    # escapes inside msgId (read by a looser pattern than the other fields): the general path decides
    CANONICAL.replace('"C0A8070900002A9F', '"C0A8\\"07\\"2A9F'),
    CANONICAL.replace('"C0A8070900002A9F', '"C0A8\\\\'),
    CANONICAL.replace('"C0A8070900002A9F', '"C0A8\\u0041'),
    CANONICAL.replace('0000000000000000"', '\\",\\"queueId\\":\\"9"'),
    CANONICAL.replace('"msgId"', '"msgId"', 1).replace("{", " {", 1),
])
def test_send_answer_variants_decode_as_the_general_decoder_reads_them(header: str) -> None:
    frame = _frame_of(header)
    assert _outcome(decode_command, frame[4:]) == _outcome(_general_decode, frame)


def test_malformed_utf8_in_a_send_answer_is_replaced_as_java_reads_it() -> None:
    # 4.9.3 reads a header through new String(data, UTF_8): a malformed byte becomes U+FFFD (hunt 15)
    data = CANONICAL.encode().replace(b"DefaultRegion", b"Default\xffRegion")
    frame = struct.pack(">iI", 4 + len(data), len(data)) + data
    answer = decode_command(frame[4:])
    assert answer.ext_fields["MSG_REGION"] == "Default\ufffdRegion"
    assert answer == _general_decode(frame)


def test_request_encoded_numbers_the_frame_times_out_and_fails_on_a_closed_connection() -> None:
    template = JsonRequestTemplate(1000, {"x": ""}, ("x",))

    async def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields["x"] == "silent":
            return None  # never answered: the client times out
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields["x"]})

    def broken(opaque: int) -> bytes:
        raise ProtocolError("cannot encode")

    async def go() -> None:
        async with _serving(1000, echo) as client:
            replies = await asyncio.gather(*(
                client.request_encoded(functools.partial(template.encode, (str(i),), b"body"), 1000, 5)
                for i in range(8)))
            assert [r.ext_fields for r in replies] == [{"echo": str(i)} for i in range(8)]
            with pytest.raises(RequestTimeoutError, match="request code 1000"):
                await client.request_encoded(functools.partial(template.encode, ("silent",), b""), 1000, 0.05)
            assert client.pending_count == 0
            with pytest.raises(ProtocolError, match="cannot encode"):
                await client.request_encoded(broken, 1000, 5)
            assert client.pending_count == 0
            reply = await client.request_encoded(functools.partial(template.encode, ("after",), b""), 1000, 5)
            assert reply.ext_fields == {"echo": "after"}
        with pytest.raises(ConnectionClosedError):
            await client.request_encoded(functools.partial(template.encode, ("closed",), b""), 1000, 5)
        assert client.pending_count == 0

    run(go())


def test_request_encoded_timeouts_expire_in_order_among_answered_requests() -> None:
    template = JsonRequestTemplate(1000, {"x": ""}, ("x",))

    async def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields["x"].startswith("silent"):
            return None
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"echo": request.ext_fields["x"]})

    def ask(client: Connection, x: str, timeout_s: float) -> Awaitable[RemotingCommand]:
        return client.request_encoded(functools.partial(template.encode, (x,), b""), 1000, timeout_s)

    async def go() -> None:
        async with _serving(1000, echo) as client:
            for i in range(50):
                assert (await ask(client, str(i), 30)).ext_fields == {"echo": str(i)}
            # a short timeout after many long ones expires before a 1 s request does
            other = asyncio.ensure_future(client.request(RemotingCommand.request(1000, {"x": "silent-other"}), 1))
            with pytest.raises(RequestTimeoutError):
                await ask(client, "silent-short", 0.05)
            assert not other.done()
            with pytest.raises(RequestTimeoutError):
                await other
            # several timeouts among answered requests
            silent = [asyncio.ensure_future(ask(client, f"silent-{i}", 0.05)) for i in range(3)]
            assert (await ask(client, "between", 30)).ext_fields == {"echo": "between"}
            for task in silent:
                with pytest.raises(RequestTimeoutError):
                    await task
            # a shorter timeout behind a longer one expires first
            slow = asyncio.ensure_future(ask(client, "silent-slow", 30))
            await asyncio.sleep(0)
            with pytest.raises(RequestTimeoutError):
                await ask(client, "silent-fast", 0.05)
            assert not slow.done()
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            assert client.pending_count == 0
            assert (await ask(client, "after", 30)).ext_fields == {"echo": "after"}
            with pytest.raises(RequestTimeoutError):
                await ask(client, "silent-last", 0.05)
            assert client.pending_count == 0

    run(go())
