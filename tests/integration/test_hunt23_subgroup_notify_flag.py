"""A subscription group's notifyConsumerIdsChangedEnable, as RocketMQ 4.9.3 applies it.

The group flag is read by ClientManageProcessor's heartBeat and unregisterClient only: with it off, a member
joining (or leaving by UNREGISTER_CLIENT) is not announced to the group.  A member whose connection closes
(a consumer process that died or was killed) goes through ConsumerManager.doChannelCloseEvent, which tells
the remaining members whatever the group says (only the broker's own notifyConsumerIdsChangedEnable can
stop it): they rebalance the dead member's queues at once instead of leaving them unread until their next
periodic rebalance (20 s).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection
from test_broker_groups_and_bodies import wait_for_request

from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, build_subscription

GROUP = "hunt23-quiet-group"
SUB = build_subscription("QuietTopic", "*", 1)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def heartbeat(client_id: str) -> bytes:
    return HeartbeatData(client_id, (), (ConsumerData(GROUP, subscriptions=(SUB,)),)).encode()


def quiet_group(conn: RawConnection) -> None:
    body = (b'{"groupName":"' + GROUP.encode() + b'","notifyConsumerIdsChangedEnable":false}')
    answer = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def test_a_member_whose_connection_closes_is_announced_even_when_the_group_is_quiet(
        cluster: LocalCluster) -> None:
    survivor, dying = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        quiet_group(survivor)
        assert survivor.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@survivor")).code == 0
        assert dying.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.2@dying")).code == 0
        # the group is quiet: the second member joining is not announced (4.9.3's heartBeat)
        assert wait_for_request(survivor, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 1.0) is None
        ids = cluster.call(lambda: cluster.broker.clients.consumer_ids(GROUP))
        assert sorted(ids) == ["10.0.0.1@survivor", "10.0.0.2@dying"]

        dying.close()  # the process dies: its connection closes without UNREGISTER_CLIENT
        notify = wait_for_request(survivor, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 10.0)
        assert notify is not None, "the remaining member was not told its peer is gone"
        assert notify.ext_fields["consumerGroup"] == GROUP
    finally:
        survivor.close()
        dying.close()


def test_an_unregistering_member_of_a_quiet_group_is_not_announced(cluster: LocalCluster) -> None:
    survivor, leaving = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        quiet_group(survivor)
        assert survivor.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@survivor")).code == 0
        assert leaving.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.3@leaving")).code == 0
        answer = leaving.request(RequestCode.UNREGISTER_CLIENT,
                                 {"clientID": "10.0.0.3@leaving", "consumerGroup": GROUP})
        assert answer.code == ResponseCode.SUCCESS
        assert cluster.call(lambda: cluster.broker.clients.consumer_ids(GROUP)) == ["10.0.0.1@survivor"]
        assert wait_for_request(survivor, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 1.0) is None
    finally:
        survivor.close()
        leaving.close()
