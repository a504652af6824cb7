"""Hypothesis: record and batch codecs round-trip, and on arbitrary bytes raise only MessageDecodeError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rocketstore.errors import MessageDecodeError
from rocketstore.message.batch import BatchEntry, decode_batch, encode_batch
from rocketstore.message.host import HostAddress
from rocketstore.message.properties import encode_properties, parse_properties
from rocketstore.message.record import (
    MESSAGE_MAGIC,
    Message,
    SysFlag,
    decode_dispatch_info,
    decode_record,
    encode_record,
)

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TOPICS = st.text("%|abcXYZ019_-", min_size=1, max_size=127)
# names and values: no separators, no lone surrogates (not UTF-8 encodable)
PROP_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1,
                    max_size=20)
PROPERTIES = st.dictionaries(PROP_TEXT, PROP_TEXT, max_size=8)
HOSTS = st.builds(HostAddress, st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
                  st.integers(0, 65535))
SYS_FLAG_BITS = st.sampled_from([0, SysFlag.COMPRESSED, SysFlag.MULTI_TAGS]).flatmap(
    lambda low: st.sampled_from([0, 4, 8, 12]).map(lambda tx: low | tx))

MESSAGES = st.builds(
    Message,
    topic=TOPICS,
    body=st.binary(max_size=300),
    properties=PROPERTIES,
    queue_id=INT32,
    flag=INT32,
    sys_flag=SYS_FLAG_BITS,
    born_timestamp=INT64,
    reconsume_times=INT32,
    prepared_transaction_offset=INT64,
)


@ROUND_TRIP
@given(MESSAGES, HOSTS, HOSTS, INT64, INT64, INT64)
def test_any_valid_message_round_trips(message: Message, born: HostAddress, store: HostAddress, store_ts: int,
                                       queue_offset: int, commit_log_offset: int) -> None:
    record, sys_flag = encode_record(message, born_host=born, store_host=store, store_timestamp=store_ts,
                                     queue_offset=queue_offset, commit_log_offset=commit_log_offset)
    got = decode_record(bytes(record), check_crc=True)
    assert got.store_size == len(record)
    assert (got.topic, got.body, got.queue_id, got.flag) == (message.topic, message.body, message.queue_id,
                                                            message.flag)
    assert got.sys_flag == sys_flag
    assert sys_flag & 0xF == message.sys_flag
    assert (got.born_host, got.store_host) == (born, store)
    assert (got.born_timestamp, got.store_timestamp) == (message.born_timestamp, store_ts)
    assert (got.queue_offset, got.commit_log_offset) == (queue_offset, commit_log_offset)
    assert (got.reconsume_times, got.prepared_transaction_offset) == (message.reconsume_times,
                                                                      message.prepared_transaction_offset)
    assert got.properties == message.properties
    assert got.properties_string == encode_properties(message.properties)
    info = decode_dispatch_info(record, 0, commit_log_offset)
    assert (info.size, info.topic, info.queue_id, info.queue_offset, info.sys_flag, info.store_timestamp) == (
        len(record), message.topic, message.queue_id, queue_offset, sys_flag, store_ts)
    assert parse_properties(info.properties_string) == message.properties


@ROUND_TRIP
@given(st.lists(st.builds(BatchEntry, st.binary(max_size=200),
                          PROPERTIES.map(encode_properties), INT32), max_size=10))
def test_any_batch_round_trips(entries: list[BatchEntry]) -> None:
    assert decode_batch(encode_batch(entries)) == entries




def decode_allowing_decode_errors(data: bytes | bytearray, pos: int = 0) -> None:
    for kwargs in ({}, {"check_crc": True, "with_body": False}):
        try:
            decode_record(data, pos, **kwargs)  # type: ignore[arg-type]
        except MessageDecodeError:
            pass


@FUZZ
@given(st.binary(max_size=600))
def test_decode_record_on_arbitrary_bytes_raises_only_message_decode_error(data: bytes) -> None:
    decode_allowing_decode_errors(data)


@FUZZ
@given(st.binary(max_size=600), st.integers(0, 600))
def test_decode_record_at_any_position_raises_only_message_decode_error(data: bytes, pos: int) -> None:
    decode_allowing_decode_errors(data, pos)


def with_message_header(size: int, sys_flag: int, tail: bytes) -> bytes:
    """Bytes that pass the magic check, so the fuzzer reaches the length logic behind it."""
    head = bytearray(struct.pack(">ii", size, MESSAGE_MAGIC) + bytes(40))
    struct.pack_into(">i", head, 36, sys_flag)
    return bytes(head) + tail


@FUZZ
@given(st.integers(-5, 700), st.sampled_from([0, 0x10, 0x20, 0x30, -1]), st.binary(max_size=600))
def test_decode_record_behind_a_valid_magic_raises_only_message_decode_error(size: int, sys_flag: int,
                                                                             tail: bytes) -> None:
    decode_allowing_decode_errors(with_message_header(size, sys_flag, tail))


@FUZZ
@given(MESSAGES, HOSTS, HOSTS, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1,
                                        max_size=6))
def test_decode_record_of_a_corrupted_record_raises_only_message_decode_error(
        message: Message, born: HostAddress, store: HostAddress, flips: list[tuple[int, int]]) -> None:
    record, _ = encode_record(message, born_host=born, store_host=store)
    for where, value in flips:
        record[where % len(record)] = value
    decode_allowing_decode_errors(record)


def dispatch_info_allowing_decode_errors(data: bytes) -> None:
    for check_crc in (False, True):
        try:
            decode_dispatch_info(data, 0, 0, check_crc=check_crc)
        except MessageDecodeError:
            pass


@FUZZ
@given(st.integers(-5, 700), st.sampled_from([0, 0x10, 0x20, 0x30, -1]), st.binary(max_size=600))
def test_decode_dispatch_info_on_arbitrary_bytes_raises_only_message_decode_error(size: int, sys_flag: int,
                                                                                  tail: bytes) -> None:
    dispatch_info_allowing_decode_errors(with_message_header(size, sys_flag, tail))


@pytest.mark.parametrize("sys_flag", [0x10, 0x20, 0x30])
def test_decode_dispatch_info_of_a_short_ipv6_record_raises_message_decode_error(sys_flag: int) -> None:
    # TOTALSIZE 92 passes the minimum-size check, but with an IPv6 host BODYLENGTH sits at 96..100 or
    # 108..112, past the end of a 92-byte buffer (this raised struct.error once)
    data = with_message_header(92, sys_flag, bytes(44))
    for check_crc in (False, True):
        with pytest.raises(MessageDecodeError):
            decode_dispatch_info(data, 0, 0, check_crc=check_crc)


@FUZZ
@given(st.binary(max_size=600))
@example(b"")
def test_decode_batch_on_arbitrary_bytes_raises_only_message_decode_error(data: bytes) -> None:
    try:
        decode_batch(data)
    except MessageDecodeError:
        pass


@FUZZ
@given(st.lists(st.builds(BatchEntry, st.binary(max_size=50), PROPERTIES.map(encode_properties), INT32),
                min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4))
def test_decode_batch_of_a_corrupted_batch_raises_only_message_decode_error(
        entries: list[BatchEntry], flips: list[tuple[int, int]]) -> None:
    data = bytearray(encode_batch(entries))
    assume(data)
    for where, value in flips:
        data[where % len(data)] = value
    try:
        decode_batch(bytes(data))
    except MessageDecodeError:
        pass
