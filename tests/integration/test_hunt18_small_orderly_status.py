"""4.9.3's ConsumeOrderlyStatus names, SUCCESS and SUSPEND_CURRENT_QUEUE_A_MOMENT, returned by an orderly
handler of a real push consumer against a real name server and broker: the suspended batch is handed over
again (reconsume count up) after the queue's pause, SUCCESS consumes it and commits the offset.  Deadlines
only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import (
    ConsumeConcurrentlyStatus,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Producer,
    PushConsumer,
)

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 2000, "lock_renew_interval_s": 0.5,
                        "suspend_current_queue_s": 0.05,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def test_the_java_status_names_are_the_same_members() -> None:
    assert ConsumeOrderlyStatus.SUCCESS is ConsumeStatus.CONSUME_SUCCESS
    assert ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT is ConsumeStatus.RECONSUME_LATER
    assert ConsumeOrderlyStatus.COMMIT is ConsumeStatus.COMMIT
    assert ConsumeConcurrentlyStatus.RECONSUME_LATER is ConsumeStatus.RECONSUME_LATER
    # the members a handler can return are unchanged (the Java names add none)
    assert [s.value for s in ConsumeStatus] == ["CONSUME_SUCCESS", "RECONSUME_LATER", "COMMIT", "ROLLBACK"]


def test_an_orderly_handler_returning_suspend_then_success(tmp_path: Path) -> None:
    topic, group = "Hunt18OrderlyStatus", "hunt18-orderly-status"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, queues=1)
        seen: list[tuple[bytes, int]] = []

        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            m = messages[0]
            seen.append((m.body, m.reconsume_times))
            if m.body == b"m0" and m.reconsume_times == 0:
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
            return ConsumeOrderlyStatus.SUCCESS

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt18-orderly-status-producer") as producer:
                for body in (b"m0", b"m1"):
                    await producer.send(topic, body)
            consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True, **FAST)
            async with consumer:
                await eventually(lambda: len(seen) >= 3, 20, "three calls")
                await eventually(lambda: consumer.offset_table(topic)[(topic, "broker-a", 0)] == 2, 20,
                                 "offset 2 committed")
            assert seen == [(b"m0", 0), (b"m0", 1), (b"m1", 0)]

        run_within(go, 60)
