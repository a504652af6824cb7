"""The vectorised decoder yields exactly what decode_record (and parse_properties) yield, field for field."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import MessageDecodeError
from rocketstore.message.columnar import decode_columns, gather, header_fields, host_texts, message_ids
from rocketstore.message.columnar_properties import find_pairs, find_values, repeated_names, split_properties
from rocketstore.message.host import HostAddress
from rocketstore.message.properties import PropertyName, encode_properties, parse_properties
from rocketstore.message.record import (
    Message,
    StoredMessage,
    SysFlag,
    decode_record,
    encode_record,
    header_layout,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TOPICS = st.text("%|abcXYZ019_-", min_size=1, max_size=127)
PROP_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1,
                    max_size=12)
#: raw properties strings: separators anywhere, empty names and values, duplicates, trailing separators
RAW_PROPERTIES = st.lists(st.one_of(st.sampled_from(["\x01", "\x02", "TAGS", "KEYS", "UNIQ_KEY", "a", "é", "😀"]),
                                    PROP_TEXT), max_size=14).map("".join)
CLIENT_PROPERTIES = st.dictionaries(st.one_of(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY"]), PROP_TEXT),
                                    st.one_of(st.just(""), PROP_TEXT), max_size=6).map(encode_properties)
HOSTS = st.builds(HostAddress, st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
                  st.integers(0, 65535))
SYS_FLAGS = st.sampled_from([0, SysFlag.COMPRESSED, SysFlag.MULTI_TAGS, 4, 8, 12, SysFlag.COMPRESSED | 8])

RECORDS = st.tuples(
    st.builds(Message, topic=TOPICS, body=st.one_of(st.just(b""), st.binary(max_size=200)), queue_id=INT32,
              flag=INT32, sys_flag=SYS_FLAGS, born_timestamp=INT64, reconsume_times=INT32,
              prepared_transaction_offset=INT64),
    st.one_of(RAW_PROPERTIES, CLIENT_PROPERTIES), HOSTS, HOSTS, INT64, INT64, INT64)


def _encode(spec: tuple) -> bytes:  # type: ignore[type-arg]
    message, props, born, store, store_ts, queue_offset, commit_log_offset = spec
    record, _ = encode_record(message, props, born_host=born, store_host=store, store_timestamp=store_ts,
                              queue_offset=queue_offset, commit_log_offset=commit_log_offset)
    return bytes(record)


def _text(data: np.ndarray, start: int, length: int) -> str:
    return data[start : start + length].tobytes().decode("utf-8")


@SETTINGS
@given(st.lists(RECORDS, min_size=1, max_size=12), st.binary(max_size=7))
def test_columns_equal_decode_record_field_for_field(specs: list, gap: bytes) -> None:  # type: ignore[type-arg]
    records = [_encode(s) for s in specs]
    buf = bytearray(b"junk")
    positions = []
    for r in records:
        positions.append(len(buf))
        buf += r + gap  # records need not be adjacent
    cols = decode_columns(bytes(buf), np.array(positions))
    want: list[StoredMessage] = [decode_record(bytes(buf), p) for p in positions]
    assert len(cols) == len(want)
    topics = cols.topics()
    ids_offsets, ids = message_ids(cols)
    born_texts, born_idx = host_texts(cols.born_ip, cols.born_port, cols.born_v6)
    store_texts, store_idx = host_texts(cols.store_ip, cols.store_port, cols.store_v6)
    p_offsets, p_data = gather(cols.buf, cols.properties_start, cols.properties_length)
    props = split_properties(p_data, p_offsets)
    found = {name: find_values(props, name) for name in (PropertyName.TAGS, PropertyName.KEYS, PropertyName.UNIQ_KEY)}
    for i, m in enumerate(want):
        assert topics[i] == m.topic
        assert (int(cols.total_size[i]), int(cols.body_crc[i]), int(cols.queue_id[i]), int(cols.flag[i])) == (
            m.store_size, m.body_crc, m.queue_id, m.flag)
        assert (int(cols.queue_offset[i]), int(cols.commit_log_offset[i]), int(cols.sys_flag[i])) == (
            m.queue_offset, m.commit_log_offset, m.sys_flag)
        assert (int(cols.born_timestamp[i]), int(cols.store_timestamp[i])) == (m.born_timestamp, m.store_timestamp)
        assert (int(cols.reconsume_times[i]), int(cols.prepared_transaction_offset[i])) == (
            m.reconsume_times, m.prepared_transaction_offset)
        body = cols.buf[cols.body_start[i] : cols.body_start[i] + cols.body_length[i]].tobytes()
        assert body == m.body
        assert _text(p_data, p_offsets[i], p_offsets[i + 1] - p_offsets[i]) == m.properties_string
        assert ids[ids_offsets[i] : ids_offsets[i + 1]].tobytes().decode() == m.msg_id
        assert born_texts[born_idx[i]] == str(m.born_host)
        assert store_texts[store_idx[i]] == str(m.store_host)
        pairs = range(props.pair_offsets[i], props.pair_offsets[i + 1])
        got_props = [(_text(p_data, props.name_start[j], props.name_length[j]),
                      _text(p_data, props.value_start[j], props.value_length[j])) for j in pairs]
        assert got_props == list(parse_properties(m.properties_string).items())
        for name, (present, start, length) in found.items():
            expected = m.properties.get(name)
            assert (_text(p_data, start[i], length[i]) if present[i] else None) == expected


def test_field_positions_come_from_the_record_layout() -> None:
    v4 = header_fields(header_layout(False, False))
    v6 = header_fields(header_layout(True, True))
    assert v4["body_length"][0] + 4 == header_layout(False, False).size
    assert v4["store_timestamp"][0] == 56 and v6["store_timestamp"][0] == 68
    assert v6["body_length"][0] + 4 == header_layout(True, True).size


def test_duplicate_names_keep_first_position_and_last_value() -> None:
    text = "a\x011\x02b\x012\x02a\x013\x02\x01x\x02c\x01\x02d\x014\x02"
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    props = split_properties(data, np.array([0, len(data)]))
    got = [(_text(data, s, n), _text(data, vs, vn)) for s, n, vs, vn in
           zip(props.name_start, props.name_length, props.value_start, props.value_length)]
    assert got == list(parse_properties(text).items()) == [("a", "3"), ("b", "2"), ("d", "4")]


def test_empty_input_decodes_to_no_rows() -> None:
    cols = decode_columns(b"", np.zeros(0, dtype=np.int64))
    assert len(cols) == 0
    offsets, data = message_ids(cols)
    assert list(offsets) == [0] and len(data) == 0


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda r: r.__setitem__(slice(4, 8), b"\0\0\0\0"), "bad magic"),
    (lambda r: r.__setitem__(slice(0, 4), (10**6).to_bytes(4, "big")), "does not fit"),
    (lambda r: r.__setitem__(slice(-8, -6), b"\0\x09"), "properties length"),
])
def test_a_broken_record_raises_with_its_position(damage, reason) -> None:  # type: ignore[no-untyped-def]
    good = _encode((Message("T", b"x" * 10), "TAGS\x01a", HostAddress(b"\1\2\3\4", 5), HostAddress(b"\1\2\3\4", 6),
                    1, 2, 3))
    bad = bytearray(good)
    damage(bad)
    buf = good + bytes(bad) + good
    with pytest.raises(MessageDecodeError, match=reason) as info:
        decode_columns(buf, np.array([0, len(good), 2 * len(good)]))
    assert info.value.offset == len(good)
    with pytest.raises(MessageDecodeError):
        decode_record(buf, len(good))


def test_repeated_names_only_when_every_record_has_the_same_names_in_order() -> None:
    def props(*texts: str):  # type: ignore[no-untyped-def]
        raw = [t.encode() for t in texts]
        data = np.frombuffer(b"".join(raw), dtype=np.uint8)
        return split_properties(data, np.cumsum([0] + [len(r) for r in raw]))

    same = props("TAGS\x01a\x02k\x011", "TAGS\x01b\x02k\x012")
    names, ids = repeated_names(same)  # type: ignore[misc]
    assert names == [b"TAGS", b"k"] and list(ids) == [0, 1, 0, 1]
    assert list(find_pairs(same, "k")) == [1, 3]
    assert repeated_names(props("TAGS\x01a\x02k\x011", "k\x012\x02TAGS\x01b")) is None  # other order
    assert repeated_names(props("TAGS\x01a", "TAGS\x01a\x02k\x011")) is None  # other count
    assert repeated_names(props("A_LONG_NAME\x01a", "A_LONG_NAME\x01b")) is None  # longer than a signature
    assert list(find_pairs(props("A_LONG_NAME\x01a", "A_LONG_NAMF\x01b"), "A_LONG_NAME")) == [0, -1]
