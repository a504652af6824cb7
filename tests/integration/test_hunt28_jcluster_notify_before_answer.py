"""A consumer joining a group is announced before its heartbeat is answered, as RocketMQ 4.9.3 does.

4.9.3's heartBeat registers the member and, inside registerConsumer, writes NOTIFY_CONSUMER_IDS_CHANGED to
every channel of the group before the processor returns the heartbeat's response.  Captured from a 4.9.3
broker (two raw connections, a second member of a group joining): on the newcomer's own connection the
frames came as [(code 40, flag 2), (code 0, flag 1)]: the notification (a oneway request), then the answer.
Ours answered first and notified on a later turn of the loop, so the newcomer rebalanced before the members
it takes queues from, and read the start offsets of those queues before they committed what they had
consumed: the group consumed those messages twice whenever a consumer joined (seen with two brokers and
Java and Python push consumers).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from raw_frames import RawConnection
from test_broker_groups_and_bodies import wait_for_request

from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, build_subscription
from rocketstore.remoting.codes import SerializeType

GROUP = "hunt28-join-group"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def heartbeat(client_id: str) -> bytes:
    sub = build_subscription("JoinTopic", "*", 1)
    return HeartbeatData(client_id, (), (ConsumerData(GROUP, subscriptions=(sub,)),)).encode()


def frames_until_answer(conn: RawConnection, opaque: int) -> list[RemotingCommand]:
    """Every frame the broker sends on *conn* up to and including the answer numbered *opaque*."""
    got: list[RemotingCommand] = []
    while not (got and got[-1].is_response and got[-1].opaque == opaque):
        command = conn.decoder.next_command()
        if command is None:
            data = conn.sock.recv(65536)
            assert data, "the broker closed the connection"
            conn.decoder.feed(data)
            continue
        got.append(command)
    return got


def test_the_group_is_notified_before_the_newcomer_is_answered(cluster: LocalCluster) -> None:
    member, newcomer = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        assert member.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@member")).code == 0
        opaque = newcomer.send(RequestCode.HEART_BEAT, {}, heartbeat("10.0.0.2@newcomer"), SerializeType.JSON)
        frames = frames_until_answer(newcomer, opaque)
        kinds = [(f.code, f.is_response) for f in frames]
        assert kinds == [(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, False), (ResponseCode.SUCCESS, True)], kinds
        assert frames[0].ext_fields["consumerGroup"] == GROUP
        assert wait_for_request(member, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 5.0) is not None
    finally:
        member.close()
        newcomer.close()
