"""ACL files that RocketMQ 4.9.3 refuses to load, as broker/acl.py and broker/acl_admin.py must refuse them:
a broken file is an AclConfigError at start, leaves the last good configuration in force when it turns up
on a reload, and is a typed AclUpdateError (not a traceback) to the admin requests.

* ``globalWhiteRemoteAddresses: 10.10.103.*`` (a scalar, not a list): 4.9.3's getJSONArray fails on it, so
  the file does not load.  Walked as a list of characters it would be the patterns ``1``, ``0``, ``.``, ...
  and ``*``, which lets every address in without credentials.
* Bytes that are not UTF-8 (a comment saved in Latin-1), or a value PyYAML cannot build (a date that is no
  date): SnakeYAML's exceptions are AclExceptions to 4.9.3; here they were UnicodeDecodeError / ValueError
  escaping from the check every request runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.broker.acl import AclConfigError, PlainAcl
from rocketstore.broker.acl_admin import AclAdmin, AclUpdateError, PlainAccessConfig
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codes import RequestCode

GOOD = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: rocketstore-app
    secretKey: s3cret-key-1
    defaultTopicPerm: DENY
    topicPerms:
      - topicA=PUB
"""
OUTSIDER = "8.8.8.8"  # not white-listed anywhere
#: files 4.9.3 does not load, each as bytes
BROKEN = {
    "scalar white list": GOOD.replace("\n  - 10.10.103.*", " 10.10.103.*").encode(),
    "scalar star white list": GOOD.replace("\n  - 10.10.103.*", " '*'").encode(),
    "scalar accounts": b"globalWhiteRemoteAddresses:\n  - 10.10.103.*\naccounts: rocketstore-app\n",
    "latin-1 bytes": "# caf\u00e9 (Latin-1)\n".encode("latin-1") + GOOD.encode(),
    "no such date": GOOD.replace("topicA=PUB", "topicA=PUB\n    note: 2001-02-30").encode(),
}


def _home(tmp_path: Path, data: bytes) -> Path:
    (tmp_path / "conf").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_bytes(data)
    return tmp_path


def _unsigned_send(acl: PlainAcl) -> str | None:
    return acl.check(RequestCode.SEND_MESSAGE, {"topic": "topicA", "producerGroup": "g"}, b"x", OUTSIDER)


def _signed_send(acl: PlainAcl, topic: str) -> str | None:
    ext = sign_ext_fields({"topic": topic, "producerGroup": "g"}, b"x", "rocketstore-app", "s3cret-key-1")
    return acl.check(RequestCode.SEND_MESSAGE, ext, b"x", OUTSIDER)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_file_rocketmq_does_not_load_is_an_acl_config_error_at_start(tmp_path: Path, name: str) -> None:
    home = _home(tmp_path, BROKEN[name])
    with pytest.raises(AclConfigError):
        PlainAcl(home)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_on_a_reload_it_keeps_the_last_good_configuration(tmp_path: Path, name: str) -> None:
    now = [0.0]
    home = _home(tmp_path, GOOD.encode())
    acl = PlainAcl(home, clock=lambda: now[0])
    assert _unsigned_send(acl) == "No accessKey is configured"
    path = home / "conf" / "plain_acl.yml"
    path.write_bytes(BROKEN[name])
    os.utime(path, ns=(1, 1_000_000_000))  # a different mtime whatever the file system's resolution
    now[0] += 1.5
    assert acl.reload_if_changed() is False
    assert _unsigned_send(acl) == "No accessKey is configured"  # the white list did not become "everyone"
    assert _signed_send(acl, "topicA") is None
    assert _signed_send(acl, "topicB") == "No default permission for topic:topicB"


def test_the_check_itself_survives_the_reload_of_a_broken_file(tmp_path: Path) -> None:
    """check() is what every request runs: the reload it starts must not raise out of it."""
    now = [0.0]
    home = _home(tmp_path, GOOD.encode())
    acl = PlainAcl(home, clock=lambda: now[0])
    path = home / "conf" / "plain_acl.yml"
    path.write_bytes(BROKEN["latin-1 bytes"])
    os.utime(path, ns=(1, 1_000_000_000))
    now[0] += 1.5
    assert _signed_send(acl, "topicA") is None


@pytest.mark.parametrize("name", ["latin-1 bytes", "no such date"])
def test_the_admin_requests_answer_a_broken_file_with_an_acl_update_error(tmp_path: Path, name: str) -> None:
    home = _home(tmp_path, GOOD.encode())
    admin = AclAdmin(PlainAcl(home), clock_ms=lambda: 1_700_000_000_000)
    path = home / "conf" / "plain_acl.yml"
    path.write_bytes(BROKEN[name])
    with pytest.raises(AclUpdateError):
        admin.update_account(PlainAccessConfig("another-app", "another-secret", default_topic_perm="PUB"))
    with pytest.raises(AclUpdateError):
        admin.delete_account("rocketstore-app")
    with pytest.raises(AclUpdateError):
        admin.update_global_white(["10.10.104.*"])
    with pytest.raises(AclUpdateError):
        admin.all_config()
    assert path.read_bytes() == BROKEN[name]  # nothing was written over it


@pytest.mark.parametrize("name", ["scalar white list", "scalar accounts"])
def test_the_acl_listing_refuses_a_scalar_rather_than_listing_its_characters(tmp_path: Path, name: str) -> None:
    home = _home(tmp_path, GOOD.encode())
    admin = AclAdmin(PlainAcl(home), clock_ms=lambda: 1_700_000_000_000)
    assert admin.all_config()[0] == ["10.10.103.*"]
    (home / "conf" / "plain_acl.yml").write_bytes(BROKEN[name])
    with pytest.raises(AclUpdateError, match="must be a list"):
        admin.all_config()


def test_a_blank_entry_in_the_white_list_matches_nothing(tmp_path: Path) -> None:
    home = _home(tmp_path, GOOD.replace("  - 10.10.103.*", "  - 10.10.103.*\n  -").encode())
    acl = PlainAcl(home)
    assert _unsigned_send(acl) == "No accessKey is configured"
    assert acl.check(RequestCode.SEND_MESSAGE, {"topic": "t"}, None, "10.10.103.7") is None
