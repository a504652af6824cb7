"""The messages of one assigned queue between pull and acknowledgement (RocketMQ's ProcessQueue).

Pulled messages go in by ascending queue offset and leave when their handler is done with them, in any
order when consuming concurrently.  The offset a consumer may commit is the smallest offset still held
(or one past the largest ever held once empty), so a crash loses no unhandled message and re-delivers at
most the ones after it.  Orderly consumption takes messages out in order into a "consuming" set and
either commits them (the offset moves past the batch) or puts them back to be consumed again.

Loop-bound; not thread-safe.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.route import MessageQueue

__all__ = ["ProcessQueue", "wait_event"]


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait until *event* is set, at most *timeout_s*; True if it was set.  ``asyncio.timeout`` rather
    than ``wait_for``: on 3.11 the latter can swallow a cancellation that races with the event."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
        return True
    except TimeoutError:
        return False


class ProcessQueue:
    def __init__(self, mq: MessageQueue) -> None:
        self.mq = mq
        #: offset -> message; keys are inserted in ascending order, so the first key is the smallest
        self.messages: dict[int, ConsumedMessage] = {}
        #: orderly: taken for consumption, neither committed nor put back yet
        self.consuming: dict[int, ConsumedMessage] = {}
        self.body_bytes = 0
        self.queue_offset_max = -1
        #: no longer ours (rebalanced away): results of in-flight handlers are ignored
        self.dropped = False
        #: orderly clustering: the broker lock is held, renewed at ``last_lock_s`` (the queue's creation until
        #: then, as 4.9.3's lastLockTimestamp, which consumerStatus shows)
        self.locked = False
        self.last_lock_s = time.monotonic()
        #: orderly clustering: its broker lock is being given up (the queue leaves): no renewal may take it
        #: again, or the broker would keep it for this consumer after the unlock
        self.unlocking = False
        #: orderly clustering: times a rebalance could not let it go because its handler was busy (4.9.3's
        #: tryUnlockTimes, shown by consumerStatus)
        self.try_unlock_times = 0
        #: orderly: the pull offset was re-read from the store once the lock was first held
        self.previously_locked = False
        self.last_pull_s = time.monotonic()
        #: when handled messages last left the queue (monotonic; the queue's creation at first)
        self.last_consume_s = self.last_pull_s
        #: held while an orderly batch is being handled, so a rebalance can wait for it before unlocking
        self.consume_lock = asyncio.Lock()
        #: concurrently: offset -> when its handler last began (monotonic), for the consume timeout
        self.consume_started: dict[int, float] = {}
        self._arrived = asyncio.Event()
        self._freed = asyncio.Event()

    # --- counts ------------------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self.messages) + len(self.consuming)

    @property
    def max_span(self) -> int:
        """Offset distance between the oldest and the newest held message (concurrent flow control)."""
        if not self.messages:
            return 0
        return next(reversed(self.messages)) - next(iter(self.messages))

    def pull_expired(self, max_idle_s: float) -> bool:
        """The pull loop has not come round for *max_idle_s* (it stamps ``last_pull_s`` every turn, flow
        control included): it is stuck or gone."""
        return time.monotonic() - self.last_pull_s > max_idle_s

    def lock_expired(self, max_live_s: float) -> bool:
        return time.monotonic() - self.last_lock_s > max_live_s

    # --- in and out ---------------------------------------------------------------------------------------

    def put(self, messages: Iterable[ConsumedMessage]) -> list[ConsumedMessage]:
        """Add pulled messages; returns those that were new (a re-pulled offset is not added twice)."""
        added = []
        for m in messages:
            if m.queue_offset in self.messages or m.queue_offset in self.consuming:
                continue
            if m.queue_offset < self.queue_offset_max:
                # only an orderly put-back inserts below the top; keep the ascending key order
                self.messages[m.queue_offset] = m
                self.messages = dict(sorted(self.messages.items()))
            else:
                self.messages[m.queue_offset] = m
            self.queue_offset_max = max(self.queue_offset_max, m.queue_offset)
            self.body_bytes += len(m.body)
            added.append(m)
        if added:
            self._arrived.set()
        return added

    def passed(self, queue_offset: int) -> None:
        """*queue_offset* was pulled but is not held (its message was skipped as undecodable): once the
        messages held now are handled, the offset to commit goes past it."""
        self.queue_offset_max = max(self.queue_offset_max, queue_offset)

    def remove(self, messages: Iterable[ConsumedMessage]) -> int:
        """Drop handled messages; the offset to commit now, or -1 if nothing was held."""
        if not self.messages:
            return -1
        for m in messages:
            if self.messages.pop(m.queue_offset, None) is not None:
                self.body_bytes -= len(m.body)
                self.consume_started.pop(m.queue_offset, None)
        self.last_consume_s = time.monotonic()
        self._freed.set()
        return next(iter(self.messages)) if self.messages else self.queue_offset_max + 1

    def take(self, max_count: int) -> list[ConsumedMessage]:
        """Orderly: the next *max_count* messages in offset order, moved to the consuming set."""
        taken = []
        for offset in list(self.messages)[:max_count]:
            m = self.messages.pop(offset)
            self.consuming[offset] = m
            taken.append(m)
        if not self.messages:
            self._arrived.clear()
        return taken

    def commit(self) -> int:
        """Orderly: the consuming batch is done; the offset after it, or -1 if there was none."""
        if not self.consuming:
            return -1
        if self.messages:
            # everything below the first message held is done or was passed (skipped, see passed()); it may
            # lie below the batch (a message put back: batches over the DLQ limit)
            offset = next(iter(self.messages))
        else:  # past the batch, and past the offsets passed after it
            offset = max(max(self.consuming), self.queue_offset_max) + 1
        self.body_bytes -= sum(len(m.body) for m in self.consuming.values())
        self.consuming.clear()
        self.last_consume_s = time.monotonic()
        self._freed.set()
        return offset

    def rollback(self) -> None:
        """Orderly: everything consumed but not committed goes back, to be consumed again as it was."""
        self.put_back(list(self.consuming.values()))

    def put_back(self, messages: Iterable[ConsumedMessage]) -> None:
        """Orderly: consume these (updated) messages again, before anything newer."""
        again = {m.queue_offset: m for m in messages if self.consuming.pop(m.queue_offset, None) is not None}
        self.messages = dict(sorted({**self.messages, **again}.items()))
        if self.messages:
            self._arrived.set()

    # --- waiting ------------------------------------------------------------------------------------------

    async def wait_arrived(self, timeout_s: float) -> None:
        """Until a message is held (now or later), at most *timeout_s*."""
        if self.messages:
            return
        self._arrived.clear()
        await wait_event(self._arrived, timeout_s)

    async def wait_freed(self, timeout_s: float) -> None:
        """Until some message leaves, at most *timeout_s* (flow control)."""
        self._freed.clear()
        await wait_event(self._freed, timeout_s)

    def wake(self) -> None:
        """Wake whoever waits (drop, shutdown, lock gained)."""
        self._arrived.set()
        self._freed.set()
