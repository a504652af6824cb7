"""A producer whose cached route has no queue to send to asks the name servers again at its next send, as
4.9.3's tryToFindTopicPublishInfo does while the publish info it holds is not ok() (no queue).  Before the
fix one bad route answer (a broker that had just lost its master, a proxy's answer naming no master, zero
queues) failed every send -- send, send_oneway, send_orderly -- for the route's whole time to live (30 s),
though the name server answered well again at once.

The good route is conftest's ROUTE_4_9_3 (captured from a 4.9.3 name server); the bad one is it with the
masters' brokerId 0 replaced by 1 (only slaves: no master to send to)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketstore.client.errors import NoRouteError
from rocketstore.client.producer import Producer
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt26RouteWithoutQueues"


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 15)
    return asyncio.run(bounded())


@pytest.mark.parametrize("how", ["send", "send_oneway", "send_orderly"])
def test_a_route_without_master_is_asked_for_again(two_masters: Any, how: str) -> None:
    route_answers: list[str] = []

    async def scenario() -> list[int]:
        broker = RemotingServer(two_masters.answering)
        await broker.start("127.0.0.1", 0)

        async def namesrv(connection: Connection, request: RemotingCommand) -> RemotingCommand:
            if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and request.ext_fields.get("topic") == TOPIC:
                body = two_masters.route_4_9_3 % {"a": broker.address, "b": broker.address}
                if not route_answers:  # the first answer names no master
                    body = body.replace("{0:", "{1:")
                route_answers.append(body)
                return request.make_response(ResponseCode.SUCCESS, body=body.encode())
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, remark="no route")

        ns = RemotingServer(namesrv)
        await ns.start("127.0.0.1", 0)
        producer = Producer(ns.address, "hunt26_fuzz_route_pg")
        await producer.start()
        outcomes = []
        try:
            for _ in range(2):
                try:
                    if how == "send":
                        await producer.send(TOPIC, b"x")
                    elif how == "send_oneway":
                        await producer.send_oneway(TOPIC, b"x")
                    else:
                        await producer.send_orderly(TOPIC, b"x", 7)
                    outcomes.append(1)
                except NoRouteError:
                    outcomes.append(0)
        finally:
            await producer.close()
            await ns.close()
            await broker.close()
        return outcomes

    # the first send may fail (send does, as 4.9.3's: its look-up gave no queue; a oneway or an orderly send
    # asks again at once); the next one works: the name server was asked again
    outcomes = _run(scenario())
    assert outcomes[1] == 1, outcomes
    assert len(route_answers) >= 2
