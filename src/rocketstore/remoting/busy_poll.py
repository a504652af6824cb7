"""Busy polling: an event loop that goes on polling its sockets (epoll with a zero timeout) for a short
window after its last read or write, instead of going to sleep until the next one.

Why: a thread that sleeps in epoll_wait and is woken by a packet pays for the sleep on this machine class
(2-vCPU VMs): about 30 µs more kernel time per wake-up, and its next stretch of Python running several
times slower on cold caches (the broker's loop thread spent ~70 µs of user time per one-at-a-time send,
against ~21 µs warm in process).  A send one at a time is a round trip between two such sleepers, so the
wake-ups, not the work, set its rate: 4-5k sends/s, against 10-13k/s with both sides polling for 500 µs
(bench/HISTORY.md, session 8).

The price is CPU, and GIL time for the process's other threads.  A polling loop keeps its core busy for up
to the window after each burst of I/O; and it releases the GIL only for its brief epoll calls, so a thread
of the same process waiting for the GIL (a dispatch or flush thread, an executor) gets it late.  The
loop therefore naps once per millisecond of continuous polling (:data:`NAP_S`, releasing the GIL long
enough for a waiting thread to take it), and it holds still while a *blocker* says another thread's work
is what it waits for (the broker's sends waiting for a sync under SYNC_FLUSH: :meth:`BusyPoll.add_blocker`),
and it naps at once when a thread it knows of is due to run (the store's dispatch thread, after the 1 ms it
gathers records for: :meth:`BusyPoll.add_due`).
It is off unless asked for, as Linux's busy_poll is: the broker with ``busyPollMicros`` in broker.conf (or
``rocketstore serve --busy-poll-us``), a client's loop with :func:`enable`.  Worth it where latency is
worth a core; with more busy threads than cores it only takes CPU from the others.

Loop-bound: call everything on the loop's thread (:func:`enable` before the loop's connections are made;
a connection looks its loop's poller up once, when it is created).
"""

from __future__ import annotations

import asyncio
import sys
import time
import weakref
from collections.abc import Callable

__all__ = ["NAP_S", "BusyPoll", "enable", "of"]

#: after polling this long without a nap (CPython's switch interval, 5 ms, unless changed: what another
#: thread waits for the GIL behind any busy thread) the loop sleeps NAP_S once, long enough for a thread
#: waiting for the GIL to wake and take it (a polling loop re-takes it after each epoll, before the waiter
#: can); napping every 1 ms instead cost a third of the one-at-a-time rate
NAP_S = 0.0001

_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoll] = weakref.WeakKeyDictionary()


class BusyPoll:
    """Keeps *loop* polling for *window_s* after the last :meth:`kick` (a connection's read or write)."""

    __slots__ = ("_blockers", "_clock", "_dues", "_events", "_fair_s", "_last", "_loop", "_seen", "_since_nap",
                 "_sleep", "naps", "polling", "spins", "window_s")

    def __init__(self, loop: asyncio.AbstractEventLoop, window_s: float, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        if window_s <= 0:
            raise ValueError(f"busy-poll window must be positive, not {window_s}")
        self._loop = loop
        self.window_s = window_s
        self._clock = clock
        self._sleep = sleep
        self._fair_s = sys.getswitchinterval()
        self._blockers: list[Callable[[], bool]] = []
        self._dues: list[Callable[[], float]] = []
        #: kicks so far, and the count the last poll saw (a change means I/O happened since)
        self._events = 0
        self._seen = 0
        #: when the last I/O was seen, and when the loop last napped
        self._last = 0.0
        self._since_nap = 0.0
        #: whether a poll callback is scheduled; polls run so far (for tests and the bench's notes)
        self.polling = False
        self.spins = 0
        self.naps = 0

    def kick(self) -> None:
        """I/O happened: poll (again) for the window from now."""
        self._events += 1
        if not self.polling:
            self._start()

    def add_blocker(self, blocked: Callable[[], bool]) -> None:
        """Do not poll while ``blocked()`` is true (checked at every poll)."""
        self._blockers.append(blocked)

    def add_due(self, due_at: Callable[[], float]) -> None:
        """Nap at every poll from the time ``due_at()`` returns on (on the poller's clock, time.monotonic):
        another thread of the process wants the GIL from then (math.inf: it does not)."""
        self._dues.append(due_at)

    def _blocked(self) -> bool:
        for blocked in self._blockers:  # (a loop, not any() over a generator: this runs at every poll)
            if blocked():
                return True
        return False

    def _due(self, now: float) -> bool:
        for due_at in self._dues:
            if due_at() <= now:
                return True
        return False

    def _start(self) -> None:
        if self.window_s <= 0:
            return  # turned off (enable(loop, 0)) while connections still held it
        if self._blockers and self._blocked():
            return  # the next kick after the blocker clears (an answer written) starts it
        self.polling = True
        self._seen = self._events
        self._last = self._since_nap = self._clock()
        self._loop.call_soon(self._poll)

    def _poll(self) -> None:
        if self._blockers and self._blocked():
            self.polling = False
            return
        now = self._clock()
        if self._events != self._seen:
            self._seen = self._events
            self._last = now
        elif now - self._last >= self.window_s:
            self.polling = False
            return
        if now - self._since_nap >= self._fair_s or (self._dues and self._due(now)):
            self._sleep(NAP_S)
            self.naps += 1
            self._since_nap = self._clock()
        self.spins += 1
        # a ready callback makes the loop's next poll of its sockets use a zero timeout
        self._loop.call_soon(self._poll)


def enable(loop: asyncio.AbstractEventLoop, window_us: int) -> BusyPoll | None:
    """Make *loop* poll for *window_us* microseconds after each read or write of its connections
    (0: stop, the default).  Returns the loop's poller, None when off."""
    if window_us < 0:
        raise ValueError(f"busy-poll window must be >= 0 µs, not {window_us}")
    if window_us == 0:
        poller = _BY_LOOP.pop(loop, None)
        if poller is not None:
            poller.window_s = 0.0  # its connections still kick it: now a kick starts nothing
        return None
    poller = _BY_LOOP.get(loop)
    if poller is None:
        poller = _BY_LOOP[loop] = BusyPoll(loop, window_us / 1e6)
    else:
        poller.window_s = window_us / 1e6
    return poller


def of(loop: asyncio.AbstractEventLoop) -> BusyPoll | None:
    """*loop*'s poller, None when busy polling is off for it."""
    return _BY_LOOP.get(loop)
