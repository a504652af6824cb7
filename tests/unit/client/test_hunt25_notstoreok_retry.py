"""Producer(retry_another_broker_when_not_store_ok=True), 4.9.3's DefaultMQProducer
setRetryAnotherBrokerWhenNotStoreOK: a plain or batch send the broker answers with another status than
SEND_OK (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) goes on to another queue, within
retry_times, and when no try gets SEND_OK the last such answer is returned, whatever later tries raised (as
sendDefaultImpl's SYNC case and its `sendResult != null` exits).  Off (the default), the answer is returned
after one try.  The answer is not a failure for the latency bookkeeping: with sendLatencyFaultEnable too, the
retry may go to the same broker (4.9.3's MQFaultStrategy ignores the last broker's name).  A request message
(4.9.3 sends it asynchronously) is never retried for it.

The fake brokers answer as 4.9.3's SendMessageProcessor.handlePutMessageResult does for those statuses (the
code, with msgId, queueId and queueOffset set as for SUCCESS); the route is a 4.9.3 name server's."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from rocketstore.client.outgoing_message import OutgoingMessage
from rocketstore.client.producer import Producer
from rocketstore.client.request_producer import ReplyTimeoutError, RequestProducer
from rocketstore.client.transaction_producer import TransactionProducer
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt25NotStoreOk"

_SENDS = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 20)
    return asyncio.run(bounded())


@pytest.fixture
def with_cluster(two_masters: Any) -> Any:
    """``with_cluster(answers, body)``: a name server and broker-a / broker-b answering each send with
    *answers*[broker] (a response code; the queueOffset is how many sends the broker had before);
    ``body(namesrv_addr)`` runs against them.  Returns its result and how many sends each broker got."""
    async def run(answers: dict[str, int], body: Any) -> tuple[Any, dict[str, int]]:
        sends = {"broker-a": 0, "broker-b": 0}

        def broker(name: str) -> Any:
            async def handle(connection: Connection, request: RemotingCommand) -> RemotingCommand:
                if request.code not in _SENDS:
                    return request.make_response(ResponseCode.SUCCESS)
                offset = sends[name]
                sends[name] += 1
                code = answers[name]
                if code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT,
                                ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE):
                    return request.make_response(code, remark="refused")
                return two_masters.send_answer(request, code, offset)
            return handle

        async with two_masters.serve(TOPIC, broker("broker-a"), broker("broker-b")) as addrs:
            return await body(addrs.namesrv), sends
    return run


def _sender(**options: Any) -> Any:
    """One plain send (or batch) from broker-a's queue 0 on: (status, broker:queue:offset)."""
    async def body(namesrv_addr: str) -> tuple[str, str]:
        batch = options.pop("batch", False)
        switch_on = options.pop("switch_on", False)
        async with Producer(namesrv_addr, "hunt25-notstoreok", timeout_s=5.0, **options) as producer:
            if switch_on:
                producer.retry_another_broker_when_not_store_ok = True
            await producer.fetch_publish_message_queues(TOPIC)
            producer._next_queue = itertools.count(0)  # broker-a's queue 0 first
            if options.get("send_latency_fault_enable"):
                producer.latency_fault.clock = lambda: 0  # every latency 0 ms: none left out for slowness
            if batch:
                result = await producer.send_batch(TOPIC, [OutgoingMessage(b"x"), OutgoingMessage(b"y")])
            else:
                result = await producer.send(TOPIC, b"x")
        mq = result.message_queue
        return result.status, f"{mq.broker_name}:{mq.queue_id}:{result.queue_offset}"
    return body


A_NOT_OK = {"broker-a": ResponseCode.FLUSH_SLAVE_TIMEOUT, "broker-b": ResponseCode.SUCCESS}


def test_off_by_default_the_not_ok_answer_is_returned_after_one_try(with_cluster: Any) -> None:
    assert _run(with_cluster(A_NOT_OK, _sender())) == (
        ("FLUSH_SLAVE_TIMEOUT", "broker-a:0:0"), {"broker-a": 1, "broker-b": 0})


@pytest.mark.parametrize("options", [{"retry_another_broker_when_not_store_ok": True}, {"switch_on": True},
                                     {"retry_another_broker_when_not_store_ok": True, "batch": True}])
def test_on_the_send_goes_on_to_another_brokers_queue_and_returns_its_send_ok(
        with_cluster: Any, options: dict[str, Any]) -> None:
    # the retry avoids the not-OK broker, as after a failure (selectOneMessageQueue(lastBrokerName))
    assert _run(with_cluster(A_NOT_OK, _sender(**options))) == (
        ("SEND_OK", "broker-b:0:0"), {"broker-a": 1, "broker-b": 1})


def test_when_every_try_is_not_ok_the_last_answer_is_returned(with_cluster: Any) -> None:
    answers = {"broker-a": ResponseCode.FLUSH_SLAVE_TIMEOUT, "broker-b": ResponseCode.SLAVE_NOT_AVAILABLE}
    # a:0, b:0 (the round-robin stepped past a's queues), a:0 again (past b's): the third answer, no error
    assert _run(with_cluster(answers, _sender(retry_another_broker_when_not_store_ok=True))) == (
        ("FLUSH_SLAVE_TIMEOUT", "broker-a:0:1"), {"broker-a": 2, "broker-b": 1})
    answers = {"broker-a": ResponseCode.FLUSH_DISK_TIMEOUT, "broker-b": ResponseCode.FLUSH_DISK_TIMEOUT}
    once = _sender(retry_another_broker_when_not_store_ok=True, retry_times=0)
    assert _run(with_cluster(answers, once)) == (("FLUSH_DISK_TIMEOUT", "broker-a:0:0"),
                                                  {"broker-a": 1, "broker-b": 0})


def test_an_error_after_a_not_ok_answer_returns_that_answer(with_cluster: Any) -> None:
    # broker-b refuses with an answer that is not retried (SYSTEM_BUSY): sendDefaultImpl returns the
    # sendResult it has instead of throwing
    answers = {"broker-a": ResponseCode.SLAVE_NOT_AVAILABLE, "broker-b": ResponseCode.SYSTEM_BUSY}
    assert _run(with_cluster(answers, _sender(retry_another_broker_when_not_store_ok=True))) == (
        ("SLAVE_NOT_AVAILABLE", "broker-a:0:0"), {"broker-a": 1, "broker-b": 1})
    # and one that is (SYSTEM_ERROR) on the last try: the not-OK answer, not "Send [2] times, still failed"
    answers = {"broker-a": ResponseCode.SLAVE_NOT_AVAILABLE, "broker-b": ResponseCode.SYSTEM_ERROR}
    twice = _sender(retry_another_broker_when_not_store_ok=True, retry_times=1)
    assert _run(with_cluster(answers, twice)) == (("SLAVE_NOT_AVAILABLE", "broker-a:0:0"),
                                                   {"broker-a": 1, "broker-b": 1})


def test_with_send_latency_fault_the_not_ok_broker_is_not_left_out(with_cluster: Any) -> None:
    # the answer counts as a send that did not fail: broker-a stays available, and MQFaultStrategy's choice
    # (the next available queue, whatever the last broker) retries on it
    options = {"retry_another_broker_when_not_store_ok": True, "send_latency_fault_enable": True}
    assert _run(with_cluster(A_NOT_OK, _sender(**options))) == (
        ("FLUSH_SLAVE_TIMEOUT", "broker-a:2:2"), {"broker-a": 3, "broker-b": 0})


def test_a_request_message_is_not_retried_for_a_not_ok_answer(with_cluster: Any) -> None:
    async def body(namesrv_addr: str) -> str:
        async with RequestProducer(namesrv_addr, "hunt25-notstoreok-rr",
                                   retry_another_broker_when_not_store_ok=True) as producer:
            await producer.fetch_publish_message_queues(TOPIC)
            producer._next_queue = itertools.count(0)
            with pytest.raises(ReplyTimeoutError):  # no responder: the request waits for its reply
                await producer.request(TOPIC, b"x", timeout_s=0.5)
            result = await producer.send(TOPIC, b"x")  # a plain send of the same producer is retried
            return result.message_queue.broker_name
    assert _run(with_cluster(A_NOT_OK, body)) == ("broker-b", {"broker-a": 2, "broker-b": 1})


def test_the_option_passes_through_the_other_producers() -> None:
    transactional = TransactionProducer("127.0.0.1:1", "hunt25-notstoreok-tx", lambda message: None,
                                        retry_another_broker_when_not_store_ok=True)
    assert transactional._sender.retry_another_broker_when_not_store_ok is True
    assert TransactionProducer("127.0.0.1:1", "hunt25-notstoreok-tx", lambda message: None
                               )._sender.retry_another_broker_when_not_store_ok is False
