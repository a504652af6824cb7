"""Our own client (rocketstore.client) with SessionCredentials against an in-process name server + broker
with plain ACL on (aclEnable, <rocketmqHome>/conf/plain_acl.yml): the right credentials send and pull, a
wrong secret, no credentials and a DENY topic are refused the way a 4.9.3 broker refuses them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, acl_home, run_within

from rocketstore.client import MessageQueue, Producer, PullConsumer, PullStatus, SessionCredentials
from rocketstore.client.errors import BrokerError, NoRouteError
from rocketstore.remoting.codes import ResponseCode

TEST_TIMEOUT_S = 20.0
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
ACCESS_KEY = "rocketstore-user"
SECRET_KEY = "rocketstore-secret"
GROUP = "acl-group"
TOPIC = "AclTopic"
DENIED_TOPIC = "AclDeniedTopic"

PLAIN_ACL_YML = f"""\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: {ACCESS_KEY}
    secretKey: {SECRET_KEY}
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {TOPIC}=PUB|SUB
      - {DENIED_TOPIC}=DENY
    groupPerms:
      - {GROUP}=PUB|SUB
  - accessKey: rocketstore-other
    secretKey: other-secret-key
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""

CREDENTIALS = SessionCredentials(ACCESS_KEY, SECRET_KEY)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    home = acl_home(tmp_path / "home", PLAIN_ACL_YML)
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as c:
        yield c


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


async def routed(consumer: PullConsumer, topic: str) -> list[MessageQueue]:
    """The topic's queues once the broker has registered the auto-created topic with the name server."""
    deadline = time.monotonic() + 5
    while True:
        try:
            return await consumer.queues(topic)
        except NoRouteError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.02)


def assert_acl_refusal(error: BrokerError, *reasons: str) -> None:
    assert error.code == ResponseCode.SYSTEM_ERROR
    assert error.remark is not None and error.remark.startswith(ACL_EXCEPTION), error.remark
    assert any(reason in error.remark for reason in reasons), error.remark


def test_the_right_credentials_send_and_pull(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "acl-producer", credentials=CREDENTIALS) as producer:
            results = [await producer.send(TOPIC, f"m{i}".encode(), tags="TagA", keys=f"k{i}") for i in range(3)]
            results.append(await producer.send(TOPIC, b"x" * 20_000))  # the path of large bodies
        assert {r.status for r in results} == {"SEND_OK"}
        # the offset past each queue's last message sent
        expected: dict[MessageQueue, int] = {}
        for r in results:
            expected[r.message_queue] = max(expected.get(r.message_queue, 0), r.queue_offset + 1)
        async with PullConsumer(cluster.namesrv_addr, GROUP, credentials=CREDENTIALS) as consumer:
            await routed(consumer, TOPIC)
            bodies: list[bytes] = []
            for mq in sorted({r.message_queue for r in results}, key=lambda q: q.queue_id):
                offset = 0
                while offset < expected[mq]:  # a long poll answers as soon as the queue has a message
                    pulled = await consumer.pull(mq, offset, 32, suspend_ms=5000)
                    assert pulled.status in (PullStatus.FOUND, PullStatus.NO_NEW_MSG)
                    bodies.extend(m.body for m in pulled.messages)
                    offset = pulled.next_begin_offset
        assert sorted(bodies) == sorted([b"m0", b"m1", b"m2", b"x" * 20_000])

    arun(go)


def test_a_wrong_secret_gets_the_brokers_acl_error(cluster: LocalCluster) -> None:
    async def go() -> None:
        wrong = SessionCredentials(ACCESS_KEY, "not-the-secret")
        async with Producer(cluster.namesrv_addr, "acl-producer", credentials=wrong) as producer:
            with pytest.raises(BrokerError) as info:
                await producer.send(TOPIC, b"never stored")
        assert_acl_refusal(info.value, "Check signature failed")

    arun(go)


def test_no_credentials_are_refused(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "acl-producer") as producer:
            with pytest.raises(BrokerError) as info:
                await producer.send(TOPIC, b"never stored")
        assert_acl_refusal(info.value, "No accessKey")

    arun(go)


def test_a_deny_topic_is_refused_for_send(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "acl-producer", credentials=CREDENTIALS) as producer:
            with pytest.raises(BrokerError) as info:
                await producer.send(DENIED_TOPIC, b"never stored")
            # the account's other topic still works on the same connections
            assert (await producer.send(TOPIC, b"allowed")).status == "SEND_OK"
        assert_acl_refusal(info.value, "No default permission", DENIED_TOPIC)

    arun(go)


def test_a_pull_needs_sub_on_the_topic(cluster: LocalCluster) -> None:
    """The account with PUB|SUB everywhere sends to a topic; ours (default DENY) may not pull from it."""

    async def go() -> None:
        other = SessionCredentials("rocketstore-other", "other-secret-key")
        async with Producer(cluster.namesrv_addr, "acl-producer", credentials=other) as producer:
            result = await producer.send("AclOtherTopic", b"theirs")
        async with PullConsumer(cluster.namesrv_addr, GROUP, credentials=CREDENTIALS) as consumer:
            await routed(consumer, "AclOtherTopic")
            with pytest.raises(BrokerError) as info:
                await consumer.pull(result.message_queue, 0, 32)
        assert_acl_refusal(info.value, "No default permission")

    arun(go)
