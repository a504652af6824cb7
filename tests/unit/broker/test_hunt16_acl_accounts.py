"""An account's ``admin`` in plain_acl.yml as RocketMQ 4.9.3 reads it: fastjson turns the YAML value into
PlainAccessConfig's boolean (TypeUtils.castToBoolean), so ``admin: 1`` and ``admin: "Y"`` make an admin,
and a value it cannot cast (``admin: "maybe"``) keeps the file from loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.acl import AclConfigError, PlainAcl
from rocketstore.broker.acl_admin import AclAdmin
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

ACL = """\
accounts:
  - accessKey: rocketstore-adm
    secretKey: s3cret-key-2
    admin: {admin}
"""
OUTSIDER = "8.8.8.8"


def _home(tmp_path: Path, admin: str) -> Path:
    (tmp_path / "conf").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL.format(admin=admin), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("admin", "is_admin"), [
    ("true", True), ("yes", True), ("1", True), ("'1'", True), ("'Y'", True), ("'y'", True), ("'T'", True),
    ("'TRUE'", True), ("1.5", True), ("4294967297", True),
    ("false", False), ("0", False), ("2", False), ("'0'", False), ("'N'", False), ("'f'", False),
    ("''", False), ("'null'", False), ("", False),
])
def test_admin_values(tmp_path: Path, admin: str, is_admin: bool) -> None:
    acl = PlainAcl(_home(tmp_path, admin))
    assert acl.config.accounts["rocketstore-adm"].admin is is_admin
    ext = sign_ext_fields({"topic": "NewTopic"}, None, "rocketstore-adm", "s3cret-key-2")
    why = acl.check(RequestCode.UPDATE_AND_CREATE_TOPIC, ext, None, OUTSIDER)
    assert (why is None) is is_admin, why
    # the ACL config query reads the flag the same way
    _, accounts = AclAdmin(acl).all_config()
    assert [a.admin for a in accounts] == [is_admin]


@pytest.mark.parametrize("admin", ["maybe", "'t'", "'n'", "[true]", "{a: 1}", "2001-02-03"])
def test_admin_values_fastjson_cannot_cast_do_not_load(tmp_path: Path, admin: str) -> None:
    with pytest.raises(AclConfigError):
        PlainAcl(_home(tmp_path, admin))


def test_perms_are_trimmed_as_java_trims_them(tmp_path: Path) -> None:
    """Java's String.trim takes off what is at most a space (tabs, control characters), not a no-break
    space: ``PUB\\u00a0`` is no permission name, so DENY."""
    (tmp_path / "conf").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        'accounts:\n  - accessKey: rocketstore-app\n    secretKey: s3cret-key-1\n'
        '    defaultTopicPerm: "SUB\\t"\n    topicPerms:\n      - "topicA=PUB\\u00a0"\n'
        '      - "\\ttopicB\\t= PUB\\u0001"\n', encoding="utf-8")
    account = PlainAcl(tmp_path).config.accounts["rocketstore-app"]
    assert account.perms == {"topicA": 1, "topicB": 4}  # DENY, PUB
    assert account.default_topic_perm == 8  # SUB
