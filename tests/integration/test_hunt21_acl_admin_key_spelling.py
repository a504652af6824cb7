"""An account written by hand with its keys spelt another way the loader takes (``AccessKey``,
``secret_key``, ``isAdmin``: fastjson's smart match, as 4.9.3 reads them) is the account the ACL admin
requests change: an update used to leave it alone and append a second definition that the first one
shadows (the update answered SUCCESS and changed nothing), and a delete removed only that copy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_cluster import LocalCluster, acl_home, run_within

from rocketstore.client import Producer, SessionCredentials
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.codes import ResponseCode

TEST_TIMEOUT_S = 20.0
TOPIC = "Hunt21AclSpelling"
ADMIN = SessionCredentials("rocketstore-admin", "admin-secret-key")
OLD = SessionCredentials("hand-written-key", "old-secret-key")
NEW = SessionCredentials(OLD.access_key, "new-secret-key")

PLAIN_ACL_YML = f"""\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: {ADMIN.access_key}
    secretKey: {ADMIN.secret_key}
    admin: true
  - AccessKey: {OLD.access_key}
    secret_key: {OLD.secret_key}
    default_topic_perm: DENY
    isAdmin: false
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return acl_home(tmp_path / "home", PLAIN_ACL_YML)


@pytest.fixture
def cluster(tmp_path: Path, home: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as c:
        yield c


async def send_as(cluster: LocalCluster, credentials: SessionCredentials) -> str:
    async with Producer(cluster.namesrv_addr, "hunt21-acl-spelling", credentials=credentials) as producer:
        return (await producer.send(TOPIC, b"x")).status


def accounts(home: Path) -> list[Any]:
    return yaml.safe_load((home / "conf" / "plain_acl.yml").read_text(encoding="utf-8"))["accounts"]


def test_update_and_delete_change_an_account_whose_keys_are_spelt_otherwise(
        cluster: LocalCluster, home: Path) -> None:
    async def go() -> None:
        with pytest.raises(BrokerError) as before:
            await send_as(cluster, OLD)
        assert "No default permission for topic:" + TOPIC in str(before.value.remark)

        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            await admin.update_acl_config(cluster.broker_addr, NEW.access_key, NEW.secret_key,
                                          default_topic_perm="PUB")
        # the one definition was changed: the new secret and perm are in force, the old secret is not
        assert await send_as(cluster, NEW) == "SEND_OK"
        with pytest.raises(BrokerError) as old:
            await send_as(cluster, OLD)
        assert f"Check signature failed for accessKey={OLD.access_key}" in str(old.value.remark)
        written = [a for a in accounts(home) if OLD.access_key in a.values()]
        assert written == [{"accessKey": NEW.access_key, "secretKey": NEW.secret_key,
                            "defaultTopicPerm": "PUB", "admin": False}]

        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            await admin.delete_acl_config(cluster.broker_addr, OLD.access_key)
        with pytest.raises(BrokerError) as gone:
            await send_as(cluster, NEW)
        assert gone.value.code == ResponseCode.SYSTEM_ERROR
        assert f"No acl config for {OLD.access_key}" in str(gone.value.remark)

    run_within(go, TEST_TIMEOUT_S)
    assert [a.get("accessKey") for a in accounts(home)] == [ADMIN.access_key]


def test_delete_removes_an_account_whose_access_key_is_spelt_otherwise(cluster: LocalCluster, home: Path) -> None:
    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
            await admin.delete_acl_config(cluster.broker_addr, OLD.access_key)
        with pytest.raises(BrokerError) as gone:
            await send_as(cluster, OLD)
        assert f"No acl config for {OLD.access_key}" in str(gone.value.remark)

    run_within(go, TEST_TIMEOUT_S)
    assert [a.get("accessKey") for a in accounts(home)] == [ADMIN.access_key]
