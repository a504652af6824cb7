"""Long polling of pulls (RocketMQ's PullRequestHoldService), on the event loop.

A pull that found nothing waits here, keyed by (topic, queue id), until a message for that queue with a
logical offset >= the request's offset is dispatched (and passes the tag filter, and for an SQL92 pull the
property filter, which is asked about the arrived message's queue offset), or a periodic check finds the
queue grown (it wakes every waiter: 4.9.3 has no properties to test there either), or its timeout passes.
The store's dispatch listener runs on the dispatch thread: it only tests a dict for the key and hops to the
loop with ``call_soon_threadsafe``.

A pull whose timeout is 0 or less (or whose deadline wraps past 2^63-1) is, as in 4.9.3, out of time but
still parked: the next look at its queue answers it, a wake-up (a message it wants: with it) or the periodic
check (nothing: at most 5 s on).  Answered at once instead, a client sending such a timeout re-pulled in a
tight loop.

Race-free parking: the waiter is entered in the dict *before* the queue's max offset is read again, and
the dispatcher appends to the consume queue *before* it calls the listener, so either the re-read sees
the new message or the listener sees the waiter.

Thread-safety: everything but :meth:`on_dispatch` belongs to the loop.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

from rocketstore.errors import RocketStoreError

__all__ = ["PullHold"]

#: RocketMQ's hold service re-checks parked pulls every 5 s when long polling
CHECK_INTERVAL_S = 5.0

#: Parked pulls time out on one shared timer, in ticks of this many per second (a pull is answered up to
#: 1/20 s after its suspend time; 4.9.3's hold service looks every 5 s): no timer handle per parked pull
_TICKS_PER_S = 20


def _int32(code: int) -> int:
    return ((code + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@dataclass(slots=True, eq=False)
class _Waiter:
    """One parked pull; compared and hashed by identity (a queue's waiters are a dict keyed by them, so one
    leaves in O(1) however many park on that queue)."""
    queue_offset: int
    codes: frozenset[int] | None
    future: asyncio.Future[bool]
    match: Callable[[int], bool] | None = None
    #: its time is up already (a timeout <= 0): the next look at its queue answers it, whatever it finds
    expired: bool = False
    #: the shared timer's tick it times out at (0: none)
    tick: int = 0


class PullHold:
    def __init__(self, max_offset: Callable[[str, int], int], *, check_interval_s: float = CHECK_INTERVAL_S) -> None:
        self._loop = asyncio.get_running_loop()
        self._max_offset = max_offset
        #: (topic, queue id) -> its parked pulls, in arrival order (a dict as an ordered set)
        self._waiters: dict[tuple[str, int], dict[_Waiter, None]] = {}
        self.check_interval_s = check_interval_s
        self._task: asyncio.Task[None] | None = None
        #: tick -> the pulls timing out then; the ticks in a heap, the timer set for the first
        self._ticks: dict[int, dict[_Waiter, None]] = {}
        self._tick_heap: list[int] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_tick = 0

    def start(self) -> None:
        self._task = self._loop.create_task(self._check_loop())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for waiters in self._waiters.values():
            for w in waiters:
                if not w.future.done():
                    w.future.set_result(False)
        self._waiters.clear()

    @property
    def waiting_count(self) -> int:
        return sum(len(w) for w in self._waiters.values())

    def waiting(self, topic: str) -> dict[int, list[int]]:
        """queue id -> offsets of the pulls parked on *topic* (for admin views and tests)."""
        return {q: sorted(w.queue_offset for w in ws) for (t, q), ws in list(self._waiters.items()) if t == topic}

    async def wait(self, topic: str, queue_id: int, queue_offset: int, codes: frozenset[int] | None,
                   timeout_s: float, *, match: Callable[[int], bool] | None = None) -> bool:
        """Park until a message at or after *queue_offset* may be there (True) or *timeout_s* passes (False).
        *match(queue_offset)*: whether the message dispatched at that offset is one the pull wants."""
        key = (topic, queue_id)
        waiter = _Waiter(queue_offset, codes, self._loop.create_future(), match, timeout_s <= 0)
        self._waiters.setdefault(key, {})[waiter] = None
        try:
            if self._max_offset(topic, queue_id) > queue_offset:
                return True
            # 4.9.3 checks a parked pull's time only when it looks at the queue (a message dispatched to it,
            # the periodic check): one already out of time waits for that look; the others time out on the
            # shared timer, which answers False
            if not waiter.expired:
                self._time_out_at(waiter, timeout_s)
            return await waiter.future
        finally:
            if waiter.tick:
                bucket = self._ticks.get(waiter.tick)
                if bucket is not None:
                    # (an emptied bucket stays until the timer passes its tick: dropped here, a pull parking
                    # in the same tick would push the tick on the heap again, once per park and wake-up)
                    bucket.pop(waiter, None)
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.pop(waiter, None)
                if not waiters:
                    del self._waiters[key]

    def _time_out_at(self, waiter: _Waiter, timeout_s: float) -> None:
        tick = math.ceil((self._loop.time() + timeout_s) * _TICKS_PER_S)
        waiter.tick = tick
        bucket = self._ticks.get(tick)
        if bucket is None:
            bucket = self._ticks[tick] = {}
            heapq.heappush(self._tick_heap, tick)
            if self._timer is None or tick < self._timer_tick:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer_tick = tick
                self._timer = self._loop.call_at(tick / _TICKS_PER_S, self._expire)
        bucket[waiter] = None

    def _expire(self) -> None:
        """The shared timer: the pulls whose time has come are answered (False), the timer set for the next."""
        self._timer = None
        now_tick = self._loop.time() * _TICKS_PER_S
        heap = self._tick_heap
        while heap and heap[0] <= now_tick:
            bucket = self._ticks.pop(heapq.heappop(heap), None)
            if bucket:
                for w in bucket:
                    if not w.future.done():
                        w.future.set_result(False)
        if heap:
            self._timer_tick = heap[0]
            self._timer = self._loop.call_at(heap[0] / _TICKS_PER_S, self._expire)

    # --- wake-ups -------------------------------------------------------------------------------------

    def on_dispatch(self, topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int) -> None:
        """Store dispatch listener (dispatch thread): hop to the loop only when someone waits."""
        if (topic, queue_id) in self._waiters:
            try:
                self._loop.call_soon_threadsafe(self._wake, topic, queue_id, next_offset, tags_code)
            except RuntimeError:  # the loop is closed: the broker is shutting down
                pass

    def _wake(self, topic: str, queue_id: int, next_offset: int, tags_code: int | None) -> None:
        waiters = self._waiters.get((topic, queue_id))
        if not waiters:
            return
        code = None if tags_code is None else _int32(tags_code)
        for w in waiters:
            if w.future.done():
                continue
            if next_offset <= w.queue_offset \
                    or (code is not None and w.codes is not None and code not in w.codes) \
                    or (code is not None and w.match is not None
                        and not self._arrival_matches(w.match, next_offset - 1)):
                if w.expired:
                    w.future.set_result(False)  # looked at, out of time: answered with what there is
                continue
            w.future.set_result(True)

    @staticmethod
    def _arrival_matches(match: Callable[[int], bool], queue_offset: int) -> bool:
        try:
            return match(queue_offset)
        except RocketStoreError:  # e.g. the store is closing: wake the pull, which then finds out
            return True

    async def _check_loop(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval_s)
            for (topic, queue_id) in list(self._waiters):
                max_offset = self._max_offset(topic, queue_id)
                self._wake(topic, queue_id, max_offset, None)
