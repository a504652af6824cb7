"""A traced push consumer's handler that raises asyncio.CancelledError of its own (it awaited something
cancelled elsewhere) is traced as EXCEPTION, as any other exception of the handler; it was traced as FAILED,
the outcome of a handler that returned RECONSUME_LATER."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_cluster import LocalCluster
from test_trace import FAST, FAST_DELAYS, WAIT_S, arun, types_of, wait_for_trace

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.trace import ConsumeReturnType, TraceType


def test_a_handlers_own_cancelled_error_is_traced_as_an_exception(tmp_path: Path) -> None:
    topic, group = "TraceCancelTopic", "trace-cancel-consumer"
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        async def go() -> str:
            async with Producer(cluster.namesrv_addr, "trace-cancel-producer") as producer:
                msg_id = (await producer.send(topic, b"cancel", keys="k-cancel")).msg_id
            calls = 0
            done = asyncio.Event()

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                nonlocal calls
                calls += 1
                if calls == 1:
                    future = asyncio.get_running_loop().create_future()
                    future.cancel()
                    await future  # CancelledError in the handler, its task never asked to stop
                done.set()
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, enable_trace=True,
                                    **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return msg_id

        msg_id = arun(go)
        trace = arun(lambda: wait_for_trace(cluster.namesrv_addr, msg_id,
                                            lambda t: types_of(t).count("SubAfter") == 2, "two handler calls"))
        afters = [v.context for v in trace.views if v.context.trace_type is TraceType.SubAfter]
        assert [(a.success, a.context_code) for a in afters] == [(False, int(ConsumeReturnType.EXCEPTION)),
                                                                 (True, int(ConsumeReturnType.SUCCESS))]
