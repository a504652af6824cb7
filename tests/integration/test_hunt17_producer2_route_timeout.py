"""The route look-up counts against a send's timeout, as in 4.9.3: sendDefaultImpl measures costTime from
before tryToFindTopicPublishInfo, sendSelectImpl from its start, send(msg, mq) inside sendKernelImpl; a
send whose timeout the look-up spent raises RemotingTooMuchRequestException ("... call timeout") without
sending.  A name server stand-in forwards to the real one and answers the topic's route only after the
producer's send timeout (its own route timeout is longer, as Java's mqClientApiTimeout is its own): nothing
may be stored.  Outcome only, no durations asserted."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, wait_stored

from rocketstore.client import Producer
from rocketstore.errors import RequestTimeoutError
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection, ConnectionPool

TOPIC = "Hunt17Producer2SlowRoute"
SEND_TIMEOUT_S = 1.0
ROUTE_DELAY_S = SEND_TIMEOUT_S + 0.5


async def with_slow_namesrv(namesrv_addr: str, use: Callable[[str], Awaitable[None]]) -> None:
    """``use(addr)`` of a name server that forwards to *namesrv_addr*, TOPIC's route after ROUTE_DELAY_S."""
    pool = ConnectionPool()

    async def forward(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and request.ext_fields.get("topic") == TOPIC:
            await asyncio.sleep(ROUTE_DELAY_S)
        answer = await pool.request(namesrv_addr, request, 10)
        return request.make_response(answer.code, remark=answer.remark, ext_fields=answer.ext_fields,
                                     body=answer.body or b"")

    server = RemotingServer(forward)
    await server.start("127.0.0.1", 0)
    try:
        await use(server.address)
    finally:
        await server.close()
        await pool.close()


@pytest.mark.parametrize(("how", "text"), [("send", "sendDefaultImpl call timeout"),
                                           ("queue", "sendKernelImpl call timeout"),
                                           ("orderly", "sendSelectImpl call timeout"),
                                           ("oneway", "sendDefaultImpl call timeout")])
def test_a_route_look_up_that_spends_the_timeout_sends_nothing(tmp_path: Path, how: str, text: str) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)
        errors: list[BaseException] = []

        async def use(slow_namesrv: str) -> None:
            producer = Producer(slow_namesrv, "hunt17-producer2-slow", timeout_s=SEND_TIMEOUT_S)
            producer.routes.timeout_s = 10.0  # the look-up itself succeeds, only too late for the send
            try:
                if how == "send":
                    await producer.send(TOPIC, b"late")
                elif how == "queue":
                    await producer.send(TOPIC, b"late", queue_id=1)
                elif how == "orderly":
                    await producer.send_orderly(TOPIC, b"late", "key")
                else:
                    await producer.send_oneway(TOPIC, b"late")
            except RequestTimeoutError as exc:
                errors.append(exc)
            try:  # the route is cached now: the next send goes out
                await producer.send(TOPIC, b"marker", queue_id=0)
            finally:
                await producer.close()

        run_within(lambda: with_slow_namesrv(cluster.namesrv_addr, use), 60)  # type: ignore[arg-type]
        assert [str(e) for e in errors] == [text]
        # exactly the marker: the send whose timeout the route look-up spent was not sent
        [stored] = wait_stored(cluster, TOPIC, 1, "the marker sent after the refused send", queues=2)
    assert stored.body == b"marker"
