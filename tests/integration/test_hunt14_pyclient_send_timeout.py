"""A producer against brokers that misbehave, each a stand-in registered with a real name server:

* the send's timeout bounds the whole send, retries included, as 4.9.3's sendDefaultImpl: each retry gets
  what is left of the timeout, and none starts once it is spent.  A broker that takes the request and
  never answers gets it once (the first attempt spends the whole timeout), not once per retry (which made
  a send with timeout_s=T block for up to 3T);
* a broker answering SYSTEM_BUSY (4.9.3's flow control, "[TIMEOUT_CLEAN_QUEUE]broker busy") is not asked
  again: SYSTEM_BUSY is not among DefaultMQProducer.retryResponseCodes, so a Java producer throws at once
  instead of adding load to a broker that sheds it."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from rocketstore.broker.registration import Registrar
from rocketstore.client import Producer
from rocketstore.client.errors import SystemBusyError
from rocketstore.errors import RequestTimeoutError
from rocketstore.namesrv import NameServer
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.frame_decoder import decode_command
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection, run

#: send timeouts are loop timers: asyncio's and uvloop's
pytestmark = pytest.mark.both_loops

TOPIC = "Hunt14SilentTopic"
T = TypeVar("T")


class SilentBroker:
    """Accepts connections and reads request frames without ever answering; counts the frames other than
    the producer's heartbeats (which it never answers either)."""

    def __init__(self) -> None:
        self.frames = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (length,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(length)
                if decode_command(frame).code != RequestCode.HEART_BEAT:
                    self.frames += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()


async def with_registered_broker(addr: str, use: Callable[[str], Awaitable[T]]) -> T:
    """A name server on which *addr* is the master of broker-x with TOPIC (2 queues); ``use(namesrv_addr)``."""
    namesrv = NameServer()
    await namesrv.start("127.0.0.1", 0)
    registrar = Registrar([namesrv.address], cluster_name="DefaultCluster", broker_name="broker-x",
                          broker_id=0, broker_addr=addr, ha_server_addr=addr,
                          body=lambda: RegisterBrokerBody({TOPIC: TopicConfig(TOPIC, 2, 2)}, DataVersion(1, 1)))
    try:
        await registrar.register_all()
        return await use(namesrv.address)
    finally:
        await registrar.pool.close()
        await namesrv.close()


def test_a_broker_that_never_answers_gets_one_attempt_within_the_timeout() -> None:
    async def go() -> tuple[int, BaseException | None]:
        silent = SilentBroker()
        addr = await silent.start()

        async def send(namesrv_addr: str) -> BaseException | None:
            async with Producer(namesrv_addr, "hunt14-timeout-pg", timeout_s=1.0) as producer:
                try:
                    await asyncio.wait_for(producer.send(TOPIC, b"into the void"), 30)
                except RequestTimeoutError as exc:
                    return exc
            return None

        try:
            error = await with_registered_broker(addr, send)
        finally:
            await silent.close()
        return silent.frames, error

    frames, error = run(go())
    assert isinstance(error, RequestTimeoutError)
    assert frames == 1


def test_system_busy_is_not_retried() -> None:
    requests: list[int] = []

    async def busy(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code != RequestCode.HEART_BEAT:  # the producer's heartbeats are no sends
            requests.append(request.code)
        return request.make_response(ResponseCode.SYSTEM_BUSY, remark="[TIMEOUT_CLEAN_QUEUE]broker busy, "
                                     "start flow control for a while")

    async def go() -> None:
        server = RemotingServer(busy)
        await server.start("127.0.0.1", 0)

        async def send(namesrv_addr: str) -> None:
            async with Producer(namesrv_addr, "hunt14-busy-pg", timeout_s=2.0) as producer:
                await asyncio.wait_for(producer.send(TOPIC, b"not now"), 30)

        try:
            await with_registered_broker(server.address, send)
        finally:
            await server.close()

    with pytest.raises(SystemBusyError, match="broker busy"):
        run(go())
    assert len(requests) == 1
