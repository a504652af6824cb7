"""An orderly push consumer's queue that a rebalance gives away while its handler is busy: the consumer
cannot let it go yet (it waits up to 1 s for the batch in hand, then tries again at the next rebalance),
and each such try counts in the queue's ``tryUnlockTimes`` that GET_CONSUMER_RUNNING_INFO reports
(mqadmin consumerStatus), as 4.9.3's RebalancePushImpl.removeUnnecessaryMessageQueue counts them
(ProcessQueue.incTryUnlockTimes).  It was always 0, so an operator could not tell a queue stuck in its
hand-over from one held normally.  A real name server + broker, real Python consumers; outcomes only."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "lock_renew_interval_s": 0.3,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def test_a_queue_kept_by_a_busy_handler_counts_its_tries_to_unlock(tmp_path: Path) -> None:
    topic, group = "Hunt27TryUnlock", "hunt27-try-unlock"
    entered, leave = threading.Event(), threading.Event()

    def busy(batch: list[ConsumedMessage]) -> ConsumeStatus:
        entered.set()
        leave.wait(15)
        return ConsumeStatus.CONSUME_SUCCESS

    def idle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, queues=1)
        key = (topic, cluster.broker.config.broker_name, 0)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt27-try-unlock-producer") as producer:
                await producer.send(topic, b"m0")
            # client ids sort "...@a-new" before "...@z-old": the only queue goes to the new member
            old = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, busy, orderly=True,
                               instance_name="z-old", **FAST)
            new = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, idle, orderly=True,
                               instance_name="a-new", **FAST)
            async with AdminClient(cluster.namesrv_addr) as admin, old:
                await eventually(entered.is_set, 10, "the old member's handler to start")
                info = await admin.consumer_running_info(group, old.client_id)
                assert info.mq_table[key].locked and info.mq_table[key].try_unlock_times == 0
                async with new:
                    await eventually(lambda: not old.assignment(topic), 10, "the old member to give it up")

                    async def counted() -> bool:
                        info = await admin.consumer_running_info(group, old.client_id)
                        return info.mq_table[key].try_unlock_times >= 2

                    await eventually(counted, 15, "two tries to unlock under the busy handler counted")
                    leave.set()
                    await eventually(lambda: key not in {(mq.topic, mq.broker_name, mq.queue_id)
                                                         for mq in old.process_queues}, 10,
                                     "the old member to let the queue go once its handler is done")

        try:
            run_within(go, 60.0)  # type: ignore[arg-type]
        finally:
            leave.set()
