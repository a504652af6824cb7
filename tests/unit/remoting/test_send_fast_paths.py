"""The send path's hand-written shortcuts equal their plain statements: the tuple send-header reader, the
JSON response template, and a connection writing an immediate handler's pre-encoded answer."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import ProtocolError
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode, encode_command
from rocketstore.remoting.codec import JsonResponseTemplate
from rocketstore.remoting.headers import (
    _SEND_V2_NAMES,
    HeaderFieldError,
    parse_send_message_header,
    send_message_header_fields,
)
from rocketstore.remoting.transport import Connection, RemotingServer, RequestRouter, connect, run

CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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
        router = RequestRouter()
        router.add(1000, later, immediate=now)
        server = RemotingServer(router)
        await server.start("127.0.0.1", 0)
        client = await connect(server.address)
        try:
            replies = await asyncio.gather(*(client.request(RemotingCommand.request(1000, {"x": str(i)}), 5)
                                             for i in range(16)))
            assert [(r.code, r.ext_fields) for r in replies] == [(0, {"echo": str(i), "how": "frame"})
                                                                 for i in range(16)]
            await client.oneway(RemotingCommand.request(1000, {"x": "quiet"}))
            reply = await client.request(RemotingCommand.request(1000, {"x": "after"}), 5)
            # the oneway request was served and its answer dropped: the next answer is the next request's
            assert reply.ext_fields["echo"] == "after" and served[-2:] == ["quiet", "after"]
            assert client.pending_count == 0
        finally:
            await client.aclose()
            await server.close()

    run(go())
