"""fastjson's JSON dialect: bare integer keys, object keys, and what we write back."""

from __future__ import annotations

import json

import pytest

from rocketstore.remoting.bodies import HeartbeatData, build_subscription
from rocketstore.remoting.fastjson import JsonBodyError, dumps, dumps_object_keyed, loads


def test_plain_json_and_bare_integer_keys() -> None:
    assert loads(b'{"a":[1,2,{"b":null}]}') == {"a": [1, 2, {"b": None}]}
    assert loads('{"offsetTable":{"t@g":{0:5,-1:7, 12 : 3}}}') == {"offsetTable": {"t@g": {0: 5, -1: 7, 12: 3}}}


def test_object_keys_become_hashable_tuples() -> None:
    body = dumps_object_keyed({"consumeTps": 1.5}, "offsetTable", [
        ({"topic": "T", "brokerName": "b", "queueId": 0}, {"brokerOffset": 3})])
    text = body.decode()
    assert text == ('{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:'
                    '{"brokerOffset":3}}}')
    parsed = loads(body)
    [(key, value)] = parsed["offsetTable"].items()
    assert dict(key) == {"brokerName": "b", "queueId": 0, "topic": "T"} and value == {"brokerOffset": 3}


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a":}', b"{a:1}", b"[1,]x", b"\xff", b'{1:2', b'{"a":1} trailing',
                                 b"{{}:1", b"{1:" * 300, b"[" * 5000])
def test_garbage_raises_the_protocol_error_type(bad: bytes) -> None:
    with pytest.raises(JsonBodyError):
        loads(bad)


def test_dumps_quotes_integer_keys() -> None:
    assert json.loads(dumps({"t@g": {0: 1}})) == {"t@g": {"0": 1}}


def test_cpp_heartbeat_with_ordinals_string_versions_and_missing_fields() -> None:
    body = (b'{"clientID":"10.0.0.1@123#DEFAULT","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,'
            b'"groupName":"g","messageModel":1,"subscriptionDataSet":[{"codeSet":[0],"subString":"TagA || TagB",'
            b'"subVersion":"1700000000000","tagsSet":["TagA","TagB"],"topic":"T"}]}]}\n')
    hb = HeartbeatData.decode(body)
    [consumer] = hb.consumers
    assert (consumer.consume_type, consumer.message_model, consumer.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET")
    [sub] = consumer.subscriptions
    assert sub.sub_version == 1700000000000 and sub.expression_type == "TAG" and sub.tags_set == ("TagA", "TagB")
    assert hb.producer_groups == ()


def test_subscription_expressions() -> None:
    assert build_subscription("T", "*").matches_all and build_subscription("T", "").matches_all
    sub = build_subscription("T", " TagA ||TagB|| TagA ")
    assert sub.tags_set == ("TagA", "TagB") and len(sub.code_set) == 2
