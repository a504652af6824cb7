"""Hypothesis: decode_records (the pull body's fast path) is decode_record in a loop, record for record and
error for error, on valid bodies, on corrupted ones and on arbitrary bytes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import MessageDecodeError
from rocketstore.message.host import HostAddress
from rocketstore.message.record import Message, StoredMessage, decode_record, decode_records, encode_record

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
HOSTS = st.builds(HostAddress, st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
                  st.integers(0, 65535))
PROP_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1,
                    max_size=12)
MESSAGES = st.builds(
    Message,
    topic=st.text("%|abcXYZ019_-", min_size=1, max_size=127),
    body=st.binary(max_size=200),
    properties=st.dictionaries(PROP_TEXT, PROP_TEXT, max_size=4),
    queue_id=INT32,
    flag=INT32,
    sys_flag=st.sampled_from([0, 1, 2, 4, 8, 12]),
    born_timestamp=INT64,
    reconsume_times=INT32,
    prepared_transaction_offset=INT64,
)
RECORDS = st.lists(st.tuples(MESSAGES, HOSTS, HOSTS, INT64, INT64, INT64), min_size=0, max_size=6)


def _body(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]]) -> bytes:
    return b"".join(bytes(encode_record(m, born_host=b, store_host=s, store_timestamp=ts, queue_offset=qo,
                                        commit_log_offset=co)[0]) for m, b, s, ts, qo, co in records)


def _slow(buf: bytes) -> list[StoredMessage] | str:
    out: list[StoredMessage] = []
    pos = 0
    try:
        while pos < len(buf):
            m = decode_record(buf, pos)
            out.append(m)
            pos += m.store_size
    except MessageDecodeError as exc:
        return str(exc)
    return out


def _fast(buf: bytes | bytearray | memoryview) -> list[StoredMessage] | str:
    try:
        return decode_records(buf)
    except MessageDecodeError as exc:
        return str(exc)


@FUZZ
@given(RECORDS)
def test_valid_bodies_decode_alike(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]]) -> None:
    body = _body(records)
    fast = _fast(body)
    assert isinstance(fast, list) and len(fast) == len(records)
    assert fast == _slow(body)
    for m in fast:
        assert type(m) is StoredMessage and type(m.body) is bytes
        hash(m)  # frozen and hashable like any StoredMessage
    assert _fast(bytearray(body)) == fast == _fast(memoryview(body))


@FUZZ
@given(RECORDS, st.data())
def test_corrupted_bodies_fail_alike(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]],
                                     data: st.DataObject) -> None:
    body = bytearray(_body(records))
    if body:
        for _ in range(data.draw(st.integers(1, 4))):
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
        body = body[: data.draw(st.integers(0, len(body)))]
    assert _fast(bytes(body)) == _slow(bytes(body))


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_fail_alike(raw: bytes) -> None:
    assert _fast(raw) == _slow(raw)


def test_frozen() -> None:
    body = _body([(Message.create("T", b"x", tags="a"), HostAddress(b"\x7f\0\0\1", 1), HostAddress(b"\x7f\0\0\1", 2),
                   1, 2, 3)])
    (m,) = decode_records(body)
    with pytest.raises(AttributeError):
        m.topic = "U"  # type: ignore[misc]
    assert m.tags == "a" and m.born_host.port == 1 and m.store_host.port == 2
