"""IPv6 range white-address patterns as RocketMQ 4.9.3's RemoteAddressStrategyFactory reads them; every
vector below was produced by running 4.9.3's own RangeRemoteAddressStrategy on the same text:

* the pattern is not trimmed: blanks around a group before the range make the pattern fail its scope
  check (refused at load), a blank ahead of a range in the second group leaves a head no peer starts
  with (loads, never matches), and a blank after a final ``*`` puts the ``*`` off the end (refused);
* ``lo-hi:*`` has no group before its range and does not load."""

from __future__ import annotations

import pytest

from rocketstore.broker.acl import AclConfigError, address_matcher


@pytest.mark.parametrize("pattern", [
    "1-ff:*",
    "a-F:*",
    " 1:abcd:a-F",
    "1:abcd:* ",
])
def test_ipv6_range_patterns_4_9_3_refuses_do_not_load(pattern: str) -> None:
    with pytest.raises(AclConfigError):
        address_matcher(pattern)


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    (" 1:0-ffff", [], ["1:abcd:b::1", "1::1", "1:ff::1"]),
    (" 1::*", [], ["1:abcd:b::1", "1::1", "1:ff::1"]),
    ("1:abcd:a-f ", ["1:abcd:b::1"], ["1::1", "1:ff::1"]),
    ("1:abcd:a-f", ["1:abcd:b::1"], ["1::1", "1:ff::1"]),
    ("1:2-3:*", ["1:2:5::"], ["1:abcd:b::1"]),
])
def test_ipv6_range_patterns_match_as_in_4_9_3(pattern: str, yes: list[str], no: list[str]) -> None:
    matches = address_matcher(pattern)
    assert [ip for ip in yes + no if matches(ip)] == yes
