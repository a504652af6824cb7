"""send_batch's usual batch, column-wise: its shape read in two passes (_uniform_batch), its keys made as one
block (_new_key_block: the shared part and the counters' hex digits, _keys_text), and its body one join
with the key counters written in as byte columns (_block_batch_body).  Each must agree with the
message-by-message path: new_uniq_key's layout, _batch_problem, and encode_batch of BatchEntry objects."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rocketstore.client.outgoing_message as om
from rocketstore.client.outgoing_message import OutgoingMessage, _property_text
from rocketstore.message.batch import BatchEntry, encode_batch

CASES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _reference_keys(head: str, counters: list[int]) -> str:
    """The keys as new_uniq_key lays each out (the shared part, the counter's low 16 bits as %04X)."""
    return ",".join(f"{head}{c & 0xFFFF:04X}" for c in counters)


@pytest.mark.parametrize("start", [0, 5, 0xFFC0, 0xFFFF, 0x1FFFE, 0x2FFF0])
@pytest.mark.parametrize("count", [1, 2, 64, 65, 70000])
def test_a_key_block_is_the_keys_one_at_a_time(monkeypatch: pytest.MonkeyPatch, start: int, count: int) -> None:
    monkeypatch.setattr(om, "_COUNTER", itertools.count(start))
    head, counters = om._new_key_block(count)
    assert head == om.new_uniq_key()[:-4] or head[:-8] == om._FIX_HEX  # (a ms may have passed)
    assert om._keys_text(head, counters) == _reference_keys(head, list(range(start, start + count)))
    # the counter went on by exactly *count* (and one for the key above)
    assert next(om._COUNTER) == start + count + 1


def test_new_uniq_keys_is_the_block_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(om, "_COUNTER", itertools.count(0xFFFE))
    text = om.new_uniq_keys(3)
    assert text == _reference_keys(text[:om._KEY_CHARS - 4], [0xFFFE, 0xFFFF, 0x10000])
    assert om.new_uniq_keys(0) == ""


def _reference_body(messages: list[OutgoingMessage], keys_text: str) -> bytes:
    return encode_batch([BatchEntry(m.body, _property_text(m, k), m.flag)
                         for m, k in zip(messages, keys_text.split(","), strict=True)])


FLAGS = st.sampled_from([0, 1, -1, 7, 2**31 - 1, -(2**31), True, False, 1.0, 0.0])
ROWS = st.lists(st.tuples(st.binary(max_size=40), st.one_of(st.none(), st.text(max_size=12)), FLAGS,
                          st.sampled_from([None, "", "k", []]), st.sampled_from([{}, {"p": "q"}])),
                min_size=1, max_size=70)


@CASES
@given(ROWS, st.booleans(), st.integers(0, 0x2FFFF))
def test_the_block_body_is_encode_batch_or_declines(rows: list[tuple], same: bool, start: int) -> None:
    if same:  # one shape repeated: the case the fast path takes (bodies of one length, their bytes vary)
        body, *rest = rows[0]
        rows = [(bytes([i % 256]) * len(body), *rest) for i in range(len(rows))]
    messages = [OutgoingMessage(body, tags, keys, props, flag) for body, tags, flag, keys, props in rows]
    uniform = om._uniform_batch(messages)
    expected_uniform = (len({(len(b), t, f, type(f)) for b, t, f, _, _ in rows}) == 1
                        and not any(k or p for *_, k, p in rows) and type(rows[0][2]) is int
                        and len({repr(k) for *_, k, _ in rows}) == 1)
    assert (uniform is not None) == expected_uniform
    if uniform is None:
        return
    kept = om._COUNTER  # (hypothesis runs many examples per test call: no monkeypatch fixture)
    om._COUNTER = itertools.count(start)
    try:
        head, counters = om._new_key_block(len(messages))
    finally:
        om._COUNTER = kept
    keys_text = om._keys_text(head, counters)
    got = om._block_batch_body(uniform, head, counters)
    assert got == _reference_body(messages, keys_text)
    assert om._uniform_batch_body(messages, keys_text) == got
    # and the checks of the usual batch are _batch_problem's
    for size in (0, 1, 39, 40, 4 << 20):
        assert om._uniform_batch_problem(uniform, size) == om._batch_problem("T", messages, size)


@pytest.mark.parametrize("tags", ["a\x01b", "a\x02b", "", None])
def test_the_usual_batch_checks_its_tags_as_the_other_path(tags: str | None) -> None:
    messages = [OutgoingMessage(b"xy", tags) for _ in range(3)]
    uniform = om._uniform_batch(messages)
    assert uniform is not None
    assert om._uniform_batch_problem(uniform, 100) == om._batch_problem("T", messages, 100)


def test_bodies_without_a_length_are_left_to_the_other_path() -> None:
    assert om._uniform_batch([OutgoingMessage(None), OutgoingMessage(None)]) is None  # type: ignore[arg-type]
    assert om._uniform_batch([OutgoingMessage(b"a")]) == ([b"a"], None, 0, 1)


def test_a_key_block_lays_its_counters_big_endian() -> None:
    head, counters = om._new_key_block(2)
    first = int(counters[:4], 16)
    assert counters == b"%04X%04X" % (first, (first + 1) & 0xFFFF)
    assert struct.unpack(">H", bytes.fromhex(counters[4:].decode()))[0] == (first + 1) & 0xFFFF
