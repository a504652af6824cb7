"""An orderly consumer's periodic lock renewal (LOCK_BATCH_MQ) in flight while the consumer gives one of
those queues up (UNLOCK_BATCH_MQ), against a real name server + broker and real Python push consumers.

The broker holds the renewal (the real request, served by the real handler once let go) until the unlock
has been served, or at most a little under the client's 1 s bound of a lock request.  The renewal used to
be sent with the queue in it and the unlock sent alongside: served after the unlock, the renewal locked
the queue again for the consumer that had just given it up, and the group's next orderly member could not
consume it until the broker let the stale lock expire (60 s).  Lock and unlock requests of a consumer now
go one at a time, and a queue being unlocked is left out of renewals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.process_queue import wait_event
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand

#: lock renewals are started by the test alone (the periodic one would race the one it holds)
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.3, "rebalance_interval_s": 0.3, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
                        "suspend_current_queue_s": 0.05, "lock_renew_interval_s": 3600.0,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
#: how long the broker holds the renewal at most: under the client's bound of a lock request (1 s), so
#: the client is still waiting for its answer
HOLD_S = 0.8


class HeldRenewal:
    """The broker's LOCK_BATCH_MQ handler wrapped so that the first lock request of *client_id* after
    :meth:`arm` waits for an UNLOCK_BATCH_MQ from that client to be served (or HOLD_S).  Runs on the
    broker's loop."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.client_id = ""
        self.captured = False
        router = cluster.broker.router
        self._lock = router.handlers[RequestCode.LOCK_BATCH_MQ]
        self._unlock = router.handlers[RequestCode.UNLOCK_BATCH_MQ]
        self._unlocked = asyncio.Event()  # created on the broker's loop (see install)
        router.handlers[RequestCode.LOCK_BATCH_MQ] = self.lock
        router.handlers[RequestCode.UNLOCK_BATCH_MQ] = self.unlock

    @classmethod
    def install(cls, cluster: LocalCluster) -> HeldRenewal:
        return cluster.call(lambda: cls(cluster))

    def arm(self, client_id: str) -> None:
        self.client_id = client_id

    def _from_armed(self, request: RemotingCommand) -> bool:
        return bool(self.client_id) and self.client_id.encode() in (request.body or b"")

    async def lock(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        if self._from_armed(request) and not self.captured:
            self.captured = True
            self._unlocked.clear()
            await wait_event(self._unlocked, HOLD_S)
        return await self._lock(conn, request)

    async def unlock(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        response = await self._unlock(conn, request)
        if self._from_armed(request):
            self._unlocked.set()
        return response


def test_a_renewal_in_flight_does_not_lock_again_a_queue_given_up_meanwhile(tmp_path: Path) -> None:
    kept, given_up, group = "Hunt20LockKept", "Hunt20LockGivenUp", "hunt20-lock-race"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(kept, 2)
        cluster.create_topic(given_up, 2)
        held = HeldRenewal.install(cluster)

        def locks_of(topic: str) -> dict[int, str]:
            return cluster.call(lambda: {key[3]: lock.client_id
                                         for key, lock in cluster.broker.queue_locks.locks.items()
                                         if key[0] == group and key[1] == topic})

        async def go() -> None:
            bodies = [f"m{i}".encode() for i in range(8)]
            async with Producer(cluster.namesrv_addr, "hunt20-lock-race-producer") as producer:
                for i, body in enumerate(bodies):
                    await producer.send(given_up, body, queue_id=i % 2)

            async def ignore(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT  # nothing of it committed

            first = PushConsumer(cluster.namesrv_addr, group, {kept: "*", given_up: "*"}, ignore,
                                 orderly=True, **FAST)
            await first.start()
            try:
                await eventually(lambda: len(first.assignment(kept)) == len(first.assignment(given_up)) == 2,
                                 20, "the first member to hold the 4 queues")
                await eventually(lambda: set(locks_of(given_up).values()) == {first.client_id}, 20,
                                 "the first member's broker locks")
                held.arm(first.client_id)
                renewal = asyncio.get_running_loop().create_task(first.lock_all())
                await eventually(lambda: held.captured, 20, "the broker to hold the renewal")
                # the queues of the topic are given up while the renewal is in flight
                first.unsubscribe(given_up)
                await first.rebalance()
                await renewal
                await eventually(lambda: not first.assignment(given_up), 20, "the queues given up")
                assert locks_of(given_up) == {}, "a queue given up is locked again by the renewal"
            finally:
                await first.shutdown()

            handled: list[bytes] = []

            async def take(messages: list[ConsumedMessage]) -> ConsumeStatus:
                handled.extend(m.body for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, group, {given_up: "*"}, take, orderly=True, **FAST):
                # the group's next member locks and consumes both queues (the broker keeps a stale lock 60 s)
                await eventually(lambda: sorted(handled) == sorted(bodies), 20,
                                 "the next member to consume the queues given up")

        run_within(go, 60)
