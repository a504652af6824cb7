"""The trace of a push consumer (RocketMQ 4.9.3's ConsumeMessageTraceHookImpl): a SubBefore record per
message just before the handler is called with it, and a SubAfter record per message once the handler
answered, both with the same requestId.

:class:`TracedConsumption` is the push consumer's :class:`Consumption` with the two records around each
handler call (concurrent and orderly alike; CONSUME_MESSAGE_DIRECTLY is not traced, as in 4.9.3).  A
consumer without trace uses the plain Consumption, so its consume loop pays nothing for trace.

As in 4.9.3: a message whose TRACE_ON property is "false" is left out (a call with only such messages is
not traced at all); the region is the message's MSG_REGION property (4.9.3 writes ``null`` when there is
none, and so do we); SubAfter's costTime is the call's time divided by the number of messages, success
is CONSUME_SUCCESS, and contextCode the ConsumeReturnType ordinal (SUCCESS, EXCEPTION, RETURNNULL or
FAILED; TIME_OUT for a handler that returned a status after running ``consume_timeout_s`` or longer, whatever
the status, as 4.9.3 checks consumeTimeout before the status).  Loop-bound.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from rocketstore.client.consume import Consumption
from rocketstore.client.namespace import without_namespace
from rocketstore.client.outgoing_message import new_uniq_key
from rocketstore.client.push_types import ConsumedMessage, ConsumeStatus, MessageHandler
from rocketstore.client.trace import ConsumeReturnType, TraceBean, TraceContext, TraceType
from rocketstore.client.trace_dispatch import TraceDispatcher
from rocketstore.message.properties import PropertyName

if TYPE_CHECKING:
    from rocketstore.client.push_consumer import PushConsumer

__all__ = ["TracedConsumption", "sub_after_context", "sub_before_context"]


def _now_ms() -> int:
    return int(time.time() * 1000)


def sub_before_context(group: str, messages: list[ConsumedMessage], request_id: str,
                       timestamp_ms: int, namespace: str | None = None) -> TraceContext | None:
    """The SubBefore context of a handler call with *messages* (None when every one has TRACE_ON=false);
    with *namespace*, each topic is written without it (as 4.9.3's hook reads it, message by message: the
    messages are not copied)."""
    beans: list[TraceBean] = []
    region: str | None = None
    for m in messages:
        props = m.properties
        if props.get(PropertyName.TRACE_ON) == "false":
            continue
        region = props.get(PropertyName.MSG_REGION)  # the last message's, as Java sets it per message
        topic = m.topic if namespace is None else without_namespace(namespace, m.topic)
        beans.append(TraceBean(topic=topic, msg_id=m.msg_id, tags=m.tags, keys=m.keys,
                               body_length=len(m.body), retry_times=m.reconsume_times))
    if not beans:
        return None
    return TraceContext(TraceType.SubBefore, timestamp_ms, region, group, request_id=request_id, beans=tuple(beans))


#: the handler results traced with returnType SUCCESS: 4.9.3's orderly service leaves its SUCCESS default for
#: COMMIT and ROLLBACK too (and traces success for SUCCESS and COMMIT)
_SUCCESS_RETURNS = frozenset({ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.COMMIT, ConsumeStatus.ROLLBACK})

def sub_after_context(before: TraceContext, began_ms: int, count: int, success: bool,
                      context_code: int) -> TraceContext:
    """The SubAfter context closing *before* (same group, region, requestId and messages): costTime the time
    since *began_ms* divided by the *count* messages."""
    now_ms = _now_ms()
    return TraceContext(TraceType.SubAfter, now_ms, before.region_id, before.group,
                        cost_time_ms=(now_ms - began_ms) // max(1, count), success=success,
                        request_id=before.request_id, context_code=context_code, beans=before.beans)


class TracedConsumption(Consumption):
    """Consumption whose handler calls are traced to *dispatcher*.  Loop-bound."""

    def __init__(self, pc: PushConsumer, handler: MessageHandler, executor: ThreadPoolExecutor,
                 dispatcher: TraceDispatcher) -> None:
        super().__init__(pc, handler, executor)
        self.dispatcher = dispatcher
        #: the group the records name: without the namespace, as 4.9.3's hook writes it
        self.trace_group = without_namespace(pc.namespace, pc.group)
        #: id(messages list) -> how the handler call with that list ended (set by _run_handler)
        self._outcomes: dict[int, ConsumeReturnType] = {}

    async def call_handler(self, messages: list[ConsumedMessage], topic: str) -> ConsumeStatus:
        began_ms = _now_ms()
        # the requestId is a fresh client message id, as Java's TraceContext makes one
        before = sub_before_context(self.trace_group, messages, new_uniq_key(), began_ms, self.pc.namespace)
        if before is None:
            return await super().call_handler(messages, topic)
        self.dispatcher.append(before)
        key = id(messages)
        self._outcomes[key] = ConsumeReturnType.FAILED
        try:
            status = await super().call_handler(messages, topic)
        finally:
            outcome = self._outcomes.pop(key, ConsumeReturnType.FAILED)
        self.dispatcher.append(sub_after_context(
            before, began_ms, len(messages),
            status is ConsumeStatus.CONSUME_SUCCESS or status is ConsumeStatus.COMMIT, int(outcome)))
        return status

    async def _run_handler(self, messages: list[ConsumedMessage]) -> object:
        key = id(messages)
        began = time.monotonic()
        try:
            result = await super()._run_handler(messages)
        except (Exception, asyncio.CancelledError):  # (the handler's own CancelledError is a failure too)
            if key in self._outcomes:
                self._outcomes[key] = ConsumeReturnType.EXCEPTION
            raise
        if key in self._outcomes:  # not a directly consumed message (those are not traced)
            timed_out = time.monotonic() - began >= self.pc.settings.consume_timeout_s
            self._outcomes[key] = (ConsumeReturnType.RETURNNULL if result is None else
                                   ConsumeReturnType.TIME_OUT if timed_out else
                                   ConsumeReturnType.SUCCESS if result in _SUCCESS_RETURNS else
                                   ConsumeReturnType.FAILED)
        return result
