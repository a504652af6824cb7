"""A traced push consumer's handler call that returned a status after running consume_timeout_s or longer is
traced with contextCode TIME_OUT, as 4.9.3's consume services do: they check consumeTimeout before the status
(a null status, EXCEPTION or RETURNNULL, before that), whatever the status was; success stays the status's.
Ours never wrote TIME_OUT: such a call was traced SUCCESS (or FAILED).

JAVA_SUB_AFTER below was captured from 4.9.3: its DefaultMQPushConsumer with trace on, consumeTimeout 1
(minute), a concurrent listener that slept 61 s and returned CONSUME_SUCCESS, against the 4.9.3 broker:
contextCode 1 (TIME_OUT), success true.
"""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.client.push_consumer import PushConsumer
from rocketstore.client.push_types import ConsumedMessage, ConsumeStatus
from rocketstore.client.trace import (
    ConsumeReturnType,
    TraceContext,
    TraceType,
    decode_trace_data,
    encode_trace_context,
)

NAMESRV = "127.0.0.1:9"
#: the SubAfter record 4.9.3 wrote for that call (captured from 4.9.3, see the module doc)
JAVA_SUB_AFTER = ("SubAfter\x01FD00000000000000000000000000000251F75FFD2B278EF0A57A0001"
                  "\x01FD00000000000000000000000000000251F75FFD2B278EF0A3080000\x0161004\x01true\x01tk\x011"
                  "\x011795889396678\x01cg-to0\x02")
TIMEOUT_S = 0.05
SLOW_S = 0.2  # the handler's run, past TIMEOUT_S


class _Recorder:
    def __init__(self) -> None:
        self.contexts: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> None:
        self.contexts.append(ctx)


def _message() -> ConsumedMessage:
    return ConsumedMessage("SlowTopic", 0, 0, b"slow", "MSGID0", "OFFSETID0", 0, 0, 1, 2, 0, "broker-a",
                           "SlowTopic", {"KEYS": "tk"})


def _sub_after(result: object, *, orderly: bool, timeout_s: float = TIMEOUT_S,
               slow: bool = True) -> TraceContext:
    async def handle(messages: list[ConsumedMessage]) -> object:
        if slow:
            await asyncio.sleep(SLOW_S)
        if isinstance(result, Exception):
            raise result
        return result

    async def go() -> TraceContext:
        consumer = PushConsumer(NAMESRV, "cg-to", {"SlowTopic": "*"}, handle, enable_trace=True,
                                orderly=orderly, consume_timeout_s=timeout_s)
        recorder = _Recorder()
        consumer.consumption.dispatcher = recorder  # type: ignore[attr-defined]
        await consumer.consumption.call_handler([_message()], "SlowTopic")
        await consumer.consumer.close()
        before, after = recorder.contexts
        assert (before.trace_type, after.trace_type) == (TraceType.SubBefore, TraceType.SubAfter)
        return after

    return asyncio.run(go())


@pytest.mark.parametrize("orderly", [False, True])
def test_a_success_returned_past_the_consume_timeout_is_traced_as_time_out(orderly: bool) -> None:
    after = _sub_after(ConsumeStatus.CONSUME_SUCCESS, orderly=orderly)
    assert (after.context_code, after.success) == (ConsumeReturnType.TIME_OUT, True)
    # written as 4.9.3 wrote it: the same fields but for the ids, cost, time and group
    ours = encode_trace_context(after).rstrip("\x02").split("\x01")
    java = JAVA_SUB_AFTER.rstrip("\x02").split("\x01")
    assert len(ours) == len(java)
    kept = (0, 4, 5, 6)  # type, success, keys, contextCode
    assert [ours[i] for i in kept] == [java[i] for i in kept] == ["SubAfter", "true", "tk", "1"]
    [java_ctx] = decode_trace_data(JAVA_SUB_AFTER)
    assert (java_ctx.context_code, java_ctx.success) == (after.context_code, after.success)


@pytest.mark.parametrize("orderly", [False, True])
def test_a_retry_returned_past_the_consume_timeout_is_traced_as_time_out_and_failed(orderly: bool) -> None:
    after = _sub_after(ConsumeStatus.RECONSUME_LATER, orderly=orderly)
    assert (after.context_code, after.success) == (ConsumeReturnType.TIME_OUT, False)


@pytest.mark.parametrize(("result", "code"), [(None, ConsumeReturnType.RETURNNULL),
                                              (RuntimeError("boom"), ConsumeReturnType.EXCEPTION)])
def test_no_status_past_the_consume_timeout_keeps_its_own_code(result: object,
                                                                 code: ConsumeReturnType) -> None:
    after = _sub_after(result, orderly=False)
    assert (after.context_code, after.success) == (code, False)


def test_a_call_within_the_consume_timeout_is_traced_by_its_status() -> None:
    for status, code in ((ConsumeStatus.CONSUME_SUCCESS, ConsumeReturnType.SUCCESS),
                         (ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.FAILED)):
        assert _sub_after(status, orderly=False, timeout_s=900.0, slow=False).context_code == code
