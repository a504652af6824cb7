"""The bodies of the group admin requests: GetConsumerStatusBody (object-keyed offset tables, nested per client
in the broker's answer), QueryConsumeTimeSpanBody (with fastjson's *Str getters) and QueryCorrectionOffsetBody
(integer keys, bare as fastjson writes them or quoted as we do)."""

from __future__ import annotations

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting import fastjson
from rocketstore.remoting.consumer_bodies import (
    GetConsumerStatusBody,
    QueueTimeSpan,
    decode_consume_time_span_body,
    decode_correction_offset_body,
    encode_consume_time_span_body,
    encode_correction_offset_body,
)

#: a Java client's GET_CONSUMER_STATUS_FROM_CLIENT answer, as fastjson writes GetConsumerStatusBody
JAVA_CLIENT_ANSWER = (b'{"consumerTable":{},"messageQueueTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:17,'
                      b'{"brokerName":"broker-a","queueId":0,"topic":"T"}:4}}')


def test_a_java_clients_status_answer_is_read() -> None:
    body = GetConsumerStatusBody.decode(JAVA_CLIENT_ANSWER)
    assert body.message_queue_table == {("T", "broker-a", 1): 17, ("T", "broker-a", 0): 4}
    assert body.consumer_table == {}


def test_the_brokers_status_answer_nests_an_object_keyed_table_per_client() -> None:
    body = GetConsumerStatusBody(consumer_table={
        "10.0.0.1@a": {("T", "b", 1): 3, ("T", "b", 0): 2}, "10.0.0.2@b": {}})
    encoded = body.encode()
    assert encoded == (b'{"consumerTable":{"10.0.0.1@a":{{"brokerName":"b","queueId":0,"topic":"T"}:2,'
                       b'{"brokerName":"b","queueId":1,"topic":"T"}:3},"10.0.0.2@b":{}},"messageQueueTable":{}}')
    assert GetConsumerStatusBody.decode(encoded) == body


def test_a_status_table_keyed_by_something_else_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        GetConsumerStatusBody.decode(b'{"messageQueueTable":{"T":1}}')
    with pytest.raises(ProtocolError):
        GetConsumerStatusBody.decode(b'{"consumerTable":[]}')


def test_time_spans_carry_the_string_renderings_fastjson_adds() -> None:
    spans = [QueueTimeSpan(("T", "b", 0), 1_000, 2_000, 1_500, 250), QueueTimeSpan(("T", "b", 1), -1, -1, -1, 0)]
    encoded = encode_consume_time_span_body(spans)
    first = fastjson.loads(encoded)["consumeTimeSpanSet"][0]
    assert list(first) == ["consumeTimeStamp", "consumeTimeStampStr", "delayTime", "maxTimeStamp",
                           "maxTimeStampStr", "messageQueue", "minTimeStamp", "minTimeStampStr"]
    assert first["minTimeStampStr"].endswith(":000") and "#" in first["minTimeStampStr"]
    assert decode_consume_time_span_body(encoded) == spans


def test_correction_offsets_read_bare_and_quoted_integer_keys() -> None:
    assert decode_correction_offset_body(encode_correction_offset_body({1: 5, 0: (1 << 63) - 1})) == \
        {0: (1 << 63) - 1, 1: 5}
    assert decode_correction_offset_body(b'{"correctionOffsets":{0:9,1:5}}') == {0: 9, 1: 5}
    with pytest.raises(ProtocolError):
        decode_correction_offset_body(b'{"correctionOffsets":{"x":1}}')
