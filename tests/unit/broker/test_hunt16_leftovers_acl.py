"""Leftovers of the ACL code compared with RocketMQ 4.9.3:

* an account of an ACL file is read into a PlainAccessConfig by fastjson 1.2.76 (JSONArray.toJavaList ->
  JavaBeanDeserializer.createInstance -> smartMatch): a key names a property when it is its name, or is
  its name once '_' and '-' are dropped and ASCII letters lowered; "is" + a name matches the boolean
  ``admin`` only.  Other keys are ignored; a key that is no text keeps the file from loading.
* Permission.checkResourcePerms (an UPDATE_AND_CREATE_ACL_CONFIG's topicPerms/groupPerms) trims the perm
  with String.trim, which leaves U+00A0 on: ``topicA=PUB\\u00a0`` is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.acl import AclConfigError, PlainAcl, account_fields
from rocketstore.broker.acl_admin import AclAdmin, AclUpdateError, PlainAccessConfig
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

OUTSIDER = "8.8.8.8"
SECRET = "s3cret-key-9"


def _home(tmp_path: Path, account: str) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "plain_acl.yml").write_text("accounts:\n  - " + account.replace("\n", "\n    ") + "\n",
                                        encoding="utf-8")
    return tmp_path


def _pull_allowed(acl: PlainAcl, access_key: str, topic: str, group: str) -> bool:
    ext = sign_ext_fields({"topic": topic, "consumerGroup": group}, None, access_key, SECRET)
    return acl.check(RequestCode.PULL_MESSAGE, ext, None, OUTSIDER) is None


@pytest.mark.parametrize(("ak_key", "sk_key"), [
    ("AccessKey", "SecretKey"), ("ACCESSKEY", "secretkey"), ("access_key", "secret_key"),
    ("access-key", "SECRET-KEY"), ("_access__Key_", "secret-_key"),
])
def test_account_keys_fastjson_smart_matches_load(tmp_path: Path, ak_key: str, sk_key: str) -> None:
    acl = PlainAcl(_home(tmp_path, f"{ak_key}: loose-keys\n{sk_key}: {SECRET}\n"
                                   "Default_Topic_Perm: SUB\ndefault-group-perm: SUB\n"
                                   "TOPIC_PERMS:\n  - closed=DENY\nwhite_remote_address: 10.9.9.9"))
    account = acl.config.accounts["loose-keys"]
    assert account.secret_key == SECRET
    assert account.white("10.9.9.9") and not account.white(OUTSIDER)
    assert _pull_allowed(acl, "loose-keys", "open", "g1")
    assert not _pull_allowed(acl, "loose-keys", "closed", "g1")
    # the ACL config query reads accounts the same way
    _, configs = AclAdmin(acl).all_config()
    assert [(c.access_key, c.secret_key, c.default_topic_perm, c.topic_perms, c.white_remote_address)
            for c in configs] == [("loose-keys", SECRET, "SUB", ["closed=DENY"], "10.9.9.9")]


@pytest.mark.parametrize("admin_key",
                         ["admin", "Admin", "ADMIN", "isAdmin", "is_admin", "isADMIN", "is-admin"])
def test_admin_key_variants(tmp_path: Path, admin_key: str) -> None:
    acl = PlainAcl(_home(tmp_path, f"accessKey: admin-keys\nsecretKey: {SECRET}\n{admin_key}: true"))
    assert acl.config.accounts["admin-keys"].admin
    assert [c.admin for c in AclAdmin(acl).all_config()[1]] == [True]


@pytest.mark.parametrize("key", [
    "IsAdmin",        # the "is" prefix is case-sensitive
    "isAccessKey",    # "is" + a name is only taken for the boolean property
    "admin2", "a dmin", "admın",  # a digit, a blank, a dotless i: not dropped or lowered
    "\u0430dmin",     # a Cyrillic a
])
def test_keys_fastjson_does_not_match_are_ignored(tmp_path: Path, key: str) -> None:
    acl = PlainAcl(_home(tmp_path, f"accessKey: not-admin\nsecretKey: {SECRET}\n'{key}': true"))
    assert not acl.config.accounts["not-admin"].admin


def test_unicode_lowering_is_not_fastjsons(tmp_path: Path) -> None:
    # U+212A KELVIN SIGN lowers to 'k' in Python, not in fastjson (only A-Z are lowered): no access key
    with pytest.raises(AclConfigError):
        PlainAcl(_home(tmp_path, f"'access\u212aey': kelvin-key\nsecretKey: {SECRET}"))


def test_a_later_key_sets_the_property_again(tmp_path: Path) -> None:
    acl = PlainAcl(_home(tmp_path, f"accessKey: first-key\nsecretKey: {SECRET}\nACCESS_KEY: second-key"))
    assert list(acl.config.accounts) == ["second-key"]


@pytest.mark.parametrize("key", ["1", "true", "2001-02-03", "1.5"])
def test_a_key_that_is_no_text_does_not_load(tmp_path: Path, key: str) -> None:
    with pytest.raises(AclConfigError):
        PlainAcl(_home(tmp_path, f"accessKey: odd-keys\nsecretKey: {SECRET}\n{key}: x"))


def test_a_null_key_is_skipped(tmp_path: Path) -> None:
    acl = PlainAcl(_home(tmp_path, f"accessKey: null-keys\nsecretKey: {SECRET}\n~: x"))
    assert "null-keys" in acl.config.accounts


def test_account_fields_maps_to_property_names() -> None:
    assert account_fields({"Access_Key": "a", "x": 1, "isAdmin": True, "TopicPerms": []}, "here") == {
        "accessKey": "a", "admin": True, "topicPerms": []}


@pytest.fixture
def admin(tmp_path: Path) -> AclAdmin:
    return AclAdmin(PlainAcl(_home(tmp_path, f"accessKey: someone-1\nsecretKey: {SECRET}")))


@pytest.mark.parametrize("perm", ["PUB\u00a0", "\u00a0SUB", "SUB|PUB\u2003", "DENY\x85", "PUB\u3000"])
def test_update_refuses_a_perm_java_trim_leaves_a_blank_on(admin: AclAdmin, perm: str) -> None:
    before = (admin.acl.home / "conf" / "plain_acl.yml").read_bytes()
    with pytest.raises(AclUpdateError, match="Parse resource permission error"):
        admin.update_account(PlainAccessConfig("someone-2", SECRET, topic_perms=[f"topicA={perm}"]))
    with pytest.raises(AclUpdateError, match="Parse resource permission error"):
        admin.update_account(PlainAccessConfig("someone-2", SECRET, group_perms=[f"groupA={perm}"]))
    assert (admin.acl.home / "conf" / "plain_acl.yml").read_bytes() == before


@pytest.mark.parametrize("perm", [" PUB", "PUB\t", "\x1fSUB|PUB\x00", " DENY "])
def test_update_takes_a_perm_with_what_java_trim_takes_off(admin: AclAdmin, perm: str) -> None:
    assert admin.update_account(PlainAccessConfig("someone-2", SECRET, topic_perms=[f"topicA={perm}"]))


# --- request codes whose resources come from a decoded header -------------------------------------------
# 4.9.3's PlainAccessValidator.parse reads UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP and
# UPDATE_CONSUMER_OFFSET with decodeCommandCustomHeader, which logs and skips a missing @CFNotNull field or
# a number it cannot parse (the throw is inside its per-field try): the ACL step does not refuse such a
# request, it only has no resource for the missing field (the handler answers it).

GROUP_DENIED = f"accessKey: group-denied\nsecretKey: {SECRET}\ndefaultGroupPerm: DENY\ndefaultTopicPerm: SUB"


@pytest.mark.parametrize(("code", "ext"), [
    (RequestCode.UNREGISTER_CLIENT, {"producerGroup": "p"}),
    (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {}),
    (RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T", "queueId": "x"}),
])
def test_a_missing_header_group_is_no_resource_and_no_refusal(tmp_path: Path, code: int,
                                                               ext: dict[str, str]) -> None:
    acl = PlainAcl(_home(tmp_path, GROUP_DENIED))
    assert acl.check(code, sign_ext_fields(ext, None, "group-denied", SECRET), None, OUTSIDER) is None
    # with the group there, its %RETRY% resource is checked (and denied)
    why = acl.check(code, sign_ext_fields({**ext, "consumerGroup": "g"}, None, "group-denied", SECRET), None,
                    OUTSIDER)
    assert why == "No default permission for group:g"


# --- a blank white address ----------------------------------------------------------------------------
# RemoteAddressStrategyFactory: StringUtils.isBlank (Character.isWhitespace) gives the strategy that matches
# nothing; U+00A0, U+2007, U+202F and U+0085 are no Java whitespace, so such a pattern is taken as one
# address, which commons-validator refuses: the file does not load.


@pytest.mark.parametrize("blank", [" ", "\\t\\u2003\\u3000", "\\x1f", ""])
def test_a_java_blank_white_address_matches_nothing(tmp_path: Path, blank: str) -> None:
    acl = PlainAcl(_home(tmp_path, f"accessKey: blank-white\nsecretKey: {SECRET}\n"
                                   f"whiteRemoteAddress: \"{blank}\""))
    assert not acl.config.accounts["blank-white"].white(OUTSIDER)


@pytest.mark.parametrize("pattern", ["\\u00a0", " \\u2007 ", "\\u202f", "\\x85"])
def test_a_white_address_of_what_java_holds_no_whitespace_does_not_load(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(AclConfigError):
        PlainAcl(_home(tmp_path, f"accessKey: nbsp-white\nsecretKey: {SECRET}\n"
                                 f"whiteRemoteAddress: \"{pattern}\""))
    home = tmp_path / "global"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(f"globalWhiteRemoteAddresses:\n  - \"{pattern}\"\n",
                                                 encoding="utf-8")
    with pytest.raises(AclConfigError):
        PlainAcl(home)
