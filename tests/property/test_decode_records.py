"""Hypothesis: decode_records (the pull body's fast path) is decode_record in a loop, record for record and
error for error, on valid bodies, on corrupted ones and on arbitrary bytes."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import MessageDecodeError
from rocketstore.message.host import HostAddress
from rocketstore.message.record import Message, StoredMessage, decode_record, encode_record
from rocketstore.message.record_decode import decode_records

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
HOSTS = st.builds(HostAddress, st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
                  st.integers(0, 65535))
IPV4_HOSTS = st.builds(HostAddress, st.binary(min_size=4, max_size=4), st.integers(0, 65535))
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


# --- runs: the pull body's usual shape, many records of one layout back to back -------------------------------

ODD = st.sampled_from(["ipv6 born host", "other store port", "longer body", "other tag", "compressed flag",
                       "other topic"])


@st.composite
def run_bodies(draw: st.DrawFn) -> list[tuple[Message, HostAddress, HostAddress, int, int, int]]:
    """Runs of records that share topic, hosts and lengths (bodies, offsets, times and the UNIQ_KEY value
    differ), now and then broken by an odd record."""
    rnd = draw(st.randoms(use_true_random=False))
    born = draw(st.one_of(IPV4_HOSTS, IPV4_HOSTS, HOSTS))  # runs are read fast between IPv4 hosts only
    store = draw(st.one_of(IPV4_HOSTS, IPV4_HOSTS, HOSTS))
    odd_host = HostAddress(b"\x20\x01" + bytes(14), draw(st.integers(0, 65535)))
    records = []
    queue_offset = draw(st.integers(0, 2**40))
    commit_log_offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 3))):
        topic = draw(st.text("%|abcXYZ019_-", min_size=1, max_size=12))
        body_len = draw(st.integers(0, 40))
        sys_flag = draw(st.sampled_from([0, 0, 0, 2, 8, 4]))
        key_alphabet = draw(st.sampled_from(["0123456789ABCDEF", "0123456789ABCDEF\u00e9"]))  # é: 2 bytes
        odd_every = draw(st.sampled_from([0, 0, 5, 17]))
        for i in range(draw(st.integers(1, 70))):
            message = Message(topic, rnd.randbytes(body_len),
                              {"UNIQ_KEY": "".join(rnd.choice(key_alphabet) for _ in range(8)), "TAGS": "TagA"},
                              queue_id=3, flag=rnd.choice([0, 0, 0, 7]), sys_flag=sys_flag,
                              born_timestamp=rnd.getrandbits(41), reconsume_times=rnd.choice([0, 0, 1]))
            record_born, record_store = born, store
            if odd_every and i % odd_every == odd_every - 1:
                odd = draw(ODD)
                if odd == "ipv6 born host":
                    record_born = odd_host
                elif odd == "other store port":
                    record_store = HostAddress(store.ip, (store.port + 1) % 65536)
                elif odd == "longer body":
                    message = dataclasses.replace(message, body=message.body + b"!")
                elif odd == "other tag":
                    message = dataclasses.replace(message, properties={**message.properties, "TAGS": "TagB"})
                elif odd == "compressed flag":
                    message = dataclasses.replace(message, sys_flag=sys_flag | 1)
                else:
                    message = dataclasses.replace(message, topic=("Y" if topic[0] != "Y" else "Z") + topic[1:])
            records.append((message, record_born, record_store, rnd.getrandbits(41), queue_offset,
                            commit_log_offset))
            queue_offset += 1
            commit_log_offset += 200
    return records


@FUZZ
@given(run_bodies())
def test_runs_decode_alike(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]]) -> None:
    body = _body(records)
    fast = _fast(body)
    assert isinstance(fast, list) and len(fast) == len(records)
    assert fast == _slow(body)
    for m, (message, *_) in zip(fast, records):
        assert type(m) is StoredMessage and m.body == message.body and m.topic == message.topic
        hash(m)
    assert _fast(bytearray(body)) == fast == _fast(memoryview(body))


@FUZZ
@given(run_bodies(), st.data())
def test_corrupted_runs_fail_alike(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]],
                                   data: st.DataObject) -> None:
    body = bytearray(_body(records))
    for _ in range(data.draw(st.integers(0, 3))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.sampled_from([0, 0x7F, 0x80, 0xFF, 0xC3]))
    if data.draw(st.booleans()):
        body = body[: data.draw(st.integers(0, len(body)))]  # often a truncated last record
    assert _fast(bytes(body)) == _slow(bytes(body))


@FUZZ
@given(run_bodies(), st.data())
def test_windows_of_a_run_decode_alike(records: list[tuple[Message, HostAddress, HostAddress, int, int, int]],
                                       data: st.DataObject) -> None:
    body = _body(records)
    starts = [0]
    for message, *_ in records:
        starts.append(starts[-1] + decode_record(body, starts[-1]).store_size)
    pos = data.draw(st.sampled_from(starts))
    end = data.draw(st.integers(pos, len(body)))
    try:
        fast: list[StoredMessage] | str = decode_records(body, pos, end)
    except MessageDecodeError as exc:
        fast = str(exc)
    decoded: list[StoredMessage] = []
    try:
        while pos < end:
            m = decode_record(body, pos, limit=end)
            decoded.append(m)
            pos += m.store_size
    except MessageDecodeError as exc:
        assert fast == str(exc)
    else:
        assert fast == decoded


def _long_run(count: int) -> tuple[bytes, list[int]]:
    host = HostAddress(b"\x7f\0\0\1", 4000)
    records = [(Message.create("TopicA", bytes([i % 256]) * 20, tags="TagA", uniq_key=f"{i:08X}"), host, host,
                1000 + i, i, 150 * i) for i in range(count)]
    body = _body(records)
    size = len(body) // count
    return body, [size * i for i in range(count)]


@pytest.mark.parametrize("bad", [9, 15, 16, 17, 80, 81, 400, 999])
def test_a_run_stops_at_properties_that_are_not_utf8(bad: int) -> None:
    body, starts = _long_run(1000)
    broken = bytearray(body)
    broken[starts[bad] + len(body) // 1000 - 3] = 0xFF  # in the properties of record *bad*
    slow = _slow(bytes(broken))
    # read as 4.9.3's MessageDecoder reads it (U+FFFD), the run going on after it
    assert isinstance(slow, list) and len(slow) == 1000
    assert [i for i, m in enumerate(slow) if "\ufffd" in m.properties_string] == [bad]
    assert _fast(bytes(broken)) == slow


@pytest.mark.parametrize("odd", [1, 8, 16, 17, 80, 81, 336, 337, 998, 999])
def test_a_long_run_broken_by_one_odd_record_decodes_alike(odd: int) -> None:
    body, starts = _long_run(1000)
    good = decode_records(body)
    assert len(good) == 1000 and good == _slow(body)
    odd_message = Message.create("TopicB", b"x" * 20, tags="TagA", uniq_key=f"{odd:08X}")  # same size, other topic
    odd_record = bytes(encode_record(odd_message, born_host=good[odd].born_host, store_host=good[odd].store_host,
                                     store_timestamp=5, queue_offset=odd, commit_log_offset=starts[odd])[0])
    assert len(odd_record) == good[0].store_size
    mixed = body[: starts[odd]] + odd_record + body[starts[odd] + len(odd_record):]
    decoded = decode_records(mixed)
    assert decoded == _slow(mixed)
    assert [m.topic for m in decoded].count("TopicB") == 1 and decoded[odd].topic == "TopicB"
    truncated = mixed[:-1]
    assert _fast(truncated) == _slow(truncated) and isinstance(_slow(truncated), str)


@pytest.mark.parametrize("index", [0, 1, 16, 17, 39])
def test_every_byte_of_a_record_in_a_run_corrupted_fails_alike(index: int) -> None:
    body, starts = _long_run(40)
    size = len(body) // 40
    for at in range(starts[index], starts[index] + size):
        for value in (body[at] ^ 0x01, body[at] ^ 0x80, 0xFF):
            broken = bytearray(body)
            broken[at] = value
            assert _fast(bytes(broken)) == _slow(bytes(broken)), (at - starts[index], value)


@pytest.mark.parametrize("pos", [-1, -100, -2000])
def test_a_negative_position_fails_as_decode_record_does(pos: int) -> None:
    body, _ = _long_run(20)
    with pytest.raises(MessageDecodeError, match="truncated header"):
        decode_record(body, pos)
    with pytest.raises(MessageDecodeError, match="truncated header"):
        decode_records(body, pos)
