"""A HEART_BEAT without a body is refused by an ACL broker, as RocketMQ 4.9.3 refuses it.

Captured from the 4.9.3 broker (aclEnable=true, a signed HEART_BEAT with no body, from an account and from a
globally white-listed address alike): response code 1 (SYSTEM_ERROR) with the remark
``org.apache.rocketmq.acl.common.AclException: Cannot read the array length because "bytes" is null, ...``:
its PlainAccessValidator reads the groups out of the HeartbeatData body before anything else and fails.
Ours let such a heartbeat through (code 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.acl import PlainAcl
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

PLAIN = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""


@pytest.mark.parametrize("body", [None, b""])
@pytest.mark.parametrize("peer", ["127.0.0.1", "10.10.103.7"])
def test_a_heartbeat_without_body_is_refused(tmp_path: Path, body: bytes | None, peer: str) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN, encoding="utf-8")
    acl = PlainAcl(tmp_path)
    ext = sign_ext_fields({}, body, "RocketMQ", "12345678")
    assert acl.check(RequestCode.HEART_BEAT, ext, body, peer) is not None


def test_a_heartbeat_with_a_body_still_passes(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN, encoding="utf-8")
    acl = PlainAcl(tmp_path)
    body = b'{"clientID":"c@1","consumerDataSet":[],"producerDataSet":[{"groupName":"pg"}]}'
    ext = sign_ext_fields({}, body, "RocketMQ", "12345678")
    assert acl.check(RequestCode.HEART_BEAT, ext, body, "127.0.0.1") is None
