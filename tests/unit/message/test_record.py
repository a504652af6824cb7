"""The commitlog record codec, checked byte by byte against the layout in store-format.md §3."""

from __future__ import annotations

import itertools
import struct
import zlib

import pytest

from rocketstore.errors import (
    InvalidTopicError,
    MessageDecodeError,
    MessageTooLargeError,
    PropertiesTooLargeError,
)
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.properties import encode_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    Message,
    SysFlag,
    decode_record,
    encode_record,
    record_size,
    store_timestamp_position,
)

V4_BORN = parse_host("192.168.0.7:50123")
V4_STORE = parse_host("10.0.0.1:10911")
V6_BORN = parse_host("[2001:db8::7]:50123")
V6_STORE = parse_host("[2001:db8::1]:10911")
HOSTS = {"v4": (V4_BORN, V4_STORE), "v6": (V6_BORN, V6_STORE)}


def sample_message(**changes: object) -> Message:
    fields: dict[str, object] = {
        "topic": "TopicTest", "body": b"hello world", "properties": {"TAGS": "TagA", "KEYS": "k1 k2"},
        "queue_id": 3, "flag": 77, "sys_flag": 0, "born_timestamp": 1_700_000_000_123, "reconsume_times": 2,
        "prepared_transaction_offset": 4096}
    fields.update(changes)
    return Message(**fields)  # type: ignore[arg-type]


def encode(message: Message, born: HostAddress = V4_BORN, store: HostAddress = V4_STORE, **kw: int) -> bytes:
    record, _ = encode_record(message, born_host=born, store_host=store, **kw)
    return bytes(record)


def test_magic_codes_are_the_java_ints() -> None:
    assert MESSAGE_MAGIC == struct.unpack(">i", bytes.fromhex("DAA320A7"))[0] == -626843481
    assert BLANK_MAGIC == struct.unpack(">i", bytes.fromhex("CBD43194"))[0] == -875286124


def test_ipv4_record_fields_sit_at_the_documented_offsets() -> None:
    m = sample_message()
    props = encode_properties(m.properties).encode()
    data = encode(m, store_timestamp=1_700_000_000_999, queue_offset=42, commit_log_offset=8192)
    body_len = len(m.body)
    assert len(data) == 91 + body_len + len("TopicTest") + len(props)
    assert struct.unpack_from(">i", data, 0)[0] == len(data)
    assert data[4:8] == bytes.fromhex("DAA320A7")
    assert struct.unpack_from(">i", data, 8)[0] == zlib.crc32(m.body) & 0x7FFFFFFF
    assert struct.unpack_from(">i", data, 12)[0] == 3
    assert struct.unpack_from(">i", data, 16)[0] == 77
    assert struct.unpack_from(">q", data, 20)[0] == 42
    assert struct.unpack_from(">q", data, 28)[0] == 8192
    assert struct.unpack_from(">i", data, 36)[0] == 0
    assert struct.unpack_from(">q", data, 40)[0] == 1_700_000_000_123
    assert data[48:52] == bytes([192, 168, 0, 7])
    assert struct.unpack_from(">i", data, 52)[0] == 50123
    assert struct.unpack_from(">q", data, 56)[0] == 1_700_000_000_999
    assert data[64:68] == bytes([10, 0, 0, 1])
    assert struct.unpack_from(">i", data, 68)[0] == 10911
    assert struct.unpack_from(">i", data, 72)[0] == 2
    assert struct.unpack_from(">q", data, 76)[0] == 4096
    assert struct.unpack_from(">i", data, 84)[0] == body_len
    assert data[88 : 88 + body_len] == m.body
    p = 88 + body_len
    assert data[p] == 9
    assert data[p + 1 : p + 10] == b"TopicTest"
    assert struct.unpack_from(">h", data, p + 10)[0] == len(props)
    assert data[p + 12 :] == props


@pytest.mark.parametrize(("born_v6", "store_v6"), list(itertools.product([False, True], repeat=2)))
def test_each_ipv6_host_adds_12_bytes_and_sets_its_flag(born_v6: bool, store_v6: bool) -> None:
    born = V6_BORN if born_v6 else V4_BORN
    store = V6_STORE if store_v6 else V4_STORE
    m = sample_message(properties={})
    record, sys_flag = encode_record(m, born_host=born, store_host=store, store_timestamp=5)
    assert len(record) == 91 + len(m.body) + 9 + 12 * born_v6 + 12 * store_v6
    assert len(record) == record_size(len(m.body), 9, 0, born_v6, store_v6)
    assert bool(sys_flag & SysFlag.BORNHOST_V6) == born_v6
    assert bool(sys_flag & SysFlag.STOREHOST_V6) == store_v6
    assert struct.unpack_from(">i", record, 36)[0] == sys_flag
    born_len = 20 if born_v6 else 8
    assert record[48 : 48 + len(born.ip)] == born.ip
    ts_pos = store_timestamp_position(sys_flag)
    assert ts_pos == 48 + born_len
    assert struct.unpack_from(">q", record, ts_pos)[0] == 5
    assert record[ts_pos + 8 : ts_pos + 8 + len(store.ip)] == store.ip
    store_len = 20 if store_v6 else 8
    assert struct.unpack_from(">i", record, ts_pos + 8 + store_len + 12)[0] == len(m.body)


@pytest.mark.parametrize(("born", "store"), list(itertools.product(["v4", "v6"], repeat=2)))
@pytest.mark.parametrize(
    "flag_bits",
    [0, SysFlag.COMPRESSED, SysFlag.MULTI_TAGS, SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE,
     SysFlag.TRANSACTION_ROLLBACK_TYPE, SysFlag.COMPRESSED | SysFlag.MULTI_TAGS | SysFlag.TRANSACTION_COMMIT_TYPE],
)
def test_record_round_trips_for_every_host_family_and_sys_flag_bit(born: str, store: str, flag_bits: int) -> None:
    born_host = HOSTS[born][0]
    store_host = HOSTS[store][1]
    m = sample_message(sys_flag=flag_bits, body=zlib.compress(b"x" * 100) if flag_bits & 1 else b"plain")
    record, sys_flag = encode_record(m, born_host=born_host, store_host=store_host, store_timestamp=123,
                                     queue_offset=9, commit_log_offset=1 << 33)
    got = decode_record(record, check_crc=True)
    expected_flag = flag_bits | (SysFlag.BORNHOST_V6 if born == "v6" else 0) | (
        SysFlag.STOREHOST_V6 if store == "v6" else 0)
    assert sys_flag == expected_flag == got.sys_flag
    assert (got.store_size, got.queue_id, got.flag, got.queue_offset, got.commit_log_offset) == (
        len(record), 3, 77, 9, 1 << 33)
    assert (got.born_timestamp, got.born_host, got.store_timestamp, got.store_host) == (
        1_700_000_000_123, born_host, 123, store_host)
    assert (got.reconsume_times, got.prepared_transaction_offset) == (2, 4096)
    assert got.body == m.body
    assert got.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF
    assert got.topic == "TopicTest"
    assert got.properties == m.properties
    assert got.tags == "TagA"
    assert got.keys == "k1 k2"


def test_stale_host_family_bits_in_the_message_follow_the_actual_hosts() -> None:
    m = sample_message(sys_flag=SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6 | SysFlag.MULTI_TAGS)
    record, sys_flag = encode_record(m, born_host=V4_BORN, store_host=V4_STORE)
    assert sys_flag == SysFlag.MULTI_TAGS
    assert decode_record(record).born_host == V4_BORN


def test_body_crc_clears_the_sign_bit() -> None:
    body = b"a"
    assert zlib.crc32(body) & 0x80000000  # 0xE8B7BE43: sign bit set
    data = encode(sample_message(body=body))
    assert struct.unpack_from(">i", data, 8)[0] == zlib.crc32(body) & 0x7FFFFFFF == 0x68B7BE43


def test_empty_body_has_crc_zero() -> None:
    data = encode(sample_message(body=b""))
    assert struct.unpack_from(">i", data, 8)[0] == 0
    assert decode_record(data, check_crc=True).body == b""


def test_explicit_properties_string_is_written_verbatim() -> None:
    data = encode_record(sample_message(), "Z\x01z\x02", born_host=V4_BORN, store_host=V4_STORE)[0]
    assert decode_record(data).properties_string == "Z\x01z\x02"


def test_smallest_record_is_92_bytes() -> None:
    data = encode(Message("T"))
    assert len(data) == 92
    assert decode_record(data).topic == "T"


def test_decode_at_a_position_inside_a_larger_buffer() -> None:
    a = encode(sample_message(body=b"first"))
    b = encode(sample_message(body=b"second", topic="Other"))
    buf = bytearray(a + b + bytes(50))
    assert decode_record(buf, len(a)).body == b"second"
    assert decode_record(memoryview(buf), 0).body == b"first"
    assert decode_record(buf, len(a), limit=len(a) + len(b)).topic == "Other"
    with pytest.raises(MessageDecodeError):
        decode_record(buf, len(a), limit=len(a) + len(b) - 1)


def test_decode_without_body_skips_the_body() -> None:
    assert decode_record(encode(sample_message()), with_body=False).body == b""


def test_decode_detects_a_body_crc_mismatch_only_when_asked() -> None:
    data = bytearray(encode(sample_message()))
    data[88] ^= 0xFF
    assert decode_record(data).body != b"hello world"
    with pytest.raises(MessageDecodeError):
        decode_record(data, check_crc=True)


def test_decode_rejects_a_blank_record() -> None:
    blank = struct.pack(">ii", 4096, BLANK_MAGIC) + bytes(4088)
    with pytest.raises(MessageDecodeError):
        decode_record(blank)


@pytest.mark.parametrize(("born", "store"), list(itertools.product(["v4", "v6"], repeat=2)))
def test_every_truncation_raises_message_decode_error(born: str, store: str) -> None:
    data = encode(sample_message(), HOSTS[born][0], HOSTS[store][1])
    for cut in range(len(data)):
        with pytest.raises(MessageDecodeError):
            decode_record(data[:cut])


def test_inconsistent_length_fields_raise_message_decode_error() -> None:
    good = encode(sample_message())
    body_len_at, p = 84, 88 + len(b"hello world")

    def patched(pos: int, fmt: str, value: int) -> bytes:
        buf = bytearray(good)
        struct.pack_into(fmt, buf, pos, value)
        return bytes(buf)

    cases = [
        patched(0, ">i", len(good) + 1),  # total size past the end
        patched(0, ">i", len(good) - 1),  # total size short of the properties
        patched(0, ">i", 91),  # below the minimum record
        patched(0, ">i", -5),
        patched(4, ">i", 0x12345678),  # bad magic
        patched(body_len_at, ">i", -1),
        patched(body_len_at, ">i", 2**31 - 1),
        patched(body_len_at, ">i", len(b"hello world") + 1),
        patched(p, ">B", 200),  # topic length above 127
        patched(p, ">B", 100),  # topic length past the end
        patched(p + 10, ">h", -1),  # negative properties length
        patched(p + 10, ">h", 1),  # properties length disagrees with the size
        patched(36, ">i", SysFlag.BORNHOST_V6),  # host family flag that does not match the bytes
    ]
    for data in cases:
        with pytest.raises(MessageDecodeError):
            decode_record(data)


def test_non_utf8_topic_or_properties_raise_message_decode_error() -> None:
    good = bytearray(encode(sample_message(properties={"A": "bc"})))
    topic_at = 88 + len(b"hello world") + 1
    bad_topic = bytearray(good)
    bad_topic[topic_at] = 0xFF
    bad_props = bytearray(good)
    bad_props[-1] = 0xC3
    for data in (bad_topic, bad_props):
        with pytest.raises(MessageDecodeError):
            decode_record(data, strict_text=True)
    # read by default as 4.9.3's MessageDecoder reads them: U+FFFD per malformed sequence
    assert decode_record(bad_topic).topic == "\ufffd" + sample_message().topic[1:]
    assert decode_record(bad_props).properties_string.endswith("\x01b\ufffd")


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 200, b"\xff" * 200, bytes(range(256)), b"\xda\xa3\x20\xa7" * 40])
def test_garbage_raises_message_decode_error(garbage: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        decode_record(garbage)


def test_negative_position_raises_message_decode_error() -> None:
    with pytest.raises(MessageDecodeError):
        decode_record(encode(sample_message()), -1)


# --- encoder limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["", "x" * 128, "a b", "t\u00e9", "a/b", "a.b"])
def test_encode_rejects_invalid_topics(topic: str) -> None:
    with pytest.raises(InvalidTopicError):
        encode_record(Message(topic), born_host=V4_BORN, store_host=V4_STORE)


def test_encode_accepts_127_character_topics_and_the_allowed_punctuation() -> None:
    for topic in ["x" * 127, "%RETRY%group-1_a|b"]:
        record, _ = encode_record(Message(topic), born_host=V4_BORN, store_host=V4_STORE)
        assert decode_record(record).topic == topic


def test_encode_rejects_properties_over_32767_bytes() -> None:
    encode_record(Message("T"), "a" * 32767, born_host=V4_BORN, store_host=V4_STORE)
    with pytest.raises(PropertiesTooLargeError):
        encode_record(Message("T"), "\u00e9" * 16384, born_host=V4_BORN, store_host=V4_STORE)


def test_encode_rejects_a_record_over_the_size_limit() -> None:
    m = Message("T", b"x" * (1000 - 92))
    record, _ = encode_record(m, born_host=V4_BORN, store_host=V4_STORE, max_message_bytes=1000)
    assert len(record) == 1000
    with pytest.raises(MessageTooLargeError) as info:
        encode_record(m, born_host=V4_BORN, store_host=V4_STORE, max_message_bytes=999)
    assert (info.value.size_bytes, info.value.limit_bytes) == (1000, 999)


# --- value types ---------------------------------------------------------------------------------------


def test_message_create_sets_tags_keys_and_uniq_key() -> None:
    m = Message.create("T", b"b", tags="TagA", keys=["k1", "k2"], uniq_key="U", properties={"x": "y"})
    assert m.properties == {"x": "y", "TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U"}
    assert (m.tags, m.keys) == ("TagA", "k1 k2")


def test_stored_message_msg_id_is_store_host_and_offset() -> None:
    data = encode(sample_message(), commit_log_offset=0x1234)
    assert decode_record(data).msg_id == "0A00000100002A9F0000000000001234"


def test_transaction_type_helpers() -> None:
    assert SysFlag.gets_queue_entry(0)
    assert SysFlag.gets_queue_entry(SysFlag.TRANSACTION_COMMIT_TYPE | SysFlag.COMPRESSED)
    assert not SysFlag.gets_queue_entry(SysFlag.TRANSACTION_PREPARED_TYPE)
    assert not SysFlag.gets_queue_entry(SysFlag.TRANSACTION_ROLLBACK_TYPE)
    assert SysFlag.transaction_type(0x3F) == 0xC


@pytest.mark.parametrize(("position", "port"), [(52, 65536), (52, -1), (68, 0x7FFFFFFF)])
def test_a_record_with_an_out_of_range_port_raises_message_decode_error(position: int, port: int) -> None:
    data = bytearray(encode(sample_message()))
    struct.pack_into(">i", data, position, port)  # born port @52, store port @68 (IPv4 / IPv4)
    with pytest.raises(MessageDecodeError):
        decode_record(data)
