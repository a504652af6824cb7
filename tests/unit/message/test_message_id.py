"""Offset message ids: store host + port + commitlog offset in upper-case hex."""

from __future__ import annotations

import pytest

from rocketstore.errors import InvalidMessageIdError
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.message_id import decode_offset_message_id, encode_offset_message_id


def test_ipv4_id_matches_the_spec_example() -> None:
    assert encode_offset_message_id(parse_host("10.0.0.1:10911"), 0x1234) == "0A00000100002A9F0000000000001234"


def test_ipv4_id_decodes_to_host_and_offset() -> None:
    host, offset = decode_offset_message_id("0A00000100002A9F0000000000001234")
    assert host == HostAddress(bytes([10, 0, 0, 1]), 10911)
    assert offset == 0x1234


def test_ipv6_id_has_56_upper_case_hex_characters() -> None:
    host = parse_host("[2001:db8::abcd]:10911")
    msg_id = encode_offset_message_id(host, (1 << 40) + 5)
    assert msg_id == "20010DB800000000000000000000ABCD" + "00002A9F" + "0000010000000005"
    assert len(msg_id) == 56
    assert decode_offset_message_id(msg_id) == (host, (1 << 40) + 5)


def test_largest_offset_round_trips() -> None:
    host = parse_host("255.255.255.255:65535")
    msg_id = encode_offset_message_id(host, 2**63 - 1)
    assert msg_id == "FFFFFFFF0000FFFF7FFFFFFFFFFFFFFF"
    assert decode_offset_message_id(msg_id) == (host, 2**63 - 1)


def test_lower_case_ids_decode_too() -> None:
    assert decode_offset_message_id("0a00000100002a9f0000000000001234")[1] == 0x1234


@pytest.mark.parametrize(
    "msg_id",
    [
        "",
        "0A00000100002A9F000000000000123",  # 31 characters
        "0A00000100002A9F00000000000012345",  # 33 characters
        "ZZ00000100002A9F0000000000001234",  # not hex
        "0A000001FFFFFFFF0000000000001234",  # port -1
        "0A00000100010000" + "0000000000001234",  # port 65536
        "0A00000100002A9F8000000000000000",  # negative offset
    ],
)
def test_malformed_ids_raise_invalid_message_id_error(msg_id: str) -> None:
    with pytest.raises(InvalidMessageIdError):
        decode_offset_message_id(msg_id)
