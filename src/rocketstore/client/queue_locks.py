"""The broker-side locks of an orderly CLUSTERING push consumer's queues (4.9.3's RebalanceImpl.lock, lockAll
and unlock): LOCK_BATCH_MQ before a queue is consumed and every ``lock_renew_interval_s`` after,
UNLOCK_BATCH_MQ when it is given up.  Lock and unlock requests go one at a time (``_lock_requests``), so a
renewal cannot lock again a queue being given up.  :class:`QueueLocks` is
:class:`~rocketstore.client.push_consumer.PushConsumer`'s base class; the queues it locks are the consumer's
``process_queues``.  Loop-bound, as the consumer."""

from __future__ import annotations

import asyncio
import logging
import time

from rocketstore.client import group_requests
from rocketstore.client.group_consumer import GroupConsumer
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.route import MessageQueue
from rocketstore.errors import RocketStoreError

__all__ = ["LOCK_BATCH_TIMEOUT_S", "QueueLocks"]

# the push consumer's logger, as before the split: its lock failures are logged under the consumer's name
log = logging.getLogger("rocketstore.client.push_consumer")

#: the bound of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ: 4.9.3's RebalanceImpl gives both a fixed 1 s
LOCK_BATCH_TIMEOUT_S = 1.0


class QueueLocks(GroupConsumer):
    """The lock requests of a push consumer's queues (see the module's docstring); the subclass makes
    ``process_queues`` and ``_lock_requests``."""

    process_queues: dict[MessageQueue, ProcessQueue]
    #: this consumer's LOCK_BATCH_MQ and UNLOCK_BATCH_MQ go one at a time (see the PushConsumer's __init__)
    _lock_requests: asyncio.Lock

    async def _lock(self, mqs: list[MessageQueue]) -> tuple[set[MessageQueue], set[str]]:
        """LOCK_BATCH_MQ per broker; the granted queues (a failing broker grants nothing) and the names of the
        brokers that answered.  A queue whose unlock has begun is not asked for (see ``_lock_requests``)."""
        async with self._lock_requests:
            return await self._lock_now([mq for mq in mqs if not self._unlocking(mq)])

    def _unlocking(self, mq: MessageQueue) -> bool:
        pq = self.process_queues.get(mq)
        return pq is not None and pq.unlocking

    async def _lock_now(self, mqs: list[MessageQueue]) -> tuple[set[MessageQueue], set[str]]:
        granted: set[MessageQueue] = set()
        answered: set[str] = set()
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker_name, group in by_broker.items():
            addr = self._brokers.get(broker_name)
            if addr is None:
                continue
            # tried again every lock_renew_interval_s, and every RELOCK_WAIT_S by each orderly queue holding
            # messages: while the broker is down they fail as one run of the broker's (one line, not one a try)
            what = f"the lock of queues on {addr}"
            try:
                granted |= await group_requests.lock_queues(self.consumer.pool, addr, self.group, self.client_id,
                                                            group, LOCK_BATCH_TIMEOUT_S)
            except (RocketStoreError, OSError) as exc:
                self.failure_runs.failed(log, what, exc)
                continue
            self.failure_runs.worked(log, what)
            answered.add(broker_name)
        return granted, answered

    async def lock_all(self) -> None:
        """Renew the locks of every held queue (RebalanceImpl.lockAll).  A queue dropped but not let go yet
        (its handler is still busy) is renewed too, as in 4.9.3: were its lock to expire under that handler,
        the queue's new owner would start on it meanwhile.  A broker that did not answer changes nothing: its
        queues keep their lock until ``lock_max_live_s`` after the last granted one, as in 4.9.3 (the broker
        holds a lock twice as long), so one lost renewal does not pause them."""
        pqs = dict(self.process_queues)
        if not pqs:
            return
        granted, answered = await self._lock(list(pqs))
        now = time.monotonic()
        for mq, pq in pqs.items():
            if mq in granted and not pq.unlocking:
                pq.locked, pq.last_lock_s = True, now
                pq.wake()
            elif mq.broker_name in answered or pq.unlocking:
                pq.locked = False

    async def lock_one(self, pq: ProcessQueue) -> bool:
        if pq.mq in (await self._lock([pq.mq]))[0] and not pq.unlocking:
            pq.locked, pq.last_lock_s = True, time.monotonic()
            return True
        return False

    async def _unlock(self, mqs: list[MessageQueue]) -> None:
        """UNLOCK_BATCH_MQ per broker, once the lock request in flight (if any) is answered; renewals from
        now on leave these queues out."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
            pq = self.process_queues.get(mq)
            if pq is not None:
                pq.unlocking, pq.locked = True, False
        async with self._lock_requests:
            for broker_name, group in by_broker.items():
                addr = self._brokers.get(broker_name)
                if addr is not None:
                    await self.quietly(f"unlock on {addr}", group_requests.unlock_queues(
                        self.consumer.pool, addr, self.group, self.client_id, group, LOCK_BATCH_TIMEOUT_S))
