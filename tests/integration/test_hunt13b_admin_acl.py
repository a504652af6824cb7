"""The acl commands against an in-process name server + broker with aclEnable, run in process as an operator
runs them (``main([...])``, signed with an admin account from the environment)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import ok, ok_json, rocketstore
from local_cluster import LocalCluster, acl_home

ADMIN_KEY, ADMIN_SECRET = "rocketstore-admin", "admin-secret-key"

PLAIN_ACL_YML = f"""\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: {ADMIN_KEY}
    secretKey: {ADMIN_SECRET}
    admin: true
  - accessKey: rocketstore-user
    secretKey: user-secret-key
    whiteRemoteAddress: 192.168.0.*
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB
      - TopicB=DENY
    groupPerms:
      - GroupA=SUB
"""


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    home = acl_home(tmp_path / "home", PLAIN_ACL_YML)
    monkeypatch.setenv("ROCKETSTORE_ACCESS_KEY", ADMIN_KEY)
    monkeypatch.setenv("ROCKETSTORE_SECRET_KEY", ADMIN_SECRET)
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as c:
        yield c


def test_acl_config_lists_the_white_list_and_accounts_with_the_secret_keys_masked(
        capsys: pytest.CaptureFixture[str], cluster: LocalCluster) -> None:
    # mqadmin getAccessConfigSubCommand: GET_BROKER_CLUSTER_ACL_CONFIG on one broker or a cluster's masters
    [listed] = ok_json(capsys, cluster, "acl", "config", "-c", "DefaultCluster")
    assert listed["brokerAddr"] == cluster.broker_addr
    assert listed["globalWhiteAddrs"] == ["10.10.103.*"]
    user = next(a for a in listed["plainAccessConfigs"] if a["accessKey"] == "rocketstore-user")
    assert user == {"accessKey": "rocketstore-user", "secretKey": "******", "admin": False,
                    "whiteRemoteAddress": "192.168.0.*", "defaultTopicPerm": "PUB|SUB", "defaultGroupPerm": "SUB",
                    "topicPerms": ["TopicA=PUB", "TopicB=DENY"], "groupPerms": ["GroupA=SUB"]}
    assert ADMIN_SECRET not in str(listed) and "user-secret-key" not in str(listed)

    [shown] = ok_json(capsys, cluster, "acl", "config", "-b", cluster.broker_addr, "--show-secret-keys")
    assert {a["accessKey"]: a["secretKey"] for a in shown["plainAccessConfigs"]} == {
        ADMIN_KEY: ADMIN_SECRET, "rocketstore-user": "user-secret-key"}

    # an account an admin just created is listed at once
    ok(capsys, cluster, "acl", "update", "newly-made-account", "-s", "newly-made-secret", "-i", "SUB")
    table = ok(capsys, cluster, "acl", "config")
    assert f"{cluster.broker_addr}: globalWhiteRemoteAddresses 10.10.103.*" in table
    [row] = [line.split() for line in table.splitlines() if "newly-made-account" in line]
    assert row == [cluster.broker_addr, "newly-made-account", "******", "false", "-", "SUB", "-", "-", "-"]


def test_cluster_rt_refused_by_acl_says_why(capsys: pytest.CaptureFixture[str], cluster: LocalCluster,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # the account may not publish to the broker's own topic (its name, which clusterRT sends to): the error
    # line says so, as message check-rt / send-status do, not only how many sends failed
    ok(capsys, cluster, "acl", "update", "no-publish-account", "-s", "no-publish-secret", "-i", "SUB")
    monkeypatch.setenv("ROCKETSTORE_ACCESS_KEY", "no-publish-account")
    monkeypatch.setenv("ROCKETSTORE_SECRET_KEY", "no-publish-secret")
    status, out, err = rocketstore(capsys, cluster, "cluster", "rt", "-a", "2")
    assert status == 1 and "broker-a" in out
    assert err.strip() == ("rocketstore: error: 2 sends failed: SYSTEM_ERROR (1): org.apache.rocketmq.acl.common."
                           "AclException: No default permission for topic:broker-a")
