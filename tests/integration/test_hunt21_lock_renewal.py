"""An orderly push consumer whose lock renewal (LOCK_BATCH_MQ every ``lock_renew_interval_s``) goes
unanswered keeps consuming its queues, as 4.9.3's RebalanceImpl.lockAll does: a broker that did not answer
changes no queue's lock state, which then lives until ``lock_max_live_s`` after the last granted lock (the
broker keeps it twice as long).  Before, one lost renewal marked every queue of that broker unlocked and
paused them until a lock was granted again.  Against a real broker and name server; outcomes only."""

from __future__ import annotations

from local_cluster import LocalCluster, eventually
from test_hunt18_clienttimeouts_bounds import QUICK, arun, slow_down
from test_python_push_consumer import create_topic, send_all

from rocketstore.client import ConsumedMessage, ConsumeStatus, MessageQueue, PushConsumer
from rocketstore.remoting.codes import RequestCode


def test_an_unanswered_lock_renewal_leaves_the_queues_locked_and_consuming(cluster: LocalCluster) -> None:
    topic = "Hunt21LockRenewal"
    mq = MessageQueue(topic, cluster.broker_name, 0)
    got: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=1)
        async with PushConsumer(cluster.namesrv_addr, "hunt21-lock-renewal", {topic: "*"}, handle, orderly=True,
                                **{**QUICK, "lock_renew_interval_s": 3600.0}) as consumer:
            await eventually(lambda: mq in consumer.process_queues and consumer.process_queues[mq].locked, 20,
                             "the queue locked")
            pq = consumer.process_queues[mq]
            last_lock_s = pq.last_lock_s
            answered = slow_down(cluster, RequestCode.LOCK_BATCH_MQ, 1.5)
            await consumer.lock_all()  # the renewal: its answer comes after the client's 1 s bound
            assert pq.locked and pq.last_lock_s == last_lock_s
            await send_all(cluster, topic, 3)
            await eventually(lambda: len(got) == 3, 20, "the messages sent meanwhile consumed")
            await eventually(lambda: answered, 10, "the late answer")

    arun(go)
