"""A broker answer whose number fields do not decode (a proxy, another implementation, a half-dead broker):
the client raises a typed error (HeaderFieldError, a ProtocolError) naming the field, not a bare ValueError
from int(), and retries where 4.9.3 retries an answer it cannot decode.

- A send answered SUCCESS with queueOffset (or queueId) "abc": 4.9.3's decodeCommandCustomHeader fails on
  it, and the plain send goes on to its next try (for a missing field that is a RemotingCommandException,
  which sendDefaultImpl retries; for a bad number Java lets NumberFormatException escape, which we do not
  copy: the retry loses nothing).  Before the fix a ValueError ended the send at once.
- A pull answered FOUND with nextBeginOffset "abc": 4.9.3's pull callback reports it through onException
  and the queue is pulled again after pullTimeDelayMillsWhenException.  Before the fix the ValueError
  escaped the pull loop (which retries RocketStoreError only) and killed the queue's pull task.
- A QUERY_CONSUMER_OFFSET answered with offset "abc": before the fix a ValueError escaped the push
  consumer's start() (4.9.3's rebalance logs the failure and tries again).

The fake name server answers the route a 4.9.3 name server gave (conftest's ROUTE_4_9_3, captured); the
fake brokers answer as 4.9.3's do, with one field spoiled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketstore.client.consumer import PullConsumer
from rocketstore.client.producer import Producer
from rocketstore.client.route import MessageQueue
from rocketstore.errors import ProtocolError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.header_fields import HeaderFieldError
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt26ClientFuzz"
_SENDS = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 15)
    return asyncio.run(bounded())


@pytest.mark.parametrize("spoiled", [{"queueOffset": "abc"}, {"queueId": "abc"}, {"queueOffset": "12x"}])
def test_send_answer_with_bad_number_is_retried(two_masters: Any, spoiled: dict[str, str]) -> None:
    sends: list[str] = []

    def broker(name: str) -> Any:
        async def handle(connection: Connection, request: RemotingCommand) -> RemotingCommand:
            if request.code not in _SENDS:
                return request.make_response(ResponseCode.SUCCESS)
            sends.append(name)
            answer = two_masters.send_answer(request, ResponseCode.SUCCESS, len(sends))
            if len(sends) == 1:  # the first answer spoiled, the next ones good
                answer = request.make_response(ResponseCode.SUCCESS, ext_fields={**answer.ext_fields, **spoiled})
            return answer
        return handle

    async def scenario() -> Any:
        async with two_masters.serve(TOPIC, broker("broker-a"), broker("broker-b")) as addrs:
            producer = Producer(addrs.namesrv, "hunt26_fuzz_pg", timeout_s=5.0)
            await producer.start()
            try:
                return await producer.send(TOPIC, b"hello")
            finally:
                await producer.close()

    result = _run(scenario())
    assert len(sends) == 2  # the spoiled answer was a failed try, the next one went to the other broker
    assert sends[0] != sends[1]
    assert result.status == "SEND_OK"
    assert result.queue_offset == 2


@pytest.mark.parametrize("field", ["nextBeginOffset", "minOffset", "maxOffset"])
def test_pull_answer_with_bad_number_raises_protocol_error(two_masters: Any, field: str) -> None:
    async def broker(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.PULL_MESSAGE:
            ext = {"nextBeginOffset": "0", "minOffset": "0", "maxOffset": "0", "suggestWhichBrokerId": "0"}
            ext[field] = "abc"
            return request.make_response(ResponseCode.PULL_NOT_FOUND, ext_fields=ext)
        return request.make_response(ResponseCode.SUCCESS)

    async def scenario() -> None:
        async with two_masters.serve(TOPIC, broker, broker) as addrs:
            consumer = PullConsumer(addrs.namesrv, "hunt26_fuzz_cg")
            try:
                with pytest.raises(HeaderFieldError) as raised:
                    await consumer.pull(MessageQueue(TOPIC, "broker-a", 0), 0)
                assert isinstance(raised.value, ProtocolError)
                assert field in str(raised.value) and "abc" in str(raised.value)
            finally:
                await consumer.close()

    _run(scenario())


@pytest.mark.parametrize("code", [RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.GET_MAX_OFFSET,
                                  RequestCode.GET_MIN_OFFSET])
def test_offset_answer_with_bad_number_raises_protocol_error(two_masters: Any, code: int) -> None:
    async def broker(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"offset": "abc"})

    async def scenario() -> None:
        async with two_masters.serve(TOPIC, broker, broker) as addrs:
            consumer = PullConsumer(addrs.namesrv, "hunt26_fuzz_cg")
            mq = MessageQueue(TOPIC, "broker-a", 0)
            call = {RequestCode.QUERY_CONSUMER_OFFSET: consumer.committed_offset,
                    RequestCode.GET_MAX_OFFSET: consumer.max_offset,
                    RequestCode.GET_MIN_OFFSET: consumer.min_offset}[code]
            try:
                with pytest.raises(HeaderFieldError, match="offset"):
                    await call(mq)
            finally:
                await consumer.close()

    _run(scenario())


def test_found_answer_without_next_begin_offset_is_a_failed_pull(two_masters: Any) -> None:
    """A FOUND answer without nextBeginOffset (4.9.3's PullMessageResponseHeader requires it: the decoding
    throws, the pull is retried after a delay).  Before the fix the pull went on from the offset it asked,
    so a push consumer handed the same messages to its handler again at once, for as long as the peer
    answered that way."""
    async def broker(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.PULL_MESSAGE:
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"minOffset": "0", "maxOffset": "5"})
        return request.make_response(ResponseCode.SUCCESS)

    async def scenario() -> None:
        async with two_masters.serve(TOPIC, broker, broker) as addrs:
            consumer = PullConsumer(addrs.namesrv, "hunt26_fuzz_cg")
            try:
                with pytest.raises(HeaderFieldError, match="nextBeginOffset"):
                    await consumer.pull(MessageQueue(TOPIC, "broker-a", 0), 0)
            finally:
                await consumer.close()

    _run(scenario())
