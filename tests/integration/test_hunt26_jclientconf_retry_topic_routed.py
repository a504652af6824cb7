"""A consumer heartbeat that creates its group's %RETRY% topic is answered, and the group told of its new
member (NOTIFY_CONSUMER_IDS_CHANGED), only once the name servers route that topic, as 4.9.3's heartBeat
(createTopicInSendMessageBackMethod registers with every name server and waits for their answers before
registerConsumer announces the member).

Seen with the real 4.9.3 Java push consumer (a new group, namespace set) against our broker: the rebalance
the notification triggers looks the %RETRY% route up at once; ours was not on the name server yet ("get
Topic [%RETRY%...] RouteInfoFromNameServer is not exist value", then "doRebalance ... get consumer id list
failed"), and the message the listener sent back was not pulled until the next rebalance 20 s later.  With
the Java broker the same rebalance found the route and the retry came back after its 1 s delay.

A real name server and broker on 127.0.0.1 port 0; the name server's REGISTER_BROKER is slowed so the answer
cannot win the race by chance."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.namesrv.handlers import NameServerHandlers
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection, connect

GROUP = "cg-new-group"
RETRY = f"%RETRY%{GROUP}"


async def _route_code(namesrv_addr: str, topic: str) -> int:
    namesrv = await connect(namesrv_addr)
    try:
        return (await namesrv.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                              {"topic": topic}), 10)).code
    finally:
        namesrv.close()


async def _heartbeat_then_route(broker_addr: str, namesrv_addr: str) -> tuple[int, list[int], int]:
    """(heartbeat answer code, the %RETRY% route code seen when the notification came, the route code seen
    when the heartbeat was answered)."""
    routed_at_notice: list[int] = []
    noticed = asyncio.Event()

    async def on_request(conn: Connection, request: RemotingCommand) -> None:
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            # what a Java consumer does on the notification: rebalance, which looks the %RETRY% route up
            routed_at_notice.append(await _route_code(namesrv_addr, RETRY))
            noticed.set()

    broker = await connect(broker_addr, handler=on_request)
    try:
        body = HeartbeatData("127.0.0.1@jclientconf", (), (
            ConsumerData(GROUP, subscriptions=(SubscriptionData("SomeTopic", "*"),
                                               SubscriptionData(RETRY, "*"))),)).encode()
        answer = await broker.request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, body), 10)
        routed_at_answer = await _route_code(namesrv_addr, RETRY)
        await asyncio.wait_for(noticed.wait(), 10)  # a deadline for the oneway notification, not a time limit
        return answer.code, routed_at_notice, routed_at_answer
    finally:
        broker.close()


def test_the_retry_topic_is_routed_before_the_group_hears_of_its_member(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = NameServerHandlers.register_broker

    async def slow(self: NameServerHandlers, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.5)
        return await real(self, conn, request)

    monkeypatch.setattr(NameServerHandlers, "register_broker", slow)  # (the router takes it at start)
    with LocalCluster(tmp_path / "store") as cluster:
        assert cluster.run(_route_code(cluster.namesrv_addr, RETRY)) == ResponseCode.TOPIC_NOT_EXIST
        code, at_notice, at_answer = cluster.run(_heartbeat_then_route(cluster.broker_addr,
                                                                       cluster.namesrv_addr))
        assert cluster.broker.topics.get(RETRY) is not None
    assert code == ResponseCode.SUCCESS
    assert at_notice == [ResponseCode.SUCCESS], "the group was told of its member before %RETRY% was routed"
    assert at_answer == ResponseCode.SUCCESS, "the heartbeat was answered before %RETRY% was routed"
