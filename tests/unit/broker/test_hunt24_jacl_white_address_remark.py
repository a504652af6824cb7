"""An updateAclConfig whose white address is no IP address is refused with the remark RocketMQ 4.9.3 gives.

Captured from the 4.9.3 broker (mqadmin updateAclConfig -w ...): the response is code 209 (UPDATE_AND_CREATE_ACL_
CONFIG_FAILED) with the remark ``Netaddress examine Exception netaddress is <address>``, the address being the
one piece of the pattern that failed (``bad`` for ``1.1.1.1,bad``, the whole text for a single address).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.acl import AclConfigError, PlainAcl, address_matcher
from rocketstore.broker.acl_admin import AclAdmin, AclUpdateError, PlainAccessConfig

PLAIN = """\
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: true
"""


@pytest.mark.parametrize(("white", "remark"), [
    # remarks captured from 4.9.3
    ("bad.addr", "Netaddress examine Exception netaddress is bad.addr"),
    ("1.1.1.1,bad", "Netaddress examine Exception netaddress is bad"),
])
def test_update_with_a_white_address_that_is_no_ip(tmp_path: Path, white: str, remark: str) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN, encoding="utf-8")
    admin = AclAdmin(PlainAcl(tmp_path), clock_ms=lambda: 1_700_000_000_000)
    with pytest.raises(AclUpdateError) as info:
        admin.update_account(PlainAccessConfig("newUser04", "secret0001", white_remote_address=white))
    assert str(info.value) == remark


def test_matcher_names_the_address_of_a_brace_list() -> None:
    with pytest.raises(AclConfigError, match=r"^Netaddress examine Exception netaddress is 192\.168\.1\.x$"):
        address_matcher("192.168.1.{1,x}")
