"""The producer's column-wise batch: keys made in one format, the uniform batch body, and their agreement
with the message-by-message path (new_uniq_key, _property_text, encode_batch)."""

from __future__ import annotations

import itertools
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rocketstore.client.outgoing_message as producer_module
from rocketstore.client.producer import OutgoingMessage, _property_text, _uniform_batch_body, new_uniq_keys
from rocketstore.message.batch import BatchEntry, decode_batch, encode_batch
from rocketstore.message.properties import parse_properties


def _reference_body(messages: list[OutgoingMessage], keys_text: str) -> bytes:
    return encode_batch([BatchEntry(m.body, _property_text(m, k), m.flag)
                         for m, k in zip(messages, keys_text.split(","), strict=True)])


def test_batch_keys_follow_the_message_client_id_layout_and_count_on() -> None:
    before = int(time.time() * 1000) - producer_module._MONTH_START_MS
    text = new_uniq_keys(5)
    after = int(time.time() * 1000) - producer_module._MONTH_START_MS
    keys = text.split(",")
    assert len(keys) == 5
    for key in keys:
        raw = bytes.fromhex(key)
        assert len(raw) == 16 and key == raw.hex().upper()
        assert raw[:10] == producer_module._FIX
        (ms,) = struct.unpack(">I", raw[10:14])
        assert (ms - before) % (1 << 32) <= after - before
    counters = [struct.unpack(">H", bytes.fromhex(k)[14:])[0] for k in keys]
    assert counters == [(counters[0] + i) & 0xFFFF for i in range(5)]
    # the single-key maker takes the next counter value: one sequence for both
    single = producer_module.new_uniq_key()
    assert struct.unpack(">H", bytes.fromhex(single)[14:])[0] == (counters[-1] + 1) & 0xFFFF
    assert new_uniq_keys(1).count(",") == 0


def test_batch_key_counters_wrap_at_16_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_module, "_COUNTER", itertools.count(0x1FFFE))
    keys = new_uniq_keys(3).split(",")
    assert [k[-4:] for k in keys] == ["FFFE", "FFFF", "0000"]
    # the counter went on by exactly three, as three new_uniq_key calls would have taken it
    assert producer_module.new_uniq_key()[-4:] == "0001"


def test_no_keys_for_an_empty_batch() -> None:
    before = producer_module.new_uniq_key()
    assert new_uniq_keys(0) == ""
    assert int(producer_module.new_uniq_key()[-4:], 16) == (int(before[-4:], 16) + 1) & 0xFFFF


def test_batch_keys_late_in_a_month_carry_javas_negative_int(monkeypatch: pytest.MonkeyPatch) -> None:
    start, following = producer_module._month_bounds_ms()
    monkeypatch.setattr(producer_module, "_MONTH_START_MS", start)
    monkeypatch.setattr(producer_module, "_NEXT_MONTH_START_MS", following)
    late = start + 27 * 86_400_000 + 9
    monkeypatch.setattr(producer_module.time, "time", lambda: late / 1000)
    expected = 27 * 86_400_000 + 9 - (1 << 32)
    for key in new_uniq_keys(4).split(","):
        (ms,) = struct.unpack(">i", bytes.fromhex(key)[10:14])
        assert abs(ms - expected) <= 1
    # a key made a ms later is not served from the format cached for the earlier one
    monkeypatch.setattr(producer_module.time, "time", lambda: (late + 5) / 1000)
    (ms,) = struct.unpack(">i", bytes.fromhex(new_uniq_keys(4).split(",")[0])[10:14])
    assert abs(ms - (expected + 5)) <= 1


UNIFORM = [
    [OutgoingMessage(b"x" * 100, "TagA") for _ in range(64)],
    [OutgoingMessage(b"", None) for _ in range(3)],
    [OutgoingMessage(b"abc", "") for _ in range(2)],
    [OutgoingMessage(b"ab", "a{0}b}{1}{%s%%") for _ in range(4)],
    [OutgoingMessage(b"\x00\x01", "t\u00e9\u4e2d", flag=-7) for _ in range(5)],
    [OutgoingMessage(bytes([i]) * 7, "T", None, {}, 3) for i in range(6)],
    [OutgoingMessage(b"q", "T", [])],
]


@pytest.mark.parametrize("messages", UNIFORM)
def test_uniform_batch_body_equals_encode_batch(messages: list[OutgoingMessage]) -> None:
    keys_text = new_uniq_keys(len(messages))
    body = _uniform_batch_body(messages, keys_text)
    assert body is not None
    assert body == _reference_body(messages, keys_text)
    # and the broker's reader finds each message's body, flag, tags and key in it
    entries = decode_batch(body)
    for entry, message, key in zip(entries, messages, keys_text.split(","), strict=True):
        props = parse_properties(entry.properties_string)
        assert (entry.body, entry.flag, props["UNIQ_KEY"], props["WAIT"]) == (message.body, message.flag, key, "true")
        assert props.get("TAGS") == (message.tags or None)


MIXED = [
    [OutgoingMessage(b"a", "T"), OutgoingMessage(b"b", "U")],
    [OutgoingMessage(b"a", "T"), OutgoingMessage(b"bb", "T")],
    [OutgoingMessage(b"a", "T"), OutgoingMessage(b"b", "T", flag=1)],
    [OutgoingMessage(b"a", "T"), OutgoingMessage(b"b", "T", "k")],
    [OutgoingMessage(b"a", "T", ["k1"]), OutgoingMessage(b"b", "T", ["k2"])],
    [OutgoingMessage(b"a", "T"), OutgoingMessage(b"b", "T", None, {"p": "q"})],
    [OutgoingMessage(b"a", None), OutgoingMessage(b"b", "")],
]


@pytest.mark.parametrize("messages", MIXED)
def test_other_batches_are_left_to_encode_batch(messages: list[OutgoingMessage]) -> None:
    assert _uniform_batch_body(messages, new_uniq_keys(len(messages))) is None


def test_keys_of_another_length_are_left_to_encode_batch() -> None:
    messages = [OutgoingMessage(b"a", "T")] * 2
    assert _uniform_batch_body(messages, "K1,K2") is None
    assert _uniform_batch_body(messages, new_uniq_keys(3)) is None


def test_tags_too_long_for_the_properties_length_are_left_to_encode_batch() -> None:
    messages = [OutgoingMessage(b"a", "T" * 32767)] * 2
    assert _uniform_batch_body(messages, new_uniq_keys(2)) is None


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.binary(max_size=40), st.one_of(st.none(), st.text(max_size=12)),
                          st.sampled_from([0, 1, -1, 2**31 - 1]), st.sampled_from([None, "k"])),
                min_size=1, max_size=8),
       st.booleans())
def test_uniform_batch_body_is_encode_batch_or_declines(
        rows: list[tuple[bytes, str | None, int, str | None]], same: bool) -> None:
    if same:  # one shape repeated: the case the fast path takes
        rows = [(rows[0][0][:1] * len(rows[0][0]), *rows[0][1:])] * len(rows)
    messages = [OutgoingMessage(body, tags, keys, {}, flag) for body, tags, flag, keys in rows]
    keys_text = new_uniq_keys(len(messages))
    reference = _reference_body(messages, keys_text)
    body = _uniform_batch_body(messages, keys_text)
    assert body is None or body == reference
    uniform = len({(len(b), t, f) for b, t, f, _ in rows}) == 1 and not any(k for *_, k in rows)
    assert (body is not None) == uniform
