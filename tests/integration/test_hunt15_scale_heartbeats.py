"""Hundreds of client connections heartbeating a real broker, then closing: a member joining is announced to
its group (NOTIFY_CONSUMER_IDS_CHANGED), an unchanged heartbeat is not, and once the connections close the
broker's client tables and connection set are back where they started."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection, connect, run
from tests.integration.local_cluster import LocalCluster

CLIENTS = 200
GROUPS = 20
MEMBERS = CLIENTS // GROUPS


def test_many_heartbeating_connections_notify_once_per_change_and_leave_nothing_behind(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("HbTopic", 2)
        broker = cluster.broker
        baseline = cluster.call(lambda: len(broker.server.connections))
        notified: list[str] = []

        async def on_request(conn: Connection, request: RemotingCommand) -> None:
            if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
                notified.append(request.ext_fields.get("consumerGroup", ""))

        def heartbeat(i: int) -> RemotingCommand:
            data = HeartbeatData(f"hb-client-{i}", (f"hb_producers_{i % GROUPS}",),
                                 (ConsumerData(f"hb_group_{i % GROUPS}",
                                               subscriptions=(SubscriptionData("HbTopic", "*"),)),))
            return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode())

        async def notifications_settle(expected: int) -> None:
            for _ in range(200):  # a deadline for the oneway notifications to arrive, not a time limit
                if len(notified) >= expected:
                    break
                await asyncio.sleep(0.05)

        async def main() -> None:
            conns = [await connect(cluster.broker_addr, handler=on_request) for _ in range(CLIENTS)]
            try:
                # one member at a time: the k-th member of a group makes k notifications (one to each member)
                for i, conn in enumerate(conns):
                    answer = await conn.request(heartbeat(i), 10.0)
                    assert answer.code == ResponseCode.SUCCESS, answer.remark
                joined = GROUPS * MEMBERS * (MEMBERS + 1) // 2
                await notifications_settle(joined)
                assert len(notified) == joined
                notified.clear()
                for _ in range(2):  # heartbeats that change nothing announce nothing
                    answers = await asyncio.gather(*(c.request(heartbeat(i), 10.0) for i, c in enumerate(conns)))
                    assert all(a.code == ResponseCode.SUCCESS for a in answers)
                ids = cluster.call(lambda: sorted(broker.clients.consumer_ids("hb_group_3")))
                assert ids == sorted(f"hb-client-{i}" for i in range(3, CLIENTS, GROUPS))
                # a marker heartbeat that does change a group, so the unchanged ones had time to notify
                await conns[0].request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, HeartbeatData(
                    "hb-client-0", (), (ConsumerData("hb_group_0", subscriptions=(
                        SubscriptionData("HbTopic", "*"), SubscriptionData("%RETRY%hb_group_0", "*"))),)).encode()),
                    10.0)
                await notifications_settle(MEMBERS)
                assert notified == ["hb_group_0"] * MEMBERS, notified[:20]
            finally:
                for conn in conns:
                    conn.close()

        run(main())
        cluster.wait_until(lambda: len(broker.server.connections) == baseline, 20.0, "the connections to close")
        cluster.wait_until(lambda: not broker.clients.consumers and not broker.clients.producers, 20.0,
                           "the client tables to empty")
        assert cluster.call(broker.clients.connection_count) == 0
