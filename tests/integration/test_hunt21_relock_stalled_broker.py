"""An orderly consumer's lock renewal (LOCK_BATCH_MQ) that times out on the client because the broker is
stalled, followed by the consumer giving the queues up (UNLOCK_BATCH_MQ), against a real name server +
broker and a real Python push consumer.

The broker's event loop is blocked (a real stall: nothing on it runs, nothing is read) before the renewal
is sent; the client gives up on the renewal after its 1 s bound, then sends the unlock on the same pooled
connection.  Once the stall ends the broker reads both and must serve them in the order they came: were
the unlock served first, the late renewal would lock the queues again for the consumer that gave them up,
and the group's other members could not lock them until the broker let the lock expire (60 s).  Our broker
serves a connection's requests in order because the lock and unlock handlers do not yield before acting;
this test fails if one of them does (an await before ``try_lock``, a hand-off to an executor)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer, group_requests
from rocketstore.client.route import MessageQueue
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool

#: lock renewals are started by the test alone
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "suspend_current_queue_s": 0.05, "lock_renew_interval_s": 3600.0,
                        "mq_client_api_timeout_s": 1.0,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


class ServedOrder:
    """The broker's lock and unlock handlers wrapped (on the broker's loop) to note, once armed, the order
    in which they finished serving *client_id*'s requests.  The wrappers add no suspension point."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.client_id = ""
        #: (lock or unlock, the queue ids it named), in the order served
        self.served: list[tuple[str, frozenset[int]]] = []
        router = cluster.broker.router
        self._lock = router.handlers[RequestCode.LOCK_BATCH_MQ]
        self._unlock = router.handlers[RequestCode.UNLOCK_BATCH_MQ]
        router.handlers[RequestCode.LOCK_BATCH_MQ] = self.lock
        router.handlers[RequestCode.UNLOCK_BATCH_MQ] = self.unlock

    def _note(self, what: str, request: RemotingCommand) -> None:
        if self.client_id and self.client_id.encode() in (request.body or b""):
            body = fastjson.loads(request.body)
            self.served.append((what, frozenset(mq["queueId"] for mq in body["mqSet"])))

    def unlocked(self, queue_id: int) -> bool:
        """Whether an unlock naming *queue_id* was served, and after every lock naming it."""
        named = [what for what, queues in self.served if queue_id in queues]
        return bool(named) and named[-1] == "unlock"

    def unlock_served(self, queue_id: int) -> bool:
        return any(what == "unlock" and queue_id in queues for what, queues in self.served)

    async def lock(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        response = await self._lock(conn, request)
        self._note("lock", request)
        return response

    async def unlock(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        response = await self._unlock(conn, request)
        self._note("unlock", request)
        return response


def test_a_renewal_timed_out_by_a_stalled_broker_does_not_lock_again_after_the_unlock(
        tmp_path: Path, monkeypatch: Any) -> None:
    topic, group = "Hunt21Relock", "hunt21-relock"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 2)
        order = cluster.call(lambda: ServedOrder(cluster))
        stalled, release = threading.Event(), threading.Event()

        def stall() -> None:  # runs on the broker's loop and blocks it
            stalled.set()
            release.wait(60)

        def locks_of() -> dict[int, str]:
            return cluster.call(lambda: {key[3]: lock.client_id
                                         for key, lock in cluster.broker.queue_locks.locks.items()
                                         if key[0] == group and key[1] == topic})

        unlocks_sent: list[int] = []
        real_unlock = group_requests.unlock_queues

        async def noted_unlock(*args: Any) -> None:
            unlocks_sent.append(1)
            await real_unlock(*args)

        monkeypatch.setattr(group_requests, "unlock_queues", noted_unlock)  # as push_consumer calls it

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt21-relock-producer") as producer:
                for i in range(8):
                    await producer.send(topic, f"m{i}".encode(), queue_id=i % 2)

            async def ignore(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT  # nothing of it committed

            first = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, ignore, orderly=True, **FAST)
            await first.start()
            try:
                await eventually(lambda: len(first.assignment(topic)) == 2, 20, "the member to hold the 2 queues")
                await eventually(lambda: set(locks_of().values()) == {first.client_id}, 20, "its broker locks")
                conn = await first.consumer.pool.get(cluster.broker_addr)
                order.client_id = first.client_id
                cluster.loop.call_soon_threadsafe(stall)
                await eventually(stalled.is_set, 20, "the broker's loop to stall")
                try:
                    await first.lock_all()  # sent, unread by the broker: the client's 1 s bound ends it
                    first.unsubscribe(topic)
                    rebalance = asyncio.get_running_loop().create_task(first.rebalance())
                    # the unlock is written to the same connection while the broker still has not read the lock
                    await eventually(lambda: unlocks_sent and not conn._outbox and not conn._flush_scheduled,
                                     20, "the unlock to be written")
                    assert order.served == []
                finally:
                    release.set()
                await rebalance
                await eventually(lambda: cluster.call(lambda: order.unlock_served(0) and order.unlock_served(1)),
                                 20, "the broker to serve the unlocks")
                served = cluster.call(lambda: list(order.served))
                assert served[0] == ("lock", frozenset({0, 1})), served  # the renewal, first as sent
                assert cluster.call(lambda: order.unlocked(0) and order.unlocked(1)), served
                assert locks_of() == {}, "the late renewal locked the queues again after the unlock"
            finally:
                release.set()
                await first.shutdown()

            # another member of the group locks both queues at once (not after the broker's 60 s expiry)
            pool = ConnectionPool()
            try:
                mqs = {MessageQueue(topic, cluster.broker_name, q) for q in range(2)}
                granted = await group_requests.lock_queues(pool, cluster.broker_addr, group, "other@1", mqs, 3.0)
                assert granted == mqs
            finally:
                await pool.close()

        try:
            run_within(go, 90)
        finally:
            release.set()
