"""RegisterBrokerBody.decode_without_topics, the name server's read of a registration whose topics it will
not take: for every body a broker writes (plain, compressed, the older wrapper-only form) it answers the
same data version and filter servers as a whole decode; for any other layout or any bytes it answers None
(the caller then decodes whole) and never raises."""

from __future__ import annotations

import struct
import zlib

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import ProtocolError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig

CASES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAME = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
#: what 4.9.3 allows in a topic name (the compressed form separates fields with spaces)
TOPIC = st.from_regex(r"[%|a-zA-Z0-9_-]{1,20}", fullmatch=True)
LONG = st.integers(0, 2**63 - 1)


@st.composite
def bodies(draw: st.DrawFn) -> RegisterBrokerBody:
    names = draw(st.lists(TOPIC, max_size=8, unique=True))
    configs = {n: TopicConfig(n, draw(st.integers(0, 64)), draw(st.integers(0, 64)), draw(st.integers(0, 7)))
               for n in names}
    filters = tuple(draw(st.lists(NAME, max_size=3)))
    return RegisterBrokerBody(configs, DataVersion(draw(LONG), draw(LONG)), filters)


@CASES
@given(bodies(), st.booleans())
def test_it_reads_what_a_whole_decode_reads_but_the_topics(body: RegisterBrokerBody, compressed: bool) -> None:
    wire = body.encode_compressed() if compressed else body.encode()
    slim = RegisterBrokerBody.decode_without_topics(wire, compressed=compressed)
    whole = RegisterBrokerBody.decode(wire, compressed=compressed)
    assert slim is not None and slim.topic_configs == {}
    assert (slim.data_version, slim.filter_server_list) == (whole.data_version, whole.filter_server_list)


@CASES
@given(bodies())
def test_an_old_broker_s_wrapper_alone_is_read_too(body: RegisterBrokerBody) -> None:
    wire = fastjson.dumps(body.wrapper_json())
    slim = RegisterBrokerBody.decode_without_topics(wire, version=36)
    assert slim is not None and (slim.data_version, slim.filter_server_list) == (body.data_version, ())


def test_other_layouts_are_left_to_the_whole_decode() -> None:
    version = '{"counter":2,"timestamp":3}'
    for text in (
        '{"topicConfigSerializeWrapper":{"dataVersion":' + version + ',"topicConfigTable":{}},"filterServerList":[]}',
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"topicConfigTable":{},"dataVersion":' + version + '}}',
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":' + version + '}}',
        '{"dataVersion":' + version + ',"topicConfigTable":{}}',  # the wrapper alone from a broker >= 37
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{0:1},"topicConfigTable":{}}}',
        '{"filterServerList":{},"topicConfigSerializeWrapper":{"dataVersion":' + version + ',"topicConfigTable":{}}}',
        "", "[]", "{", '{"filterServerList":' + "[" * 60_000,
    ):
        assert RegisterBrokerBody.decode_without_topics(text.encode()) is None, text
    # whitespace between the tokens is fine
    spaced = ' { "filterServerList" : [ "a" ] ,\n "topicConfigSerializeWrapper" : { "dataVersion" : ' + version + \
        ' , "topicConfigTable" : {} } }'
    slim = RegisterBrokerBody.decode_without_topics(spaced.encode())
    assert slim is not None and slim.data_version == DataVersion(3, 2) and slim.filter_server_list == ("a",)


def test_a_compressed_body_that_does_not_add_up_is_left_to_the_whole_decode() -> None:
    version = b'{"counter":1,"timestamp":2}'
    good = struct.pack(">i", len(version)) + version + struct.pack(">i", 1) + struct.pack(">i", 3) + b"t 1"
    assert RegisterBrokerBody.decode_without_topics(zlib.compress(good), compressed=True) is not None
    for raw in (good[:-1], good + b"x", struct.pack(">i", len(version)) + version + struct.pack(">i", 2) + good[-7:]):
        assert RegisterBrokerBody.decode_without_topics(zlib.compress(raw), compressed=True) is None
    # a body that does not inflate at all is decode's ProtocolError at once (inflating it again would not help)
    with pytest.raises(ProtocolError, match="does not inflate"):
        RegisterBrokerBody.decode_without_topics(b"not zlib", compressed=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.booleans(), st.integers(0, 400))
def test_any_bytes_give_a_body_or_none(data: bytes, compressed: bool, version: int) -> None:
    for wire in (data, zlib.compress(data)):
        try:
            slim = RegisterBrokerBody.decode_without_topics(wire, compressed=compressed, version=version)
        except ProtocolError:
            assert compressed  # only a compressed body that does not inflate (decode's own error)
            continue
        assert slim is None or slim.topic_configs == {}
