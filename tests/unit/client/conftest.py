"""Fixtures shared by the client's unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]

#: GET_ROUTEINFO_BY_TOPIC's body from a 4.9.3 name server for a topic on two masters, 4 queues each
#: (captured; the addresses are put in as ``%(a)s`` and ``%(b)s``)
ROUTE_4_9_3 = ('{"brokerDatas":[{"brokerAddrs":{0:"%(b)s"},"brokerName":"broker-b",'
               '"cluster":"DefaultCluster"},{"brokerAddrs":{0:"%(a)s"},"brokerName":"broker-a",'
               '"cluster":"DefaultCluster"}],'
               '"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,'
               '"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":4,'
               '"topicSysFlag":0,"writeQueueNums":4}]}')

_SENDS = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


@dataclass(frozen=True, slots=True)
class TwoMastersAddrs:
    namesrv: str
    broker_a: str
    broker_b: str


class TwoMasters:
    """A fake name server answering 4.9.3's route (:data:`ROUTE_4_9_3`) for one topic on fake broker-a and
    broker-b, each a :class:`RemotingServer` on port 0 with the test's handler."""

    route_4_9_3 = ROUTE_4_9_3

    @staticmethod
    def send_answer(request: RemotingCommand, code: int = ResponseCode.SUCCESS,
                    queue_offset: int = 0) -> RemotingCommand:
        """A broker's answer to a send with *code* and the fields 4.9.3 sets for a stored message (msgId,
        queueId, queueOffset), as handlePutMessageResult does for SUCCESS and the not-store-OK codes."""
        queue_id = request.ext_fields.get("e", request.ext_fields.get("queueId"))
        return request.make_response(code, ext_fields={
            "msgId": "7F00000100002A9F0000000000000000", "queueId": queue_id, "queueOffset": str(queue_offset)})

    @classmethod
    async def answering(cls, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        """A broker storing every send (queue offset 0) and answering SUCCESS to anything else."""
        return cls.send_answer(request) if request.code in _SENDS else request.make_response(ResponseCode.SUCCESS)

    @asynccontextmanager
    async def serve(self, topic: str, broker_a: Handler | None = None, broker_b: Handler | None = None, *,
                    broker_a_stopped: bool = False) -> AsyncIterator[TwoMastersAddrs]:
        """Name server and brokers (a handler not given: :meth:`answering`) started for the block and closed
        after it; *broker_a_stopped*: broker-a's address is in the route but nothing listens on it."""
        async def namesrv(connection: Connection, request: RemotingCommand) -> RemotingCommand:
            if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and request.ext_fields.get("topic") == topic:
                body = ROUTE_4_9_3 % {"a": addrs.broker_a, "b": addrs.broker_b}
                return request.make_response(ResponseCode.SUCCESS, body=body.encode())
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, remark="no route")

        servers = [RemotingServer(namesrv), RemotingServer(broker_a or self.answering),
                   RemotingServer(broker_b or self.answering)]
        try:
            for server in servers:
                await server.start("127.0.0.1", 0)
            addrs = TwoMastersAddrs(*(server.address for server in servers))
            if broker_a_stopped:
                await servers[1].close()  # its address refuses connections
            yield addrs
        finally:
            for server in servers:
                await server.close()


@pytest.fixture
def two_masters() -> TwoMasters:
    """:class:`TwoMasters`: ``async with two_masters.serve(TOPIC, handle_a, handle_b) as addrs`` runs a fake
    name server (``addrs.namesrv``) routing TOPIC to broker-a and broker-b as a 4.9.3 name server does."""
    return TwoMasters()
