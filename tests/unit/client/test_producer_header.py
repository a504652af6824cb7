"""The producer's hand-written SEND_MESSAGE_V2 extFields equal the typed header's rendering; its uniq keys and
property texts; the SendResult read from an answer."""

from __future__ import annotations

import asyncio
import struct
import time

import pytest

import rocketstore.client.outgoing_message as producer_module
from rocketstore.client.errors import BrokerError
from rocketstore.client.producer import OutgoingMessage, Producer, SendResult, _property_text, new_uniq_key
from rocketstore.client.route import MessageQueue
from rocketstore.message.properties import encode_properties
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.command import RemotingCommand


@pytest.mark.parametrize(("properties", "batch", "flag", "queue_id"),
                         [("TAGS\x01a\x02UNIQ_KEY\x01B", False, 0, 3), ("", True, 0, 0), ("x\x01y", False, -7, 1),
                          ("", False, 2147483647, 15)])
def test_fast_ext_fields_match_the_send_message_header(properties: str, batch: bool, flag: int,
                                                       queue_id: int) -> None:
    async def go() -> None:
        producer = Producer("127.0.0.1:9876", "group-\u00e9")
        try:
            fast = producer._ext_fields_v2("TopicA", queue_id, properties, batch, flag)
            typed = producer._header("TopicA", queue_id, properties, batch, flag).to_ext_fields_v2()
            # the born timestamp is read from the clock by each: both must be a decimal ms count
            assert fast.pop("g").isdecimal() and typed.pop("g").isdecimal()
            assert list(fast.items()) == list(typed.items())
        finally:
            await producer.close()

    asyncio.run(go())


@pytest.mark.parametrize("message", [
    OutgoingMessage(b"x", "TagA"), OutgoingMessage(b"x"), OutgoingMessage(b"x", ""),
    OutgoingMessage(b"x", "a{0}b}{1}{"), OutgoingMessage(b"x", "TagA", "k1"),
    OutgoingMessage(b"x", None, ["k1", "k2"]), OutgoingMessage(b"x", "T", None, {"p": "q", "WAIT": "false"}),
])
def test_property_text_templates_equal_encode_properties(message: OutgoingMessage) -> None:
    for key in ("C0A80001000000000000000000000000", "K{1}{0}"):
        assert _property_text(message, key) == encode_properties(message.property_map(key))


def test_uniq_keys_follow_the_message_client_id_layout() -> None:
    before = int(time.time() * 1000) - producer_module._MONTH_START_MS
    keys = [new_uniq_key() for _ in range(3)]
    after = int(time.time() * 1000) - producer_module._MONTH_START_MS
    for key in keys:
        raw = bytes.fromhex(key)
        assert len(raw) == 16 and key == raw.hex().upper()
        assert raw[:10] == producer_module._FIX
        ms, _ = struct.unpack(">IH", raw[10:])  # Java's (int) cast of the ms: its low 32 bits
        assert (ms - before) % (1 << 32) <= after - before
    counters = [struct.unpack(">H", bytes.fromhex(k)[14:])[0] for k in keys]
    assert counters[1] == (counters[0] + 1) & 0xFFFF and counters[2] == (counters[1] + 1) & 0xFFFF


def _key_ms(key: str) -> int:
    return struct.unpack(">i", bytes.fromhex(key)[10:14])[0]


def test_uniq_keys_late_in_a_month_carry_javas_negative_int(monkeypatch: pytest.MonkeyPatch) -> None:
    start, following = producer_module._month_bounds_ms()
    monkeypatch.setattr(producer_module, "_MONTH_START_MS", start)
    monkeypatch.setattr(producer_module, "_NEXT_MONTH_START_MS", following)
    late = start + 26 * 86_400_000 + 5  # past 2**31 ms into the month: Java's (int) cast goes negative
    monkeypatch.setattr(producer_module.time, "time", lambda: late / 1000)
    expected = 26 * 86_400_000 + 5 - (1 << 32)
    assert abs(_key_ms(new_uniq_key()) - expected) <= 1


def test_uniq_keys_count_from_the_next_month_once_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    start, following = producer_module._month_bounds_ms()
    monkeypatch.setattr(producer_module, "_MONTH_START_MS", start - 31 * 86_400_000)
    monkeypatch.setattr(producer_module, "_NEXT_MONTH_START_MS", start)
    now = start + 1234
    monkeypatch.setattr(producer_module.time, "time", lambda: now / 1000)
    assert abs(_key_ms(new_uniq_key()) - 1234) <= 1
    assert (producer_module._MONTH_START_MS, producer_module._NEXT_MONTH_START_MS) == (start, following)


def test_ext_fields_from_the_template_are_fresh_dicts_that_follow_the_group() -> None:
    async def go() -> None:
        producer = Producer("127.0.0.1:9876", "g1")
        try:
            first = producer._ext_fields_v2("TopicA", 2, "", True, 0)
            first["b"] = "changed"
            for properties, batch in (("p\x01q", False), ("", True), ("r\x01s", True), ("", False)):
                fast = producer._ext_fields_v2("TopicA", 2, properties, batch, 0)
                typed = producer._header("TopicA", 2, properties, batch, 0).to_ext_fields_v2()
                assert fast.pop("g").isdecimal() and typed.pop("g").isdecimal()
                assert list(fast.items()) == list(typed.items())
            producer.group = "g2"
            assert producer._ext_fields_v2("TopicA", 2, "", True, 0)["a"] == "g2"
        finally:
            await producer.close()

    asyncio.run(go())


MQ = MessageQueue("TopicA", "broker-a", 3)
OK_EXT = {"msgId": "7F000001000027E50000000000001234", "queueId": "3", "queueOffset": "41",
          "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}


@pytest.mark.parametrize(("code", "ext", "expected"), [
    (ResponseCode.SUCCESS, OK_EXT, SendResult("SEND_OK", "K", OK_EXT["msgId"], MQ, 41)),
    (ResponseCode.SUCCESS, {**OK_EXT, "queueId": "03"}, SendResult("SEND_OK", "K", OK_EXT["msgId"], MQ, 41)),
    (ResponseCode.SUCCESS, {**OK_EXT, "queueId": "1"},
     SendResult("SEND_OK", "K", OK_EXT["msgId"], MessageQueue("TopicA", "broker-a", 1), 41)),
    (ResponseCode.SUCCESS, {"queueId": "3"}, SendResult("SEND_OK", "K", "", MQ, -1)),
    (ResponseCode.SUCCESS, {}, SendResult("SEND_OK", "K", "", MQ, -1)),
    (ResponseCode.FLUSH_DISK_TIMEOUT, OK_EXT, SendResult("FLUSH_DISK_TIMEOUT", "K", OK_EXT["msgId"], MQ, 41)),
    (ResponseCode.SLAVE_NOT_AVAILABLE, {**OK_EXT, "queueOffset": "7"},
     SendResult("SLAVE_NOT_AVAILABLE", "K", OK_EXT["msgId"], MQ, 7)),
])
def test_send_results_read_from_the_answer(code: int, ext: dict[str, str], expected: SendResult) -> None:
    response = RemotingCommand.response(code, 5, ext_fields=ext)
    result = Producer._result(response, "K", MQ)
    assert result == expected and type(result) is SendResult
    assert (result.message_queue is MQ) == (expected.message_queue == MQ)


def test_a_refused_send_raises_the_brokers_error() -> None:
    response = RemotingCommand.response(ResponseCode.TOPIC_NOT_EXIST, 5, remark="no topic", ext_fields=OK_EXT)
    with pytest.raises(BrokerError, match="no topic"):
        Producer._result(response, "K", MQ)


@pytest.mark.parametrize(("topic", "properties", "batch", "flag", "queue_id"),
                         [("TopicA", "TAGS\x01a\x02UNIQ_KEY\x01B", False, 0, 3), ("T%s\"\\", "", True, 0, 0),
                          ("\u00e9\ud800", "x\x01\"y\\\n", False, -7, 1)])
def test_send_frames_from_the_template_are_the_encoded_send_command(topic: str, properties: str, batch: bool,
                                                                    flag: int, queue_id: int) -> None:
    async def go() -> None:
        producer = Producer("127.0.0.1:9876", "group-\u00e9%d")
        try:
            code = 320 if batch else 310
            template = producer._frame_template(topic, queue_id, batch, flag, code, bool(properties))
            ext = producer._ext_fields_v2(topic, queue_id, properties, batch, flag)
            values = (ext["g"], properties) if properties else (ext["g"],)
            command = RemotingCommand.request(code, ext, b"body")
            assert template.encode(values, b"body", 12345) == encode_command(command, 12345)
        finally:
            await producer.close()

    asyncio.run(go())
