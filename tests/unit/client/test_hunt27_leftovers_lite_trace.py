"""A traced lite pull consumer in a namespace writes its trace without copying the pulled messages.

The trace records name each topic without the namespace (4.9.3's ConsumeMessageTraceHookImpl reads it
through NamespaceUtil.withoutNamespace as it builds each bean).  Ours made a copy of every pulled message
with its topic stripped just to build the records; now the topic is stripped as each record's bean is
made, and the messages are neither copied nor changed (poll() strips them when it hands them out).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from rocketstore.client.lite_pull_consumer import LitePullConsumer
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_consumer import PushConsumer
from rocketstore.client.push_types import ConsumedMessage, ConsumeStatus
from rocketstore.client.route import MessageQueue
from rocketstore.client.trace import TraceContext, TraceType

NAMESRV = "127.0.0.1:9"


class _Recorder:
    def __init__(self) -> None:
        self.contexts: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> None:
        self.contexts.append(ctx)


def _message(topic: str, n: int, **props: str) -> ConsumedMessage:
    return ConsumedMessage(topic, 0, n, b"body" * (n + 1), f"MSGID{n}", f"OFFSETID{n}", 0, 100 * n, 1, 2, 0,
                           "broker-a", topic, {"KEYS": f"key-{n}", **props})


@pytest.mark.parametrize("namespace", ["nsT", None])
def test_the_trace_of_a_pulled_batch_copies_no_message(namespace: str | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    topic = "LiteTraced" if namespace is None else f"{namespace}%LiteTraced"
    copies: list[Any] = []
    replace = dataclasses.replace

    def counted(obj: Any, /, **changes: Any) -> Any:
        copies.append(obj)
        return replace(obj, **changes)

    async def go() -> None:
        consumer = LitePullConsumer(NAMESRV, "lite-trace-g", enable_trace=True, namespace=namespace)
        recorder = _Recorder()
        consumer.consumption.dispatcher = recorder  # type: ignore[attr-defined]
        pq = ProcessQueue(MessageQueue(topic, "broker-a", 0))
        # the middle one asks not to be traced (TRACE_ON=false): left out of the records
        batch = [_message(topic, 0), _message(topic, 1, TRACE_ON="false"), _message(topic, 2)]
        kept = list(batch)
        monkeypatch.setattr(dataclasses, "replace", counted)
        consumer.consumption.dispatch(pq, batch)
        monkeypatch.setattr(dataclasses, "replace", replace)
        assert copies == []
        before, after = recorder.contexts
        assert (before.trace_type, after.trace_type) == (TraceType.SubBefore, TraceType.SubAfter)
        assert before.group == after.group == "lite-trace-g"
        assert before.request_id == after.request_id
        assert [b.topic for b in before.beans] == [b.topic for b in after.beans] == ["LiteTraced"] * 2
        assert [b.msg_id for b in before.beans] == ["MSGID0", "MSGID2"]
        assert [b.body_length for b in before.beans] == [4, 12]
        assert after.success is True and after.context_code == 0
        # the batch waiting for poll() is the pulled one, its messages as they were
        [(_, waiting)] = consumer.consumption.batches
        assert waiting is batch and all(a is b for a, b in zip(waiting, kept, strict=True))
        assert {m.topic for m in waiting} == {topic}

    asyncio.run(go())


def test_a_traced_push_consumer_in_a_namespace_names_the_topic_without_it() -> None:
    # the push consumer's records too (its messages carry ``nsP%topic`` until the handler's copy strips it):
    # a SubBefore keyed by the namespaced topic went into other trace messages than the Pub records of the
    # same topic
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        consumer = PushConsumer(NAMESRV, "push-trace-g", {"PushTraced": "*"}, handle, enable_trace=True,
                                namespace="nsP")
        recorder = _Recorder()
        consumer.consumption.dispatcher = recorder  # type: ignore[attr-defined]
        status = await consumer.consumption.call_handler([_message("nsP%PushTraced", 0)], "nsP%PushTraced")
        assert status is ConsumeStatus.CONSUME_SUCCESS
        before = recorder.contexts[0]
        assert before.trace_type is TraceType.SubBefore
        assert [b.topic for b in before.beans] == ["PushTraced"]
        await consumer.consumer.close()

    asyncio.run(go())
