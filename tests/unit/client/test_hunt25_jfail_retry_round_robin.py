"""A plain send's retry after a broker failed moves the producer's round-robin past that broker's queues, as
4.9.3's TopicPublishInfo.selectOneMessageQueue(lastBrokerName) does, even when the send's time is spent and
no retry goes out: the next send begins on the other broker.

Found with two masters (broker-a, broker-b, 4 queues each) and broker-a hung (SIGSTOP): a 4.9.3 producer
(sendLatencyFaultEnable false, retryTimesWhenSendFailed 2, 3 s timeout) lost one send in four (a send
beginning on broker-a times out, the three after it go to broker-b's queues 1..3), ours one in two (it
began a send on each of broker-a's four queues in turn, each timing out)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from rocketstore.client.errors import SendCallTimeoutError
from rocketstore.client.producer import Producer
from rocketstore.client.queue_choice import _queue_avoiding
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt25Failover"


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 20)
    return asyncio.run(bounded())


def test_the_retry_choice_steps_the_round_robin_past_the_failed_brokers_queues() -> None:
    queues = [MessageQueue(TOPIC, b, i) for b in ("broker-a", "broker-b") for i in range(4)]
    counter = itertools.count(0)
    first = queues[next(counter) % 8]  # a send begins on broker-a's queue 0 and fails there
    assert _queue_avoiding(queues, counter, first.broker_name) == MessageQueue(TOPIC, "broker-b", 0)
    assert queues[next(counter) % 8] == MessageQueue(TOPIC, "broker-b", 1)  # the next send
    only_a = queues[:4]  # no other broker: the first queue stepped onto
    assert _queue_avoiding(only_a, itertools.count(1), "broker-a") == MessageQueue(TOPIC, "broker-a", 1)


def test_with_a_hung_broker_sends_after_a_timed_out_one_begin_on_the_other_broker(two_masters: Any) -> None:
    async def go() -> list[str]:
        async def hung(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
            if request.code == RequestCode.SEND_MESSAGE_V2:
                await asyncio.sleep(60)  # stopped (SIGSTOP): never answers
            return request.make_response(ResponseCode.SUCCESS)

        outcomes = []
        async with two_masters.serve(TOPIC, hung) as addrs:
            async with Producer(addrs.namesrv, "hunt25-jfail", retry_times=2, timeout_s=0.3) as producer:
                await producer.fetch_publish_message_queues(TOPIC)
                producer._next_queue = itertools.count(0)  # broker-a's queue 0 first
                for _ in range(8):
                    try:
                        result = await producer.send(TOPIC, b"x")
                    except SendCallTimeoutError:
                        outcomes.append("timeout")
                    else:
                        outcomes.append(f"{result.message_queue.broker_name}:{result.message_queue.queue_id}")
        return outcomes

    # as the 4.9.3 producer: one send in four times out (before: broker-a's four queues, one send each)
    assert _run(go()) == ["timeout", "broker-b:1", "broker-b:2", "broker-b:3",
                          "timeout", "broker-b:1", "broker-b:2", "broker-b:3"]
