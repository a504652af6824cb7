"""A push or lite pull consumer refuses at start() a group name Java's checkConfig refuses
(Validators.checkGroup: blank, over 255 characters, outside ``^[%|a-zA-Z0-9_-]+$``; and DEFAULT_CONSUMER),
instead of starting and then failing every heartbeat in the background, consuming nothing.  Nothing
reaches the network: the name server address is unreachable."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    ConsumeStatus,
    LitePullConsumer,
    PushConsumer,
)
from rocketstore.client.errors import ClientError
from rocketstore.remoting.transport import run

UNREACHABLE = "127.0.0.1:1"

BAD_GROUPS = [
    ("", "the specified group is blank"),
    ("  ", "the specified group is blank"),
    ("g" * 256, "the specified group is longer than group max length 255."),
    ("bad group!", r"the specified group\[bad group!\] contains illegal characters, allowing only"),
    ("DEFAULT_CONSUMER", "consumerGroup can not equal DEFAULT_CONSUMER, please specify another one."),
]


async def _handle(messages: object) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


@pytest.mark.parametrize(("group", "message"), BAD_GROUPS)
def test_a_push_consumer_refuses_a_bad_group_at_start(group: str, message: str) -> None:
    async def go() -> None:
        consumer = PushConsumer(UNREACHABLE, group, {"TopicA": "*"}, _handle)
        try:
            await asyncio.wait_for(consumer.start(), 20)
        finally:
            await consumer.shutdown()

    with pytest.raises(ClientError, match=message):
        run(go())


@pytest.mark.parametrize(("group", "message"), BAD_GROUPS[1:])  # an empty one: ValueError when built
def test_a_lite_pull_consumer_refuses_a_bad_group_at_start(group: str, message: str) -> None:
    async def go() -> None:
        consumer = LitePullConsumer(UNREACHABLE, group)
        consumer.subscribe("TopicA", "*")
        try:
            await asyncio.wait_for(consumer.start(), 20)
        finally:
            await consumer.close()

    with pytest.raises(ClientError, match=message):
        run(go())


def test_a_group_of_255_legal_characters_gets_past_the_check() -> None:
    async def go() -> str:
        consumer = PushConsumer(UNREACHABLE, "g" * 255, {"TopicA": "*"}, _handle)
        try:
            await asyncio.wait_for(consumer.start(), 20)
        except ClientError as exc:
            return str(exc)
        finally:
            await consumer.shutdown()
        return ""

    assert "group" not in run(go())


def _threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def test_a_blocking_consumer_with_a_bad_group_raises_and_leaves_no_thread_behind() -> None:
    consumer = BlockingPushConsumer(UNREACHABLE, "bad/group", {"TopicA": "*"}, lambda messages: None)
    with pytest.raises(ClientError, match="contains illegal characters"):
        consumer.start()
    assert _threads_named("push-consumer-bad/group") == []
    lite = BlockingLitePullConsumer(UNREACHABLE, "DEFAULT_CONSUMER")
    lite.subscribe("TopicA")
    with pytest.raises(ClientError, match="consumerGroup can not equal DEFAULT_CONSUMER"):
        lite.start()
    assert _threads_named("lite-pull-consumer-DEFAULT_CONSUMER") == []
