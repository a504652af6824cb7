"""Plain ACL (broker/acl.py) as shared/spec/acl.md states RocketMQ 4.9.3's: white address patterns,
permission strings and bits, the files and their order, the resources each request code needs, and the
order of the checks (global white list, access key, account white list, signature, admin codes, perms)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocketstore.broker.acl import (
    DENY,
    PUB,
    SUB,
    AclConfigError,
    PlainAcl,
    acl_files,
    address_matcher,
    check_permission,
    needed_resources,
    parse_perm,
)
from rocketstore.remoting.acl_signing import sign, sign_ext_fields, signing_content
from rocketstore.remoting.codes import RequestCode

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 172.16.5.{1,2}
    admin: true
"""
LOCAL = "127.0.0.1"


def _home(tmp_path: Path, text: str = ACL) -> Path:
    (tmp_path / "conf").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_text(text, encoding="utf-8")
    return tmp_path


def _signed(ext: dict[str, str], body: bytes | None = None, ak: str = "RocketMQ", sk: str = "12345678"
            ) -> dict[str, str]:
    return sign_ext_fields(ext, body, ak, sk)


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    ("*", ["1.2.3.4", "::1"], []),
    ("*.*.*.*", ["9.9.9.9"], []),
    ("", [], ["127.0.0.1"]),
    ("192.168.0.*", ["192.168.0.1", "192.168.0.255"], ["192.168.1.1", "10.0.0.1"]),
    ("192.168.*.*", ["192.168.7.9"], ["192.169.0.1"]),
    ("192.168.1.1-100", ["192.168.1.1", "192.168.1.100"], ["192.168.1.101", "192.168.1.0"]),
    ("10.10.*.*", ["10.10.3.4"], ["10.11.0.1"]),
    ("172.16.5.{1,2}", ["172.16.5.1", "172.16.5.2"], ["172.16.5.3"]),
    ("127.0.0.1,127.0.0.2", ["127.0.0.2"], ["127.0.0.3"]),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.11"]),
    ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["127.0.0.1"]),
])
def test_white_address_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    match = address_matcher(pattern)
    assert all(match(ip) for ip in yes), [ip for ip in yes if not match(ip)]
    assert not any(match(ip) for ip in no), [ip for ip in no if match(ip)]


def test_a_pattern_rocketmq_would_reject_is_an_error() -> None:
    with pytest.raises(AclConfigError):
        address_matcher("x.168.1.*")


def test_permission_strings_and_checks() -> None:
    assert [parse_perm(t) for t in ("PUB", "SUB", "PUB|SUB", " SUB|PUB ", "DENY", "junk", None)] == \
        [PUB, SUB, PUB | SUB, PUB | SUB, DENY, DENY, DENY]
    assert check_permission(PUB, PUB | SUB) and check_permission(SUB, SUB) and not check_permission(PUB, SUB)
    assert not check_permission(PUB, DENY | PUB)  # DENY wins
    assert check_permission(2, SUB) and not check_permission(2, DENY)  # ANY: PUB or SUB


def test_files_are_the_acl_directory_sorted_then_plain_acl_yml_and_the_first_key_wins(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "conf" / "acl" / "b").mkdir(parents=True)
    (home / "conf" / "acl" / "b" / "z.yaml").write_text(
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: first-secret\n    admin: true\n", encoding="utf-8")
    (home / "conf" / "acl" / "a.yml").write_text("globalWhiteRemoteAddresses:\n  - 8.8.8.8\n", encoding="utf-8")
    (home / "conf" / "acl" / "notes.txt").write_text("not yaml", encoding="utf-8")
    assert acl_files(home) == [home / "conf/acl/a.yml", home / "conf/acl/b/z.yaml", home / "conf/plain_acl.yml"]
    acl = PlainAcl(home)
    assert acl.config.accounts["RocketMQ"].secret_key == "first-secret"  # conf/acl/ came first
    assert "rocketmq2" in acl.config.accounts
    assert "first-secret" not in repr(acl.config.accounts["RocketMQ"])
    assert acl.check(RequestCode.SEND_MESSAGE_V2, {"b": "t"}, None, "8.8.8.8") is None  # white in a.yml


@pytest.mark.parametrize("text", [
    "accounts:\n  - accessKey: short\n    secretKey: 12345678\n",
    "accounts:\n  - accessKey: long-enough\n    secretKey: 123456\n",
    "accounts:\n  - accessKey: long-enough\n    secretKey: 12345678\n    topicPerms:\n      - topicA\n",
    "",
    "accounts: [",
])
def test_a_file_that_rocketmq_would_not_load_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(AclConfigError):
        PlainAcl(_home(tmp_path, text))


def test_signing_content_is_the_sorted_values_then_the_body_without_the_signature() -> None:
    ext = {"b": "T", "AccessKey": "ak", "a": "G", "Signature": "x", "_UNIQUE_KEY_QUERY": "true"}
    assert signing_content(ext, b"BODY") == b"akGTBODY"  # "AccessKey" < "a" < "b": upper case sorts first
    signed = sign_ext_fields({"b": "T", "a": "G"}, b"BODY", "ak", "secret-key")
    assert signed["AccessKey"] == "ak"
    assert signed["Signature"] == sign("secret-key", b"akGTBODY")
    assert len(signed["Signature"]) == 28 and signed["Signature"].endswith("=")  # Base64 of a SHA-1 HMAC


def test_resources_each_request_code_needs() -> None:
    assert needed_resources(RequestCode.SEND_MESSAGE, {"topic": "t"}, None) == {"t": PUB}
    assert needed_resources(RequestCode.SEND_MESSAGE_V2, {"b": "t"}, None) == {"t": PUB}
    assert needed_resources(RequestCode.SEND_BATCH_MESSAGE, {"b": "t"}, None) == {}  # not checked in 4.9.3
    assert needed_resources(RequestCode.PULL_MESSAGE, {"topic": "t", "consumerGroup": "g"}, None) == \
        {"t": SUB, "%RETRY%g": SUB}
    assert needed_resources(RequestCode.CONSUMER_SEND_MSG_BACK, {"originTopic": "t", "group": "g"}, None) == \
        {"t": PUB, "%RETRY%g": SUB}
    assert needed_resources(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "t", "consumerGroup": "g"}, None) == \
        {"%RETRY%g": SUB, "t": SUB}
    heartbeat = json.dumps({"clientID": "c", "producerDataSet": [{"groupName": "p"}], "consumerDataSet": [
        {"groupName": "g", "subscriptionDataSet": [{"topic": "t1"}, {"topic": "t2"}]}]}).encode()
    assert needed_resources(RequestCode.HEART_BEAT, {}, heartbeat) == {"%RETRY%g": SUB, "t1": SUB, "t2": SUB}
    assert needed_resources(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}, None) == {}


def test_the_checks_in_rocketmqs_order(tmp_path: Path) -> None:
    acl = PlainAcl(_home(tmp_path))
    send = RequestCode.SEND_MESSAGE_V2
    # a global white address passes without anything else, even a bad signature
    assert acl.check(send, {"b": "topicA"}, b"x", "10.10.103.7") is None
    assert acl.check(send, {"b": "topicB"}, b"x", LOCAL) == "No accessKey is configured"
    assert acl.check(send, {"b": "topicB", "AccessKey": "nobody"}, b"x", LOCAL) == "No acl config for nobody"
    # the account's white address passes without a signature; elsewhere the signature counts
    assert acl.check(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "t", "AccessKey": "rocketmq2"}, None,
                     "172.16.5.2") is None
    ok = _signed({"b": "topicB", "a": "g"}, b"body")
    assert acl.check(send, ok, b"body", LOCAL) is None
    assert acl.check(send, ok, b"b0dy", LOCAL) == "Check signature failed for accessKey=RocketMQ"
    assert acl.check(send, {**ok, "b": "topicC"}, b"body", LOCAL) == "Check signature failed for accessKey=RocketMQ"
    wrong_key = _signed({"b": "topicB"}, b"body", sk="not-the-secret")
    assert acl.check(send, wrong_key, b"body", LOCAL) == "Check signature failed for accessKey=RocketMQ"
    # explicit perms, then the defaults (DENY for topics, SUB for groups)
    assert acl.check(send, _signed({"b": "topicA"}, b"x"), b"x", LOCAL) == "No default permission for topic:topicA"
    assert acl.check(send, _signed({"b": "topicC"}, b"x"), b"x", LOCAL) == "No default permission for topic:topicC"
    assert acl.check(send, _signed({"b": "other"}, b"x"), b"x", LOCAL) == "No default permission for topic:other"
    pull = RequestCode.PULL_MESSAGE
    assert acl.check(pull, _signed({"topic": "topicC", "consumerGroup": "groupZ"}), None, LOCAL) is None
    assert acl.check(pull, _signed({"topic": "topicC", "consumerGroup": "groupA"}), None, LOCAL) == \
        "No default permission for group:groupA"
    # admin-only codes
    assert acl.check(RequestCode.UPDATE_AND_CREATE_TOPIC, _signed({"topic": "topicB"}), None, LOCAL) == \
        f"Need admin permission for request code={int(RequestCode.UPDATE_AND_CREATE_TOPIC)}, " \
        "but accessKey=RocketMQ is not"
    # an admin listing no perms passes everything it signs
    admin = _signed({"topic": "anything"}, None, ak="rocketmq2", sk="87654321")
    assert acl.check(RequestCode.UPDATE_AND_CREATE_TOPIC, admin, None, LOCAL) is None
    assert acl.check(RequestCode.HEART_BEAT, _signed({}, b"not json"), b"not json", LOCAL) is not None


def test_a_changed_file_is_read_again_and_a_broken_one_keeps_the_last_good(tmp_path: Path) -> None:
    now = [0.0]
    home = _home(tmp_path)
    acl = PlainAcl(home, clock=lambda: now[0])
    req = _signed({"b": "topicD"}, b"x")
    assert acl.check(RequestCode.SEND_MESSAGE_V2, req, b"x", LOCAL) == "No default permission for topic:topicD"
    path = home / "conf" / "plain_acl.yml"
    path.write_text(ACL.replace("topicC=SUB", "topicC=SUB\n      - topicD=PUB"), encoding="utf-8")
    os.utime(path, ns=(1, 1_000_000_000))  # a different mtime whatever the file system's resolution
    assert acl.check(RequestCode.SEND_MESSAGE_V2, req, b"x", LOCAL) is not None  # looked at most once a second
    now[0] += 1.5
    assert acl.check(RequestCode.SEND_MESSAGE_V2, req, b"x", LOCAL) is None
    path.write_text("accounts: [", encoding="utf-8")
    os.utime(path, ns=(2, 2_000_000_000))
    now[0] += 1.5
    assert acl.check(RequestCode.SEND_MESSAGE_V2, req, b"x", LOCAL) is None  # the broken file changed nothing
