"""A push consumer refuses, when it is made, a handler that cannot be called with the messages alone: a
Java listener's ``consumeMessage(msgs, context)`` written as ``def handle(msgs, context)`` was taken and
then failed on every message, each failure a retry through %RETRY%, the messages ending in the DLQ after
16.  Handlers that take the messages (and optional extras, ``*args``, async ones, callable objects) pass."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from rocketstore.client import BlockingPushConsumer, ConsumeStatus, PushConsumer

NS = "127.0.0.1:1"  # never connected to: the consumers are not started


def _java_style(msgs: list[Any], context: Any) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def test_a_two_argument_handler_is_refused_naming_current_context() -> None:
    with pytest.raises(TypeError, match=r"'_java_style' cannot be called as handler\(messages\).*context.*"
                                        r"current_context\(\)"):
        PushConsumer(NS, "hunt29-handler", {"TopicA": "*"}, _java_style)
    with pytest.raises(TypeError, match="cannot be called as handler"):
        BlockingPushConsumer(NS, "hunt29-handler-b", {"TopicA": "*"}, _java_style)


def test_a_handler_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        not_callable: Any = ConsumeStatus.CONSUME_SUCCESS
        PushConsumer(NS, "hunt29-handler", {"TopicA": "*"}, not_callable)


class _Handler:
    def __call__(self, messages: list[Any]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS


async def _async_handler(messages: list[Any]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def _with_context(f: Any) -> Any:
    """(review) the adapter a port of Java listeners writes: the context supplied, the messages alone taken"""
    @functools.wraps(f)
    def wrapper(msgs: list[Any]) -> Any:
        return f(msgs, None)
    return wrapper


@pytest.mark.parametrize("handler", [
    _with_context(_java_style),
    lambda ms: ConsumeStatus.CONSUME_SUCCESS,
    lambda ms, context=None: ConsumeStatus.CONSUME_SUCCESS,
    lambda *args: ConsumeStatus.CONSUME_SUCCESS,
    _async_handler,
    _Handler(),
    functools.partial(_java_style, context=None),
    print,
])
def test_handlers_taking_the_messages_pass(handler: Any) -> None:
    consumer = PushConsumer(NS, "hunt29-handler-ok", {"TopicA": "*"}, handler)
    consumer._executor.shutdown(wait=False)
