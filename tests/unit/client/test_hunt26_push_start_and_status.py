"""The push consumer beside 4.9.3's DefaultMQPushConsumer (hunt 26):

* a start that fails keeps its own error when closing the trace fails too (the lite pull consumer's twin);
* its running info names the name servers as 4.9.3's MQClientInstance does, each followed by ";"
  (``mqadmin consumerStatus`` showed ``127.0.0.1:51876;`` for a Java consumer of one name server).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rocketstore.client.errors import ClientError
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_consumer import PushConsumer
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo


async def _handler(messages: object) -> None:
    return None


async def start_keeps_the_offsets_error_when_closing_the_trace_fails(consumer: Any) -> None:
    """Start a traced consumer whose offsets cannot be loaded and whose trace producer then fails to close:
    the start must raise the first error, not the close's."""
    assert consumer.trace is not None

    async def load() -> None:
        raise ClientError("the offsets cannot be read")

    async def close() -> None:
        raise OSError("the trace producer cannot close")

    consumer.offsets.load = load
    consumer.trace.close = close
    with pytest.raises(ClientError, match="the offsets cannot be read"):
        await consumer.start()
    assert consumer.start_failed


def test_a_failed_start_keeps_its_error_when_closing_the_trace_fails() -> None:
    consumer = PushConsumer("127.0.0.1:9", "push-fail-g", {"T": "*"}, _handler, enable_trace=True)
    asyncio.run(start_keeps_the_offsets_error_when_closing_the_trace_fails(consumer))


def test_the_running_info_lists_each_name_server_followed_by_a_semicolon() -> None:
    async def go() -> None:
        consumer = PushConsumer("127.0.0.1:1;127.0.0.1:2", "push-status-g", {"T": "*"}, _handler)
        info = consumer.running_info()
        assert info.properties[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == "127.0.0.1:1;127.0.0.1:2;"
        await consumer.consumer.close()

    asyncio.run(go())


def test_a_queue_never_locked_shows_its_creation_as_the_last_lock_time() -> None:
    # (hunt 27) 4.9.3's ProcessQueue starts lastLockTimestamp at its creation: consumerStatus showed 1970 for
    # the queues of our broadcasting or concurrent consumers, the creation time for Java's
    async def go() -> None:
        consumer = PushConsumer("127.0.0.1:1", "push-status-lock-g", {"T": "*"}, _handler)
        before_ms = int(time.time() * 1000)
        mq = MessageQueue("T", "broker-a", 0)
        consumer.process_queues[mq] = ProcessQueue(mq)
        (info,) = consumer.running_info().mq_table.values()
        assert not info.locked
        assert before_ms - 1000 <= info.last_lock_timestamp <= int(time.time() * 1000) + 1000
        await consumer.consumer.close()

    asyncio.run(go())
