"""Plain ACL against the official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4): a broker with aclEnable reads
<rocketmqHome>/conf/plain_acl.yml; the client signs every request with set_session_credentials (HMAC-SHA1
over its fields and body, checked by broker/acl.py).  Right credentials send and consume; a wrong secret,
no credentials, or a topic the account may not publish to are refused and store nothing; a white-listed
address needs no credentials."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster, acl_home

pytestmark = requires_cpp_client

ACL_FILE = """\
accounts:
  - accessKey: rocketstore-app
    secretKey: s3cret-key-1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB|SUB
      - DeniedTopic=DENY
      - TBW102=PUB|SUB
"""


def _home(tmp_path: Path, text: str) -> Path:
    return acl_home(tmp_path / "home", text)


def _produce(cluster: LocalCluster, tmp_path: Path, topic: str, count: int, env: dict[str, str], *extra: str
             ) -> list[dict[str, Any]]:
    runner = Runner(["produce", cluster.namesrv_addr, topic, "acl-producer", str(count), *extra], tmp_path, env)
    try:
        runner.collect_until(lambda seen: any(s.get("done") for s in seen), 60, "the C++ producer to finish")
        runner.wait(15)
    except AssertionError as exc:  # the runner reported an error line: the send failed
        if not any("error" in s for s in runner.seen):
            raise
        print(exc)
    finally:
        runner.kill()
    return runner.seen


def test_cpp_client_with_credentials_sends_and_consumes_and_the_rest_is_refused(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.broker.broker")
    home = _home(tmp_path, ACL_FILE)
    good = {"RMQ_ACCESS_KEY": "rocketstore-app", "RMQ_SECRET_KEY": "s3cret-key-1"}
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        sent = _produce(cluster, tmp_path, "AclTopic", 10, good)
        assert [s.get("status") for s in sent if "i" in s] == ["OK"] * 10, sent[-3:]
        assert cluster.call(lambda: cluster.broker.put_count) == 10
        batch = _produce(cluster, tmp_path, "AclTopic", 8, good, "--batch", "4", "--first", "10")
        assert [s.get("status") for s in batch if "i" in s] == ["OK"] * 2, batch[-3:]  # signed over the batch body
        assert cluster.call(lambda: cluster.broker.put_count) == 18

        # the broker refuses each with its reason (the C++ client retries, then reports "No route info")
        refused = {
            "Check signature failed for accessKey=rocketstore-app":
                _produce(cluster, tmp_path, "AclTopic", 1, {**good, "RMQ_SECRET_KEY": "not-the-key"}),
            # without credentials the C++ client still signs, with an empty AccessKey
            "No acl config for ": _produce(cluster, tmp_path, "AclTopic", 1, {}),
            "No default permission for topic:DeniedTopic": _produce(cluster, tmp_path, "DeniedTopic", 1, good),
        }
        logged = [r.getMessage() for r in caplog.records if "ACL refused" in r.getMessage()]
        for why, seen in refused.items():
            assert not any(s.get("status") == "OK" for s in seen), why
            assert any("error" in s for s in seen), (why, seen[-3:])
            assert any(m.endswith(why) or why in m for m in logged), (why, logged)
        assert cluster.call(lambda: cluster.broker.put_count) == 18  # nothing refused was stored

        consumer = Runner(["consume", cluster.namesrv_addr, "AclTopic", "acl-group"], tmp_path, good)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= 18, 60, "18 pushed messages")
        finally:
            consumer.stop()
        assert sorted(m["body"] for m in messages(consumer.seen)) == sorted(f"body-{i} ünï" for i in range(18))


def test_a_white_listed_address_needs_no_credentials(tmp_path: Path) -> None:
    home = _home(tmp_path, "globalWhiteRemoteAddresses:\n  - 127.0.0.*\n" + ACL_FILE)
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        sent = _produce(cluster, tmp_path, "AnyTopic", 3, {})
        assert [s.get("status") for s in sent if "i" in s] == ["OK"] * 3, sent[-3:]
