"""A held (long-polled) pull is run again in full once it wakes or times out, as 4.9.3's
PullMessageProcessor.executeRequestWhenWakeup does (processRequest with brokerAllowSuspend=false): every
check of the request again, so what changed while it waited is answered as such.  It used to re-read the
queue only: a pull held on a topic deleted meanwhile was answered from the now empty queue, PULL_OFFSET_MOVED
at an offset past 0 (sending the consumer back to 0, and writing an OFFSET_MOVED_EVENT), and a pull of a
group whose consumeEnable was turned off meanwhile was answered as any other."""

from __future__ import annotations

import asyncio

import pytest
from local_cluster import LocalCluster, send_bodies
from raw_frames import RawConnection

from rocketstore.broker.pull import PullSysFlag
from rocketstore.broker.topics import OFFSET_MOVED_EVENT
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.codes import RequestCode, ResponseCode, SerializeType
from rocketstore.remoting.headers import PullMessageRequestHeader

#: held pulls wait on the broker's loop: asyncio's and uvloop's
pytestmark = pytest.mark.both_loops

TOPIC = "HeldRerunTopic"
GROUP = "held-rerun-group"


def _hold_pull(cluster: LocalCluster, raw: RawConnection, offset: int, *, commit_offset: int = 0,
               suspend_ms: int = 60_000) -> int:
    """Send a suspending pull of queue 0 at *offset* (its own subscription "*") and wait until the broker
    holds it; its opaque."""
    sys_flag = PullSysFlag.SUBSCRIPTION | PullSysFlag.SUSPEND | (PullSysFlag.COMMIT_OFFSET if commit_offset else 0)
    header = PullMessageRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0, queue_offset=offset,
                                      max_msg_nums=32, sys_flag=sys_flag, commit_offset=commit_offset,
                                      suspend_timeout_ms=suspend_ms, subscription="*", sub_version=0,
                                      expression_type="TAG")
    opaque = raw.send(RequestCode.PULL_MESSAGE, header.to_ext_fields(), b"", SerializeType.JSON)
    hold = cluster.broker.pull_hold
    cluster.wait_until(lambda: hold.waiting(TOPIC) == {0: [offset]}, 10, "the pull to be held")
    return opaque


def _admin(cluster: LocalCluster, action: str) -> None:
    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            if action == "delete":
                await admin.delete_topic(TOPIC)
            else:
                await admin.update_subscription_group(GROUP, broker_addr=cluster.broker_addr, consume_enable=False)

    asyncio.run(go())


def test_a_pull_held_on_a_topic_deleted_meanwhile_is_answered_topic_not_exist(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC, 1)
    send_bodies(cluster, TOPIC, ["a", "b", "c"])
    raw = RawConnection(cluster.broker_addr)
    try:
        # nothing arrives on a deleted topic: the pull waits out its timeout (as in 4.9.3) and is run again
        opaque = _hold_pull(cluster, raw, 3, suspend_ms=1500)
        _admin(cluster, "delete")
        answer = raw.answer(opaque)
    finally:
        raw.close()
    assert answer is not None
    assert answer.code == ResponseCode.TOPIC_NOT_EXIST, (answer.code, answer.remark, answer.ext_fields)
    assert answer.remark is not None and f"topic[{TOPIC}] not exist" in answer.remark
    assert cluster.call(lambda: cluster.broker.store.max_offset(OFFSET_MOVED_EVENT, 0)) == 0, \
        "no offset correction was recorded for the deleted topic"


def test_a_pull_held_for_a_group_disabled_meanwhile_is_refused_and_commits_once(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC, 1)
    send_bodies(cluster, TOPIC, ["a", "b"])
    raw = RawConnection(cluster.broker_addr)
    try:
        opaque = _hold_pull(cluster, raw, 2, commit_offset=1)
        assert cluster.call(lambda: cluster.broker.offsets.offsets(GROUP, TOPIC)) == {0: 1}, \
            "the commit offset is stored when the pull is first run"
        _admin(cluster, "disable")
        send_bodies(cluster, TOPIC, ["c"])  # wakes the held pull
        answer = raw.answer(opaque)
    finally:
        raw.close()
    assert answer is not None
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, f"subscription group no permission, {GROUP}")
    assert cluster.call(lambda: cluster.broker.offsets.offsets(GROUP, TOPIC)) == {0: 1}
