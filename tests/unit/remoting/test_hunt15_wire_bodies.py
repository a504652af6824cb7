"""Request bodies with numbers no Java field can hold: the decoders refuse them with ProtocolError (the
broker and name server answer SYSTEM_ERROR, as 4.9.3's fastjson failing to read them does), never with
OverflowError or ValueError escaping as a server traceback, and never by keeping a queue count of 10**21.
"""

from __future__ import annotations

import struct
import zlib

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting.bodies import ConsumeType, HeartbeatData, RegisterBrokerBody, SubscriptionData


def heartbeat(subscription: str = '{"topic":"T"}', consumer_extra: str = "") -> bytes:
    return ('{"clientID":"c1","producerDataSet":[],"consumerDataSet":[{"groupName":"g"' + consumer_extra
            + ',"subscriptionDataSet":[' + subscription + "]}]}").encode()


@pytest.mark.parametrize("subscription", [
    '{"topic":"T","subVersion":1e400}',  # json reads it as float infinity: int() raised OverflowError
    '{"topic":"T","subVersion":-1e400}',
    '{"topic":"T","subVersion":100000000000000000000}',  # past a Java long
    '{"topic":"T","codeSet":[1e400]}',
    '{"topic":"T","codeSet":[2147483648]}',  # codeSet is a Set<Integer>
])
def test_heartbeat_numbers_no_java_field_holds_are_protocol_errors(subscription: str) -> None:
    with pytest.raises(ProtocolError):
        HeartbeatData.decode(heartbeat(subscription))


def test_heartbeat_numbers_at_the_java_limits_are_kept() -> None:
    data = HeartbeatData.decode(heartbeat(
        '{"topic":"T","subVersion":9223372036854775807,"codeSet":[-2147483648,2147483647]}'))
    sub = data.consumers[0].subscriptions[0]
    assert sub == SubscriptionData("T", "*", (), (-2147483648, 2147483647), 9223372036854775807)


def test_an_enum_sent_as_a_digit_int_cannot_read_is_kept_as_its_name() -> None:
    # "²" is a digit to str.isdigit() but not to int(): the ordinal reading raised ValueError
    data = HeartbeatData.decode(heartbeat(consumer_extra=',"consumeType":"\u00b2"'))
    assert data.consumers[0].consume_type == "\u00b2"
    # a real ordinal, also in other scripts' decimal digits, still reads as one
    data = HeartbeatData.decode(heartbeat(consumer_extra=',"consumeType":"\u0660"'))
    assert data.consumers[0].consume_type == ConsumeType.NAMES[0]


@pytest.mark.parametrize("topic_config", [
    '{"readQueueNums":1e400}',
    '{"writeQueueNums":-1e400}',
    '{"readQueueNums":1000000000000000000000}',
    '{"readQueueNums":2147483648}',  # int fields: one past Integer.MAX_VALUE
    '{"perm":-2147483649}',
    '{"topicSysFlag":"9223372036854775808"}',
])
def test_register_body_topic_numbers_past_a_java_int_are_protocol_errors(topic_config: str) -> None:
    body = ('{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":' + topic_config + '},'
            '"dataVersion":{"timestamp":1,"counter":1}},"filterServerList":[]}').encode()
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(body)


@pytest.mark.parametrize("data_version", ['{"timestamp":1e400}', '{"counter":9223372036854775808}'])
def test_register_body_data_versions_past_a_java_long_are_protocol_errors(data_version: str) -> None:
    body = ('{"topicConfigSerializeWrapper":{"topicConfigTable":{},"dataVersion":' + data_version + "}}").encode()
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(body)


def test_register_body_at_the_java_limits_is_kept() -> None:
    body = (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":2147483647,'
            b'"writeQueueNums":-2147483648,"perm":6}},"dataVersion":{"timestamp":9223372036854775807,'
            b'"counter":-9223372036854775808}},"filterServerList":[]}')
    decoded = RegisterBrokerBody.decode(body)
    config = decoded.topic_configs["T"]
    assert (config.read_queue_nums, config.write_queue_nums) == (2147483647, -2147483648)
    assert (decoded.data_version.timestamp_ms, decoded.data_version.counter) == (2**63 - 1, -(2**63))


def _chunk(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


@pytest.mark.parametrize("text", [b"T 2147483648 4 6 SINGLE_TAG", b"T 4 99999999999999999999999 6 SINGLE_TAG"])
def test_compressed_register_body_queue_counts_past_a_java_int_are_protocol_errors(text: bytes) -> None:
    raw = _chunk(b'{"timestamp":1,"counter":1}') + struct.pack(">i", 1) + _chunk(text) + _chunk(b"[]")
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(zlib.compress(raw), compressed=True)
