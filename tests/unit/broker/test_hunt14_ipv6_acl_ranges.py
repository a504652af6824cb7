"""IPv6 white-address ranges, as 4.9.3's RangeRemoteAddressStrategy takes them: a ``*`` (any value) or a hex
``lo-hi`` in one group, the groups before it fixed (``::`` expanded), a ``*`` after a range leaving the last
group free.  Such a pattern in plain_acl.yml used to be refused as "not one RocketMQ accepts"; one 4.9.3
refuses (a ``*`` not at the end, a range not in the last groups) still is."""

from __future__ import annotations

import pytest

from rocketstore.broker.acl import AclConfigError, address_matcher


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    ("1050:0000:0000:0000:0005:0600:300c:*",
     ["1050::5:600:300c:1", "1050:0:0:0:5:600:300c:ffff"], ["1050::5:600:300d:1", "10.0.0.1", "::1"]),
    ("1050::5:600:300c:*", ["1050::5:600:300c:abcd"], ["1051::5:600:300c:1"]),
    # a hex range in the last group
    ("2001:db8:0:0:0:0:0:1-ff", ["2001:db8::1", "2001:db8::ff", "2001:db8::a0"],
     ["2001:db8::100", "2001:db8::", "::1"]),
    # a range in the 7th group, anything in the 8th
    ("2::ac5:78:1-200:*", ["2::ac5:78:1:0", "2:0:0:0:ac5:78:200:ffff"], ["2::ac5:78:201:0", "2::ac5:79:1:0"]),
])
def test_ipv6_range_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    match = address_matcher(pattern)
    assert all(match(ip) for ip in yes), [ip for ip in yes if not match(ip)]
    assert not any(match(ip) for ip in no), [ip for ip in no if match(ip)]


@pytest.mark.parametrize("pattern", ["1050::*:5", "2001:db8::1-ff:5", "2001:db8::ff-1", "2001:db8::1-fffff"])
def test_ipv6_range_patterns_rocketmq_refuses(pattern: str) -> None:
    with pytest.raises(AclConfigError):
        address_matcher(pattern)
