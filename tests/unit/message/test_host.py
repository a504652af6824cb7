"""Host addresses as records store them: IP bytes (4 or 16) plus a port."""

from __future__ import annotations

import pytest

from rocketstore.errors import MessageError
from rocketstore.message.host import HostAddress, parse_host


def test_parse_ipv4_text() -> None:
    host = parse_host("10.0.0.1:10911")
    assert host == HostAddress(bytes([10, 0, 0, 1]), 10911)
    assert not host.is_v6
    assert str(host) == "10.0.0.1:10911"


def test_parse_bracketed_ipv6_text() -> None:
    host = parse_host("[2001:db8::1]:5555")
    assert host.ip == bytes.fromhex("20010db8000000000000000000000001")
    assert host.port == 5555
    assert host.is_v6


def test_ipv6_renders_like_java_without_zero_compression() -> None:
    assert str(parse_host("[2001:db8::1]:5555")) == "[2001:db8:0:0:0:0:0:1]:5555"
    assert parse_host("[::1]:1").ip_text() == "0:0:0:0:0:0:0:1"


def test_ipv4_mapped_ipv6_collapses_to_four_bytes() -> None:
    host = parse_host("[::ffff:192.168.1.2]:10911")
    assert host.ip == bytes([192, 168, 1, 2])
    assert not host.is_v6
    assert parse_host(("::ffff:10.0.0.1", 7)) == HostAddress(bytes([10, 0, 0, 1]), 7)


def test_parse_accepts_asyncio_peer_tuples() -> None:
    assert parse_host(("127.0.0.1", 50000)) == HostAddress(b"\x7f\x00\x00\x01", 50000)
    assert parse_host(("::1", 9)).ip == bytes(15) + b"\x01"


def test_parse_drops_an_ipv6_zone_id() -> None:
    assert parse_host(("fe80::1%eth0", 9)).ip == bytes.fromhex("fe800000000000000000000000000001")


def test_parse_passes_a_host_address_through() -> None:
    host = HostAddress(bytes(4), 1)
    assert parse_host(host) is host


def test_text_round_trips_through_str() -> None:
    for text in ["1.2.3.4:0", "255.255.255.255:65535", "[2001:db8:0:0:0:0:0:1]:5555"]:
        assert str(parse_host(text)) == text


@pytest.mark.parametrize("text", ["10.0.0.1", "10.0.0.1:port", "999.0.0.1:1", "[::1", "[::1]5", "host:1", ""])
def test_unparseable_text_raises_message_error(text: str) -> None:
    with pytest.raises(MessageError):
        parse_host(text)


@pytest.mark.parametrize(("ip", "port"), [(b"\x01\x02\x03", 1), (bytes(5), 1), (bytes(4), -1), (bytes(4), 65536)])
def test_host_address_rejects_bad_ip_lengths_and_ports(ip: bytes, port: int) -> None:
    with pytest.raises(MessageError):
        HostAddress(ip, port)


def test_port_out_of_range_in_text_raises_message_error() -> None:
    with pytest.raises(MessageError):
        parse_host("1.2.3.4:70000")
