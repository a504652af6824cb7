"""A heartbeat whose body is nested too deeply to read is refused by the ACL check like any body that is not
JSON: an AclException remark, not a RecursionError escaping the check.

Found by sending a signed HEART_BEAT with 100,000 nested arrays to an aclEnable=true broker: the check's
RecursionError went up to the connection, which logged its traceback at ERROR (a log any client could fill)
and answered "RecursionError: maximum recursion depth exceeded ...".  4.9.3 answers SYSTEM_ERROR with an
AclException remark (captured from 4.9.3: "org.apache.rocketmq.acl.common.AclException: syntax error,
expect {, actual [, pos 0, ...": fastjson's message, which ours does not copy).
"""

from __future__ import annotations

from pathlib import Path

from rocketstore.broker.acl import PlainAcl
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

ACL = """\
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    admin: true
"""

DEEP = b'{"clientID":"x","consumerDataSet":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def test_a_heartbeat_nested_too_deeply_is_an_acl_refusal(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL)
    acl = PlainAcl(tmp_path)
    ext = sign_ext_fields({}, DEEP, "RocketMQ", "12345678")

    why = acl.check(RequestCode.HEART_BEAT, ext, DEEP, "127.0.0.1")

    assert why is not None and why.startswith("heartbeat body is not JSON"), why


def test_a_heartbeat_nested_but_readable_is_still_served(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL)
    acl = PlainAcl(tmp_path)
    body = b'{"clientID":"x","producerDataSet":[],"consumerDataSet":[]}'
    ext = sign_ext_fields({}, body, "RocketMQ", "12345678")

    assert acl.check(RequestCode.HEART_BEAT, ext, body, "127.0.0.1") is None


def test_a_heartbeat_the_handler_reads_leniently_passes_the_check_too(tmp_path: Path) -> None:
    # (review) the check parsed with json.loads, the handler with fastjson's lenient reader: a BOM or a raw
    # control character in a string was "not JSON" to the check alone
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL)
    acl = PlainAcl(tmp_path)
    for body in ('\ufeff{"clientID":"x","producerDataSet":[],"consumerDataSet":[]}'.encode(),
                 b'{"clientID":"x\tid","producerDataSet":[],"consumerDataSet":[]}'):
        ext = sign_ext_fields({}, body, "RocketMQ", "12345678")
        assert acl.check(RequestCode.HEART_BEAT, ext, body, "127.0.0.1") is None, body
