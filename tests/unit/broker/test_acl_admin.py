"""The ACL files as the admin requests rewrite them (broker/acl_admin.py), following RocketMQ 4.9.3's
PlainPermissionManager: a new account goes to conf/plain_acl.yml, an existing one is changed in the file that
defines it, the global white list of plain_acl.yml is replaced, each write bumps that file's dataVersion,
a refused request leaves the file byte for byte as it was, and the running PlainAcl sees the change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketstore.broker.acl import PlainAcl
from rocketstore.broker.acl_admin import AclAdmin, AclUpdateError, PlainAccessConfig, java_split
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

PLAIN = """\
# a comment the rewrite drops, as RocketMQ's does
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=PUB
  - accessKey: otherUser
    secretKey: otherSecret
    admin: true
dataVersion:
  - counter: 7
    timestamp: 1620000000000
"""
EXTRA = """\
accounts:
  - accessKey: fromExtraFile
    secretKey: extraSecret
    defaultTopicPerm: PUB
"""
NOW_MS = 1_700_000_000_000
LOCAL = "127.0.0.1"


def _home(tmp_path: Path, plain: str | None = PLAIN, extra: str | None = None) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    if plain is not None:
        (conf / "plain_acl.yml").write_text(plain, encoding="utf-8")
    if extra is not None:
        (conf / "acl").mkdir(exist_ok=True)
        (conf / "acl" / "x.yml").write_text(extra, encoding="utf-8")
    return tmp_path


def _admin(home: Path) -> tuple[PlainAcl, AclAdmin]:
    acl = PlainAcl(home)
    return acl, AclAdmin(acl, clock_ms=lambda: NOW_MS)


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _account(data: Any, ak: str) -> dict[str, Any]:
    [found] = [a for a in data["accounts"] if a["accessKey"] == ak]
    return dict(found)


def _send_check(acl: PlainAcl, ak: str, sk: str, topic: str = "anyTopic") -> str | None:
    ext = sign_ext_fields({"topic": topic, "producerGroup": "g"}, b"body", ak, sk)
    return acl.check(RequestCode.SEND_MESSAGE, ext, b"body", LOCAL)


def test_java_split_keeps_javas_rules() -> None:
    assert java_split(None) is None
    assert java_split("") == [""]
    assert java_split("a,b") == ["a", "b"]
    assert java_split("a,,b,,") == ["a", "", "b"]
    assert java_split(",") == []


def test_a_new_account_goes_to_plain_acl_yml_and_bumps_its_data_version(tmp_path: Path) -> None:
    home = _home(tmp_path)
    acl, admin = _admin(home)
    assert _send_check(acl, "newAccount", "newSecret1") == "No acl config for newAccount"
    assert admin.update_account(PlainAccessConfig("newAccount", "newSecret1", None, False, "PUB", "SUB",
                                                  ["topicX=SUB", "topicY=PUB|SUB"], None))
    data = _load(home / "conf" / "plain_acl.yml")
    assert _account(data, "newAccount") == {"accessKey": "newAccount", "secretKey": "newSecret1", "admin": False,
                                            "defaultTopicPerm": "PUB", "defaultGroupPerm": "SUB",
                                            "topicPerms": ["topicX=SUB", "topicY=PUB|SUB"]}
    assert data["accounts"][-1]["accessKey"] == "newAccount"
    assert [a["accessKey"] for a in data["accounts"]] == ["RocketMQ", "otherUser", "newAccount"]
    assert data["dataVersion"] == [{"counter": 8, "timestamp": NOW_MS}]
    assert data["globalWhiteRemoteAddresses"] == ["10.10.103.*"]
    # the running ACL knows the account at once: its signed send passes (defaultTopicPerm PUB)
    assert _send_check(acl, "newAccount", "newSecret1") is None
    assert _send_check(acl, "newAccount", "wrongSecret") == "Check signature failed for accessKey=newAccount"
    assert not list((home / "conf").glob("*.tmp")), "the temporary file is gone"


def test_updating_keeps_what_the_request_leaves_unset_and_moves_the_account_last(tmp_path: Path) -> None:
    home = _home(tmp_path)
    acl, admin = _admin(home)
    admin.update_account(PlainAccessConfig("RocketMQ", "newSecret9", white_remote_address="192.168.1.*",
                                           admin=True))
    data = _load(home / "conf" / "plain_acl.yml")
    assert [a["accessKey"] for a in data["accounts"]] == ["otherUser", "RocketMQ"]
    assert _account(data, "RocketMQ") == {"accessKey": "RocketMQ", "secretKey": "newSecret9", "admin": True,
                                          "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
                                          "topicPerms": ["topicA=PUB"], "whiteRemoteAddress": "192.168.1.*"}
    assert data["dataVersion"][0]["counter"] == 8
    admin.update_account(PlainAccessConfig("RocketMQ", "newSecret9", topic_perms=["topicB=SUB"]))
    data = _load(home / "conf" / "plain_acl.yml")
    assert _account(data, "RocketMQ")["topicPerms"] == ["topicB=SUB"]
    assert _account(data, "RocketMQ")["admin"] is False  # admin is always written, as 4.9.3 does
    assert data["dataVersion"][0]["counter"] == 9
    assert acl.config.accounts["RocketMQ"].secret_key == "newSecret9"


def test_an_account_of_conf_acl_x_yml_is_updated_there(tmp_path: Path) -> None:
    home = _home(tmp_path, extra=EXTRA)
    acl, admin = _admin(home)
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    admin.update_account(PlainAccessConfig("fromExtraFile", "extraSecret2", default_topic_perm="PUB|SUB"))
    extra = _load(home / "conf" / "acl" / "x.yml")
    assert _account(extra, "fromExtraFile")["secretKey"] == "extraSecret2"
    assert _account(extra, "fromExtraFile")["defaultTopicPerm"] == "PUB|SUB"
    assert extra["dataVersion"] == [{"counter": 1, "timestamp": NOW_MS}]  # the file had none: 0 + 1
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before
    default, files = admin.versions()
    assert files[str((home / "conf" / "acl" / "x.yml").absolute())].counter == 1
    assert default.counter == 7
    assert _send_check(acl, "fromExtraFile", "extraSecret2") is None


def test_delete_removes_the_account_from_its_file(tmp_path: Path) -> None:
    home = _home(tmp_path, extra=EXTRA)
    acl, admin = _admin(home)
    assert _send_check(acl, "fromExtraFile", "extraSecret") is None
    assert admin.delete_account("fromExtraFile")
    assert _load(home / "conf" / "acl" / "x.yml")["accounts"] == []
    assert _send_check(acl, "fromExtraFile", "extraSecret") == "No acl config for fromExtraFile"
    assert admin.delete_account("RocketMQ")
    data = _load(home / "conf" / "plain_acl.yml")
    assert [a["accessKey"] for a in data["accounts"]] == ["otherUser"]
    assert data["dataVersion"][0]["counter"] == 8
    # unknown or blank: False, nothing written
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    assert not admin.delete_account("noSuchAccount")
    assert not admin.delete_account("")
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


def test_the_global_white_list_is_replaced_in_plain_acl_yml(tmp_path: Path) -> None:
    home = _home(tmp_path)
    acl, admin = _admin(home)
    assert _send_check(acl, "nobody1", "whatever") == "No acl config for nobody1"
    assert admin.update_global_white(["127.0.0.*", "192.168.0.1-100"])
    data = _load(home / "conf" / "plain_acl.yml")
    assert data["globalWhiteRemoteAddresses"] == ["127.0.0.*", "192.168.0.1-100"]
    assert data["dataVersion"][0] == {"counter": 8, "timestamp": NOW_MS}
    assert _send_check(acl, "nobody1", "whatever") is None  # 127.0.0.1 is white now
    assert admin.update_global_white([])
    assert _load(home / "conf" / "plain_acl.yml")["globalWhiteRemoteAddresses"] == []
    assert _send_check(acl, "nobody1", "whatever") == "No acl config for nobody1"


def test_a_white_list_update_needs_the_key_to_be_there(tmp_path: Path) -> None:
    home = _home(tmp_path, plain="accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n")
    _, admin = _admin(home)
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    assert not admin.update_global_white(["127.0.0.1"])
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


@pytest.mark.parametrize(("cfg", "message"), [
    (PlainAccessConfig("short", "12345678"), "cannot be null and length should longer than 6"),
    (PlainAccessConfig("RocketMQ", None), "cannot be null and length should longer than 6"),
    (PlainAccessConfig("RocketMQ", "123456"), "cannot be null and length should longer than 6"),
    (PlainAccessConfig("newAccount", "newSecret1", topic_perms=["topicA"]), "Parse Resource format error"),
    (PlainAccessConfig("newAccount", "newSecret1", group_perms=["groupA=ALL"]), "Parse resource permission error"),
    (PlainAccessConfig("RocketMQ", "12345678", white_remote_address="1.2.3.4-x*"), "is not one RocketMQ accepts"),
])
def test_a_broken_request_leaves_the_file_as_it_was(tmp_path: Path, cfg: PlainAccessConfig, message: str) -> None:
    home = _home(tmp_path)
    acl, admin = _admin(home)
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    config_before = acl.config
    with pytest.raises(AclUpdateError, match=message.replace("|", r"\|")):
        admin.update_account(cfg)
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before
    assert acl.config is config_before
    assert sorted(p.name for p in (home / "conf").iterdir()) == ["plain_acl.yml"]


def test_a_bad_white_pattern_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    home = _home(tmp_path)
    _, admin = _admin(home)
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    with pytest.raises(AclUpdateError):
        admin.update_global_white(["10.0.0.1-x*"])
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


def test_a_new_account_without_plain_acl_yml_creates_it(tmp_path: Path) -> None:
    home = _home(tmp_path, plain=None, extra=EXTRA)
    acl, admin = _admin(home)
    admin.update_account(PlainAccessConfig("brandNewOne", "brandNewSecret", admin=True))
    data = _load(home / "conf" / "plain_acl.yml")
    assert data == {"accounts": [{"accessKey": "brandNewOne", "secretKey": "brandNewSecret", "admin": True}],
                    "dataVersion": [{"counter": 1, "timestamp": NOW_MS}]}
    assert acl.config.accounts["brandNewOne"].admin


def test_all_config_lists_every_file_first_definition_wins(tmp_path: Path) -> None:
    dup = EXTRA + "  - accessKey: RocketMQ\n    secretKey: shadowed1\n"
    home = _home(tmp_path, extra="globalWhiteRemoteAddresses:\n  - 1.1.1.1\n" + dup)
    _, admin = _admin(home)
    whites, accounts = admin.all_config()
    assert whites == ["1.1.1.1", "10.10.103.*"]  # conf/acl files first, then plain_acl.yml
    by_key = {a.access_key: a for a in accounts}
    assert list(by_key) == ["fromExtraFile", "RocketMQ", "otherUser"]
    assert by_key["RocketMQ"].secret_key == "shadowed1"
    assert by_key["otherUser"].to_json() == {"accessKey": "otherUser", "admin": True, "secretKey": "otherSecret"}
    default, files = admin.versions()
    assert default.counter == 7 and default.timestamp_ms == 1620000000000
    assert set(files) == {str((home / "conf" / "acl" / "x.yml").absolute()),
                          str((home / "conf" / "plain_acl.yml").absolute())}
