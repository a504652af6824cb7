"""Every send path refuses what Java's Validators.checkMessage (and, for batches, MessageBatch.generateFromList)
refuses, before anything reaches the network: the topic (blank, over 127 characters, outside
``^[%|a-zA-Z0-9_-]+$``, SCHEDULE_TOPIC_XXXX), an empty body, a body over maxMessageSize.  The name server
address is unreachable, so a send that got past the checks would fail with NoRouteError instead."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import MessageIllegalError
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import run

UNREACHABLE = "127.0.0.1:1"


def _call(fn: Callable[[Producer], Awaitable[Any]], **kwargs: Any) -> None:
    async def go() -> None:
        producer = Producer(UNREACHABLE, "hunt14-pg", **kwargs)
        try:
            await fn(producer)
        finally:
            await producer.close()

    run(go())


SENDS: dict[str, Callable[[str, bytes], Callable[[Producer], Awaitable[Any]]]] = {
    "send": lambda topic, body: lambda p: p.send(topic, body),
    "send_oneway": lambda topic, body: lambda p: p.send_oneway(topic, body),
    "send_orderly": lambda topic, body: lambda p: p.send_orderly(topic, body, "key-1"),
    "send_batch": lambda topic, body: lambda p: p.send_batch(topic, [OutgoingMessage(b"ok"), OutgoingMessage(body)]),
}


@pytest.mark.parametrize("path", sorted(SENDS))
@pytest.mark.parametrize(("topic", "message"), [
    ("", "The specified topic is blank"),
    ("   ", "The specified topic is blank"),
    ("a" * 128, "The specified topic is longer than topic max length 127."),
    ("bad topic!", r"The specified topic\[bad topic!\] contains illegal characters, allowing only"),
    ("caf\u00e9", "contains illegal characters"),
    ("SCHEDULE_TOPIC_XXXX", r"Sending message to topic\[SCHEDULE_TOPIC_XXXX\] is forbidden."),
])
def test_a_bad_topic_is_refused_by_every_send_path(path: str, topic: str, message: str) -> None:
    with pytest.raises(MessageIllegalError, match=message):
        _call(SENDS[path](topic, b"body"))


@pytest.mark.parametrize("path", sorted(SENDS))
def test_an_empty_body_is_refused_by_every_send_path(path: str) -> None:
    with pytest.raises(MessageIllegalError, match="the message body length is zero") as caught:
        _call(SENDS[path]("TopicA", b""))
    assert caught.value.code == ResponseCode.MESSAGE_ILLEGAL


@pytest.mark.parametrize("path", sorted(SENDS))
def test_a_body_over_max_message_size_is_refused_by_every_send_path(path: str) -> None:
    with pytest.raises(MessageIllegalError, match="the message body size over max value, MAX: 64"):
        _call(SENDS[path]("TopicA", b"x" * 65), max_message_size=64)


def test_a_legal_topic_of_127_characters_gets_past_the_checks() -> None:
    from rocketstore.client.errors import NoRouteError

    with pytest.raises(NoRouteError):
        _call(SENDS["send"]("a" * 127, b"body"))


@pytest.mark.parametrize(("topic", "messages", "message"), [
    ("TopicA", [OutgoingMessage(b"x", properties={"DELAY": "3"})], "TimeDelayLevel is not supported for batching"),
    ("%RETRY%some-group", [OutgoingMessage(b"x")], "Retry Group is not supported for batching"),
])
def test_a_batch_refuses_delay_levels_and_retry_topics(topic: str, messages: list[OutgoingMessage],
                                                        message: str) -> None:
    with pytest.raises(MessageIllegalError, match=message):
        _call(lambda p: p.send_batch(topic, messages))


def test_a_batch_with_delay_level_zero_gets_past_the_checks() -> None:
    from rocketstore.client.errors import NoRouteError

    with pytest.raises(NoRouteError):
        _call(lambda p: p.send_batch("TopicA", [OutgoingMessage(b"x", properties={"DELAY": "0"})]))
