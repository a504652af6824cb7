"""Sends waiting on the broker's event loop for their records to become durable (SYNC_FLUSH).

RocketMQ's broker does not park a thread per sync-flush send: its put returns a future that the group
commit service completes once the flushed offset passes the record's end.  ``DurableWaits`` does the same
on the loop: the send's put runs on the loop without waiting (``MessageStore.put(wait_flush=False)`` asks
for the sync), and the send awaits a future here.  The store's syncing thread calls :meth:`_on_sync` after
every sync; at most one hop to the loop is pending at a time, and that hop completes every future whose
end the durable offset now covers.  So one group of sends costs one thread wake-up each way, not one per
send, and the number of sends waiting is bounded by the clients, not by a thread pool.

Loop-bound, except :meth:`_on_sync` (any thread).
"""

from __future__ import annotations

import asyncio
from collections import deque

from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

__all__ = ["DurableWaits"]


class DurableWaits:
    """Futures of sends waiting for ``store.durable_offset`` to reach their end offset, in put order."""

    def __init__(self, store: MessageStore, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self._store = store
        self._loop = loop
        self._timeout_s = timeout_s
        #: (end offset, deadline on the loop's clock, future), in the order the loop put them: ends and
        #: deadlines both grow along it
        self._waits: deque[tuple[int, float, asyncio.Future[PutMessageStatus]]] = deque()
        #: a hop to the loop is scheduled and has not started yet (set by the syncing thread, cleared by
        #: the loop before it reads the durable offset, so no sync can go unseen)
        self._hop_pending = False
        self._timer: asyncio.TimerHandle | None = None
        store.add_durable_listener(self._on_sync)

    def __len__(self) -> int:
        return len(self._waits)

    def wait(self, end_offset: int) -> asyncio.Future[PutMessageStatus]:
        """A future of PUT_OK once *end_offset* is durable, FLUSH_DISK_TIMEOUT after the store's
        syncFlushTimeout, UNKNOWN_ERROR if a sync failed.  Call it right after the put, on the loop."""
        future: asyncio.Future[PutMessageStatus] = self._loop.create_future()
        store = self._store
        if store.durable_offset >= end_offset:  # a sync already covered it (or ran before this wait)
            future.set_result(PutMessageStatus.PUT_OK)
            return future
        if store.flush_failed:
            future.set_result(self._failed_status())
            return future
        waits = self._waits
        deadline = self._loop.time() + self._timeout_s
        waits.append((end_offset, deadline, future))
        if self._timer is None:
            self._timer = self._loop.call_at(deadline, self._expire)
        return future

    def close(self) -> None:
        """Stop listening; answer whoever still waits as a stopped group commit would (a timeout)."""
        self._store.remove_durable_listener(self._on_sync)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._answer_all(PutMessageStatus.FLUSH_DISK_TIMEOUT)

    # --- the syncing thread ----------------------------------------------------------------------------

    def _on_sync(self) -> None:
        if self._hop_pending:
            return
        self._hop_pending = True
        try:
            self._loop.call_soon_threadsafe(self._release)
        except RuntimeError:  # the loop is closed: the broker is gone
            pass

    # --- the loop --------------------------------------------------------------------------------------

    def _release(self) -> None:
        self._hop_pending = False
        store = self._store
        durable = store.durable_offset
        waits = self._waits
        while waits and waits[0][0] <= durable:
            future = waits.popleft()[2]
            if not future.done():
                future.set_result(PutMessageStatus.PUT_OK)
        if waits and store.flush_failed:
            self._answer_all(self._failed_status())

    def _failed_status(self) -> PutMessageStatus:
        # as MessageStore.put answers a writer thread: a failed sync is an error, a stopped group commit a
        # timeout (the records may still reach the disk with the close's own flush)
        store = self._store
        return PutMessageStatus.FLUSH_DISK_TIMEOUT if store.fenced is None else PutMessageStatus.UNKNOWN_ERROR

    def _answer_all(self, status: PutMessageStatus) -> None:
        waits, self._waits = self._waits, deque()
        for _end, _deadline, future in waits:
            if not future.done():
                future.set_result(status)

    def _expire(self) -> None:
        self._timer = None
        self._release()  # a sync may have covered them just now
        waits = self._waits
        now = self._loop.time()
        while waits and waits[0][1] <= now:
            future = waits.popleft()[2]
            if not future.done():
                future.set_result(PutMessageStatus.FLUSH_DISK_TIMEOUT)
        if waits:
            self._timer = self._loop.call_at(waits[0][1], self._expire)
