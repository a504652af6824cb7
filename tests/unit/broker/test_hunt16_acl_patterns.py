"""IPv4 white-address patterns (globalWhiteRemoteAddresses, whiteRemoteAddress) as RocketMQ 4.9.3's
RemoteAddressStrategyFactory takes them; each case below was checked against 4.9.3's own classes:

* a range pattern needs four octets: ``192.168.*`` and ``10.*`` do not load;
* the range is the first of octets 2..4 that is ``*`` or ``lo-hi``; the octets after it are not looked at,
  so ``192.168.1-5.7`` lets 192.168.3.99 in;
* the octets of a range pattern are trimmed, but exact and listed addresses must be valid IP addresses as
  commons-validator checks them (no blanks, no leading zeros, no host names);
* a ``{...}`` list needs four octets and the braces in the last one."""

from __future__ import annotations

import pytest

from rocketstore.broker.acl import AclConfigError, address_matcher


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    ("192.168.1-5.7", ["192.168.3.99", "192.168.1.7"], ["192.168.6.7", "192.169.3.7"]),
    ("192.168.*.7", ["192.168.3.99"], ["192.169.3.7"]),
    ("10.10.1-3.*", ["10.10.2.200"], ["10.10.4.1"]),
    (" 192.168.0.* ", ["192.168.0.1"], ["192.168.1.1"]),
    ("192.168.0.1--5", ["192.168.0.3"], ["192.168.0.6"]),
    ("192.168.0.+1-+5", ["192.168.0.3"], ["192.168.0.6"]),
    ("192.168.x.*", [], ["192.168.3.4"]),  # loads, never matches
    ("10.10.0-0.*", [], ["10.10.0.1"]),  # an empty range goes on to the next octet: head 10.10.0-0.
    ("1.2.3.{}", [], ["1.2.3.4"]),
    ("192.168.0.1,,192.168.0.2", ["192.168.0.2"], ["192.168.0.3"]),
])
def test_ipv4_patterns_match_as_in_rocketmq(pattern: str, yes: list[str], no: list[str]) -> None:
    match = address_matcher(pattern)
    assert all(match(ip) for ip in yes), [ip for ip in yes if not match(ip)]
    assert not any(match(ip) for ip in no), [ip for ip in no if match(ip)]


@pytest.mark.parametrize("pattern", [
    "192.168.*", "10.*", "10.1-2", "x.168.1.*", "1-2.3.4.*", "10.0-0.1.*", " *", "1.2.3.4}", "192.168.{1,2}",
    "192.168.0.{1, 2}", "192.168.0.1, 192.168.0.2", "01.2.3.4", "localhost", " 1.2.3.4", "256.1.1.1",
    "192.168.0.5-", "192.168.0.-5", "192.168.0.5-300", "192.168.0.9-1",
    "*.0.0.1",  # 4.9.3 loads it, then fails every check with a NullPointerException
])
def test_ipv4_patterns_rocketmq_refuses(pattern: str) -> None:
    with pytest.raises(AclConfigError):
        address_matcher(pattern)
