"""An orderly handler's COMMIT and ROLLBACK (auto_commit off) in the consume trace, as 4.9.3's
ConsumeMessageOrderlyService traces them: returnType SUCCESS for both (its default, which only SUSPEND, null
and a timeout change), and success true for COMMIT, false for ROLLBACK."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_cluster import LocalCluster
from test_trace import FAST, WAIT_S, arun, types_of, wait_for_trace

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer, current_context
from rocketstore.client.trace import TraceType

SUCCESS_CODE = 0  # ConsumeReturnType.SUCCESS's ordinal


def test_orderly_commit_and_rollback_are_traced_as_4_9_3_traces_them(tmp_path: Path) -> None:
    topic, group = "Hunt17TraceCommit", "hunt17-trace-commit"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def go() -> str:
            async with Producer(cluster.namesrv_addr, "hunt17-trace-commit-producer") as producer:
                msg_id = (await producer.send(topic, b"once rolled back", queue_id=0)).msg_id
            calls = 0
            done = asyncio.Event()

            def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                nonlocal calls
                calls += 1
                context = current_context()
                assert context is not None
                context.auto_commit = False
                context.suspend_current_queue_s = 0.01
                if calls == 1:
                    return ConsumeStatus.ROLLBACK
                done.set()
                return ConsumeStatus.COMMIT

            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                    enable_trace=True, **FAST):
                await asyncio.wait_for(done.wait(), WAIT_S)
            return msg_id

        msg_id = arun(go)
        trace = arun(lambda: wait_for_trace(cluster.namesrv_addr, msg_id,
                                            lambda t: types_of(t).count("SubAfter") == 2, "two handler calls"))
        afters = sorted((v.context for v in trace.views if v.context.trace_type is TraceType.SubAfter),
                        key=lambda c: c.timestamp_ms)
        assert [(a.success, a.context_code) for a in afters] == [(False, SUCCESS_CODE), (True, SUCCESS_CODE)]
