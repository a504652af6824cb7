"""The plain ACL admin requests (UPDATE_AND_CREATE_ACL_CONFIG 50, DELETE_ACL_CONFIG 51,
GET_BROKER_CLUSTER_ACL_INFO 52, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG 53, GET_BROKER_CLUSTER_ACL_CONFIG 54) against an
in-process name server + broker with aclEnable, through AdminClient and once through the CLI: an account an
admin creates can send at once, deleting it refuses its sends, refusals are answered as 4.9.3 answers them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_cluster import LocalCluster, acl_home, run_within
from serve_process import cli

from rocketstore.client import Producer, SessionCredentials
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.codes import ResponseCode

TEST_TIMEOUT_S = 20.0
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
TOPIC = "AclAdminTopic"
ADMIN = SessionCredentials("rocketstore-admin", "admin-secret-key")
USER = SessionCredentials("rocketstore-user", "user-secret-key")
NEW = SessionCredentials("newly-made-account", "newly-made-secret")

PLAIN_ACL_YML = f"""\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: {ADMIN.access_key}
    secretKey: {ADMIN.secret_key}
    admin: true
  - accessKey: {USER.access_key}
    secretKey: {USER.secret_key}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
dataVersion:
  - counter: 3
    timestamp: 1620000000000
"""


def _home(tmp_path: Path) -> Path:
    return acl_home(tmp_path / "home", PLAIN_ACL_YML)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return _home(tmp_path)


@pytest.fixture
def cluster(tmp_path: Path, home: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as c:
        yield c


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


async def send_as(cluster: LocalCluster, credentials: SessionCredentials, body: bytes) -> str:
    async with Producer(cluster.namesrv_addr, "acl-admin-producer", credentials=credentials) as producer:
        return (await producer.send(TOPIC, body)).status


def plain_acl(home: Path) -> Any:
    return yaml.safe_load((home / "conf" / "plain_acl.yml").read_text(encoding="utf-8"))


def test_an_admin_creates_an_account_that_sends_at_once_and_deleting_it_refuses_its_sends(
        cluster: LocalCluster, home: Path) -> None:
    async def go() -> None:
        with pytest.raises(BrokerError) as before:
            await send_as(cluster, NEW, b"refused")
        assert before.value.code == ResponseCode.SYSTEM_ERROR
        assert f"No acl config for {NEW.access_key}" in str(before.value.remark)

        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            await admin.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key,
                                          default_topic_perm="DENY", default_group_perm="SUB",
                                          topic_perms=[f"{TOPIC}=PUB|SUB", "Other=DENY"])
            version = await admin.acl_config_version(cluster.broker_addr)
            config = await admin.cluster_acl_config(cluster.broker_addr)
        assert version.version.counter == 4
        assert version.broker_addr == cluster.broker_addr and version.broker_name == "broker-a"
        assert version.cluster_name == "DefaultCluster"
        assert version.file_versions == {str((home / "conf" / "plain_acl.yml").absolute()): version.version}
        assert config.global_white_addrs == ["10.10.103.*"]
        [made] = [a for a in config.accounts if a["accessKey"] == NEW.access_key]
        assert made == {"accessKey": NEW.access_key, "secretKey": NEW.secret_key, "admin": False,
                        "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
                        "topicPerms": [f"{TOPIC}=PUB|SUB", "Other=DENY"]}

        assert await send_as(cluster, NEW, b"allowed") == "SEND_OK"

        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            await admin.delete_acl_config(cluster.broker_addr, NEW.access_key)
            with pytest.raises(BrokerError) as again:
                await admin.delete_acl_config(cluster.broker_addr, NEW.access_key)
        assert again.value.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
        assert again.value.remark == (f"The accesskey[{NEW.access_key}] corresponding to accessConfig has been "
                                      "deleted failed.")
        with pytest.raises(BrokerError) as after:
            await send_as(cluster, NEW, b"refused again")
        assert after.value.code == ResponseCode.SYSTEM_ERROR
        assert str(after.value.remark).startswith(ACL_EXCEPTION)
        assert f"No acl config for {NEW.access_key}" in str(after.value.remark)

    arun(go)
    assert [a["accessKey"] for a in plain_acl(home)["accounts"]] == [ADMIN.access_key, USER.access_key]
    assert plain_acl(home)["dataVersion"][0]["counter"] == 5


def test_an_unsigned_or_wrongly_signed_update_is_refused_and_changes_nothing(
        cluster: LocalCluster, home: Path) -> None:
    before = (home / "conf" / "plain_acl.yml").read_bytes()

    async def go() -> None:
        for credentials, reason in [(None, "No accessKey is configured"),
                                    (SessionCredentials(ADMIN.access_key, "not-the-secret"),
                                     f"Check signature failed for accessKey={ADMIN.access_key}"),
                                    (SessionCredentials("unknown-account", "whatever-secret"),
                                     "No acl config for unknown-account")]:
            async with AdminClient(cluster.namesrv_addr, credentials=credentials) as admin:
                with pytest.raises(BrokerError) as info:
                    await admin.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key, admin=True)
            assert info.value.code == ResponseCode.SYSTEM_ERROR
            assert str(info.value.remark).startswith(ACL_EXCEPTION) and reason in str(info.value.remark)

    arun(go)
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


def test_a_non_admin_account_may_change_the_acl_as_in_4_9_3(cluster: LocalCluster, home: Path) -> None:
    """4.9.3's Permission.ADMIN_CODE has codes 17, 25, 215, 200 and 207 only: any account that signs
    correctly may use codes 50-54 (later releases up to 5.1 did not change this)."""
    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr, credentials=USER) as user:
            await user.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key,
                                         default_topic_perm="PUB")
        assert await send_as(cluster, NEW, b"made by a non-admin") == "SEND_OK"

    arun(go)
    assert NEW.access_key in [a["accessKey"] for a in plain_acl(home)["accounts"]]


def test_refused_updates_answer_the_failed_codes_with_rocketmqs_messages(cluster: LocalCluster, home: Path) -> None:
    before = (home / "conf" / "plain_acl.yml").read_bytes()

    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            with pytest.raises(BrokerError) as short:
                await admin.update_acl_config(cluster.broker_addr, NEW.access_key, "short")
            with pytest.raises(BrokerError) as perm:
                await admin.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key,
                                              topic_perms=["TopicA=EVERYTHING"])
        assert short.value.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        # 4.9.3's message, with the secret masked (it would show it)
        assert short.value.remark == (f"The accessKey={NEW.access_key} and secretKey=***** cannot be null and "
                                      "length should longer than 6")
        assert perm.value.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        assert "Parse resource permission error for TopicA=EVERYTHING" in str(perm.value.remark)

    arun(go)
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


def test_without_acl_enable_every_acl_request_fails_saying_so(tmp_path: Path) -> None:
    home = _home(tmp_path)
    before = (home / "conf" / "plain_acl.yml").read_bytes()
    with LocalCluster(tmp_path / "store", rocketmq_home=str(home)) as cluster:
        async def go() -> None:
            async with AdminClient(cluster.namesrv_addr, timeout_s=5.0) as admin:
                with pytest.raises(BrokerError) as update:
                    await admin.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key)
                with pytest.raises(BrokerError) as delete:
                    await admin.delete_acl_config(cluster.broker_addr, ADMIN.access_key)
                with pytest.raises(BrokerError) as white:
                    await admin.update_global_white_addrs(cluster.broker_addr, ["127.0.0.1"])
                with pytest.raises(BrokerError) as version:
                    await admin.acl_config_version(cluster.broker_addr)
                with pytest.raises(BrokerError) as config:
                    await admin.cluster_acl_config(cluster.broker_addr)
            assert [e.value.code for e in (update, delete, white, version, config)] == [
                ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, ResponseCode.DELETE_ACL_CONFIG_FAILED,
                ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, ResponseCode.SYSTEM_ERROR,
                ResponseCode.SYSTEM_ERROR]
            assert all("aclEnable was false when it started" in str(e.value.remark)
                       for e in (update, delete, white, version, config))

        arun(go)
    assert (home / "conf" / "plain_acl.yml").read_bytes() == before


def test_the_acl_commands_end_to_end(cluster: LocalCluster, home: Path) -> None:
    ns = ("--namesrv", cluster.namesrv_addr)
    signed = ("--access-key", ADMIN.access_key, "--secret-key", ADMIN.secret_key)

    def ok(*args: str) -> Any:
        out = cli(*args, *ns, "--json")
        assert out.returncode == 0, f"rocketstore {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}"
        return json.loads(out.stdout)

    made = ok("acl", "update", NEW.access_key, "-s", NEW.secret_key, "-i", "PUB", "-t", f"{TOPIC}=PUB",
              "-c", "DefaultCluster", *signed)
    assert made == {"accessKey": NEW.access_key, "brokers": [cluster.broker_addr]}
    assert [s["status"] for s in ok("send", TOPIC, "via the new account", "--access-key", NEW.access_key,
                                    "--secret-key", NEW.secret_key)] == ["SEND_OK"]
    [version] = ok("acl", "version", *signed)
    assert version["brokerAddr"] == cluster.broker_addr and version["version"]["counter"] == 4

    white = ok("acl", "white", "10.10.104.*,10.10.105.*", "-b", cluster.broker_addr, *signed)
    assert white["globalWhiteRemoteAddresses"] == ["10.10.104.*", "10.10.105.*"]
    assert plain_acl(home)["globalWhiteRemoteAddresses"] == ["10.10.104.*", "10.10.105.*"]

    ok("acl", "delete", NEW.access_key, *signed)
    refused = cli("send", TOPIC, "refused", "--access-key", NEW.access_key, "--secret-key", NEW.secret_key, *ns)
    assert refused.returncode == 1 and f"No acl config for {NEW.access_key}" in refused.stderr, refused.stderr
    unsigned = cli("acl", "delete", USER.access_key, *ns)
    assert unsigned.returncode == 1 and "No accessKey is configured" in unsigned.stderr, unsigned.stderr
    assert plain_acl(home)["dataVersion"][0]["counter"] == 6
    assert [a["accessKey"] for a in plain_acl(home)["accounts"]] == [ADMIN.access_key, USER.access_key]
