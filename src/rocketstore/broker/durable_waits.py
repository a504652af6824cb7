"""Sends waiting on the broker's event loop for their records to become durable (SYNC_FLUSH).

RocketMQ's broker does not park a thread per sync-flush send: its put returns a future that the group
commit service completes once the flushed offset passes the record's end.  ``DurableWaits`` does the same
on the loop: the send's put runs on the loop without waiting (``MessageStore.put(flush="later")``), and its
answer waits here (a callback, or a future for a coroutine).  The sync is asked for once per loop
iteration, after every request read in it was put, as Redis syncs its AOF once per event-loop pass before
it replies: asked for at the first put, a sync would start with that one record and leave the other
sends read with it to the next.  The store's syncing thread calls :meth:`_on_sync` after every sync; at
most one hop to the loop is pending at a time, and that hop answers every send whose end the durable
offset now covers.  So one group of sends costs one thread wake-up each way, not one per
send, and the number of sends waiting is bounded by the clients, not by a thread pool.

Each send's deadline is its put's time plus the syncFlushTimeout in force then (4.9.3 reads it at every put):
:meth:`set_timeout` takes a new one for the sends that come after, those waiting keep theirs.

Loop-bound, except :meth:`_on_sync` (any thread).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable

from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

__all__ = ["DurableWaits"]

#: called once, on the loop, with PUT_OK, FLUSH_DISK_TIMEOUT or UNKNOWN_ERROR
Done = Callable[[PutMessageStatus], None]


def _settle(future: asyncio.Future[PutMessageStatus], status: PutMessageStatus) -> None:
    if not future.done():  # (cancelled: its send was abandoned)
        future.set_result(status)


class DurableWaits:
    """Sends waiting for ``store.durable_offset`` to reach their end offset, in put order: a callback
    each (:meth:`add`), or a future (:meth:`wait`)."""

    def __init__(self, store: MessageStore, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self._store = store
        self._loop = loop
        self._timeout_s = timeout_s
        #: (end offset, deadline on the loop's clock, done), in the order the loop put them: ends grow along
        #: it, and deadlines too while :attr:`_ordered`
        self._waits: deque[tuple[int, float, Done]] = deque()
        #: False once the timeout was shortened while the timer ran: a later send's deadline may then come
        #: before an earlier one's (or the timer's), and :meth:`_expire` looks at every wait (until none is
        #: left)
        self._ordered = True
        #: a hop to the loop is scheduled and has not started yet (set by the syncing thread, cleared by
        #: the loop before it reads the durable offset, so no sync can go unseen)
        self._hop_pending = False
        #: the expiry timer and the deadline it is set for (kept here: for a delay under 0.5 ms uvloop's
        #: call_at gives a plain Handle, which has no when())
        self._timer: asyncio.Handle | None = None
        self._timer_at = 0.0
        #: the end to ask the group commit for at the end of this loop iteration, and whether that is
        #: scheduled
        self._ask_end = 0
        self._ask_scheduled = False
        store.add_durable_listener(self._on_sync)

    def __len__(self) -> int:
        return len(self._waits)

    def wait(self, end_offset: int) -> asyncio.Future[PutMessageStatus]:
        """:meth:`add` as a future of the status."""
        future: asyncio.Future[PutMessageStatus] = self._loop.create_future()
        self.add(end_offset, functools.partial(_settle, future))
        return future

    def add(self, end_offset: int, done: Done) -> None:
        """Call ``done(PUT_OK)`` once *end_offset* is durable, ``done(FLUSH_DISK_TIMEOUT)`` after the
        store's syncFlushTimeout, ``done(UNKNOWN_ERROR)`` if a sync failed: on the loop, at once when that
        is known already.  Call it right after the put, on the loop."""
        store = self._store
        if store.durable_offset >= end_offset:  # a sync already covered it (or ran before this wait)
            done(PutMessageStatus.PUT_OK)
            return
        if store.flush_failed:
            done(self._failed_status())
            return
        waits = self._waits
        deadline = self._loop.time() + self._timeout_s
        waits.append((end_offset, deadline, done))
        timer = self._timer
        if timer is None:  # nobody else waits (a wait always has the timer set)
            self._ordered = True
            self._arm(deadline)
        elif not self._ordered and deadline < self._timer_at:  # a shortened timeout: due before the others
            timer.cancel()
            self._arm(deadline)
        self.ask_sync(end_offset)

    def set_timeout(self, timeout_s: float) -> None:
        """syncFlushTimeout for the sends that wait from now on (UPDATE_BROKER_CONFIG); the waiting ones
        keep the deadline their put had, as 4.9.3's futures each wait the timeout read at their put."""
        if timeout_s < self._timeout_s and self._timer is not None:
            # sends wait, or waited (the timer then still runs for the longer deadline of one answered): the
            # next deadlines may come first
            self._ordered = False
        self._timeout_s = timeout_s

    def ask_sync(self, end_offset: int) -> None:
        """Ask the group commit for a sync up to *end_offset* at the end of this loop iteration (a put
        made with ``flush="later"`` whose sender does not wait needs this too)."""
        self._ask_end = max(self._ask_end, end_offset)
        if not self._ask_scheduled:
            self._ask_scheduled = True
            self._loop.call_soon(self._ask)

    def _ask(self) -> None:
        self._ask_scheduled = False
        self._store.request_flush(self._ask_end)

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
        ok = PutMessageStatus.PUT_OK
        while waits and waits[0][0] <= durable:
            waits.popleft()[2](ok)
        if waits and store.flush_failed:
            self._answer_all(self._failed_status())

    def _failed_status(self) -> PutMessageStatus:
        # as MessageStore.put answers a writer thread: a failed sync is an error, a stopped group commit a
        # timeout (the records may still reach the disk with the close's own flush)
        store = self._store
        return PutMessageStatus.FLUSH_DISK_TIMEOUT if store.fenced is None else PutMessageStatus.UNKNOWN_ERROR

    def _answer_all(self, status: PutMessageStatus) -> None:
        waits, self._waits = self._waits, deque()
        for _end, _deadline, done in waits:
            done(status)

    def _expire(self) -> None:
        self._timer = None
        self._release()  # a sync may have covered them just now
        waits = self._waits
        now = self._loop.time()
        timeout = PutMessageStatus.FLUSH_DISK_TIMEOUT
        if self._ordered:
            while waits and waits[0][1] <= now:
                waits.popleft()[2](timeout)
            if waits:
                self._arm(waits[0][1])
            return
        # deadlines out of put order (see set_timeout): the expired ones wherever they are, in put order
        expired = [wait for wait in waits if wait[1] <= now]
        if expired:
            self._waits = waits = deque(wait for wait in waits if wait[1] > now)
            for _end, _deadline, done in expired:
                done(timeout)
        if waits and self._timer is None:
            self._arm(min(wait[1] for wait in waits))

    def _arm(self, deadline: float) -> None:
        self._timer = self._loop.call_at(deadline, self._expire)
        self._timer_at = deadline
