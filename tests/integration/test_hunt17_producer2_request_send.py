"""A request message's send, as 4.9.3's DefaultMQProducerImpl.request sends it: bounded by what is left of
the request's timeout (sendDefaultImpl / sendKernelImpl get ``timeout - cost``), not by the producer's send
timeout; and for request(msg, mq) a transport failure is retried on the same queue (sendMessageAsync's
retries keep to the broker when there is no TopicPublishInfo), where a plain send to a chosen queue is sent
once.  A broker stand-in registered with a real name server; outcomes only, no durations asserted."""

from __future__ import annotations

import asyncio

from test_hunt14_pyclient_send_timeout import TOPIC, with_registered_broker

from rocketstore.client import RequestProducer
from rocketstore.client.request_producer import ReplyTimeoutError
from rocketstore.errors import RemotingError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection, run

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2)


class StandInBroker:
    """Answers heartbeats; answers each send SUCCESS after *answer_delay_s*, but closes the connection
    instead of answering the first *drops* sends.  Records the queue id of every send it got."""

    def __init__(self, *, answer_delay_s: float = 0.0, drops: int = 0) -> None:
        self.answer_delay_s = answer_delay_s
        self.drops = drops
        self.sends: list[str] = []
        self.server = RemotingServer(self._serve)

    async def start(self) -> str:
        await self.server.start("127.0.0.1", 0)
        return self.server.address

    async def _serve(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code not in SEND_CODES:
            return None if request.is_oneway else request.make_response(ResponseCode.SUCCESS)
        queue_id = request.ext_fields.get("e") or request.ext_fields.get("queueId") or "?"
        self.sends.append(queue_id)
        if len(self.sends) <= self.drops:
            connection.close()
            return None
        if self.answer_delay_s:
            await asyncio.sleep(self.answer_delay_s)  # a slow store, not a wait for anything
        return request.make_response(ResponseCode.SUCCESS, ext_fields={
            "msgId": "7F00000100002A9F0000000000000000", "queueId": queue_id, "queueOffset": "0"})


def request_with(broker: StandInBroker, **kwargs: object) -> tuple[BaseException | None, list[str]]:
    """One request (timeout 4 s) of a RequestProducer with a 1 s send timeout and 2 retries; what it raised."""
    async def go() -> BaseException | None:
        addr = await broker.start()

        async def use(namesrv_addr: str) -> BaseException | None:
            async with RequestProducer(namesrv_addr, "hunt17-producer2-rpc", timeout_s=1.0,
                                       retry_times=2) as requester:
                try:
                    await requester.request(TOPIC, b"question", timeout_s=4.0, **kwargs)  # type: ignore[arg-type]
                except Exception as exc:
                    return exc
            return None

        try:
            return await with_registered_broker(addr, use)
        finally:
            await broker.server.close()

    return run(asyncio.wait_for(go(), 60)), broker.sends


def test_a_request_send_slower_than_the_send_timeout_is_bounded_by_the_request_timeout() -> None:
    error, sends = request_with(StandInBroker(answer_delay_s=1.5))
    # sent once and answered within the request's 4 s: then no reply came (nobody answers it)
    assert isinstance(error, ReplyTimeoutError), repr(error)
    assert len(sends) == 1


def test_a_request_to_a_chosen_queue_is_retried_on_it_after_a_transport_error() -> None:
    error, sends = request_with(StandInBroker(drops=1), queue_id=1)
    assert isinstance(error, ReplyTimeoutError), repr(error)
    assert sends == ["1", "1"]


def test_a_plain_send_to_a_chosen_queue_is_still_sent_once() -> None:
    broker = StandInBroker(drops=1)

    async def go() -> BaseException | None:
        addr = await broker.start()

        async def use(namesrv_addr: str) -> BaseException | None:
            async with RequestProducer(namesrv_addr, "hunt17-producer2-plain", timeout_s=2.0,
                                       retry_times=2) as producer:
                try:
                    await producer.send(TOPIC, b"plain", queue_id=1)
                except RemotingError as exc:
                    return exc
            return None

        try:
            return await with_registered_broker(addr, use)
        finally:
            await broker.server.close()

    error = run(asyncio.wait_for(go(), 60))
    assert isinstance(error, RemotingError), repr(error)
    assert broker.sends == ["1"]
