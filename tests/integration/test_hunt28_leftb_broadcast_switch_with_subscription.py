"""consumeBroadcastEnable=false stops a BROADCASTING group's pulls whether or not they carry the subscription.

4.9.3 checks the switch only on pulls without the subscription bit (a Java push consumer's): there it answers
NO_PERMISSION with the remark below (captured from 4.9.3's broker), while a Java lite pull consumer, the C++
clients and ours, which send their subscription with every pull, got messages.  Deliberately unlike 4.9.3,
this broker refuses them too, the same way, for a group its heartbeats register as BROADCASTING; a
CLUSTERING group is not concerned, and a group with the switch on pulls as before.  (Our push and lite pull
consumers, refused, log the code and remark and try again every 3 s, as 4.9.3's push consumer does.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection, pull_ext, send_ext

from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, MessageModel, SubscriptionData

TOPIC = "BroadcastSwitchTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def heartbeat(group: str, model: str) -> bytes:
    data = ConsumerData(group, "CONSUME_PASSIVELY", model, "CONSUME_FROM_FIRST_OFFSET",
                        (SubscriptionData(TOPIC, "*", sub_version=1),))
    return HeartbeatData("leftb@1", (), (data,)).encode()


def test_broadcast_switch_refuses_pulls_with_the_subscription_bit(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        assert conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(TOPIC), b"x").code == ResponseCode.SUCCESS
        cluster.wait_dispatched()
        for group, enabled in (("off-group", False), ("on-group", True)):
            made = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json.dumps(
                {"groupName": group, "consumeBroadcastEnable": enabled}).encode())
            assert made.code == ResponseCode.SUCCESS
        # sysFlag: 0 a Java push consumer's, 4 with the subscription, 0x14 a lite pull, 5 with a commit
        flags = ("0", "4", "20", "5")
        for model in (MessageModel.BROADCASTING, MessageModel.CLUSTERING):
            for group in ("off-group", "on-group"):
                assert conn.request(RequestCode.HEART_BEAT, body=heartbeat(group, model)).code == ResponseCode.SUCCESS
                for flag in flags:
                    reply = conn.request(RequestCode.PULL_MESSAGE,
                                         pull_ext(TOPIC, group, sysFlag=flag, subVersion="1"))
                    if group == "off-group" and model == MessageModel.BROADCASTING:
                        # captured from 4.9.3 (its answer to the sysFlag 0 pull): code 16 and this remark
                        assert (reply.code, reply.remark) == (
                            ResponseCode.NO_PERMISSION,
                            "the consumer group[off-group] can not consume by broadcast way"), flag
                    else:
                        assert reply.code == ResponseCode.SUCCESS, (model, group, flag, reply.remark)
    finally:
        conn.close()
