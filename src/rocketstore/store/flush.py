"""Background durability: async flush on a timer, and group commit for sync flush.

* ``AsyncFlusher`` (RocketMQ's FlushRealTimeService + FlushConsumeQueueService): every interval it flushes
  the commitlog if enough pages are dirty, everything on the thorough interval, consume queues on their
  own schedule, and then the checkpoint.
* ``GroupCommit`` (RocketMQ's GroupCommitService): a put that must be durable waits until the flushed
  offset passes its end; all waiting puts share one fdatasync.  A failed sync fences the store: the waiters
  get an error and nothing later is acknowledged.

Thread-safety: each service owns one thread; ``GroupCommit.wait_durable`` and ``request`` may be called
from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["AsyncFlusher", "GroupCommit"]

log = logging.getLogger(__name__)

#: At most this long between two hand-overs of newly durable records to ``on_durable`` (the dispatcher)
#: while syncs follow each other, and the longest an idle group commit keeps them before handing them
#: over.  Each wake-up of the dispatcher costs the writers the GIL for a fixed ~20 µs plus ~3 µs a record,
#: so one wake-up per sync (one record per sync with one writer) cost more than the dispatch itself;
#: RocketMQ's ReputMessageService polls on the same 1 ms period.
HAND_OVER_S = 0.001


class GroupCommit:
    """One flusher thread syncs the commitlog for the writers waiting on it, in groups.

    Hand-offs between threads are what a sync put costs besides the fdatasync (each wake-up of a thread
    that then has to win the GIL costs tens of µs on a loaded machine), so the protocol keeps them few:

    * the flusher sleeps on a plain locked Lock and only a writer that finds it idle releases it;
    * the writers a sync covered are released in a chain, oldest first: the flusher opens the first
      gate and each woken writer opens the next one.  Releasing them all at once woke every one of them
      only to queue for the GIL (and for each other) a second time, and the order in which they then won
      it was arbitrary, which is what made the p99 at 64 writers several times the p50;
    * the dispatcher is told about durable records just before the next sync starts, so that it works
      while this thread waits on the disk, at most every ``HAND_OVER_S``, and otherwise after
      ``HAND_OVER_S`` of idleness.

    Durability: a writer's gate opens only after a sync that started after its record was in place
    returned, and ``durable_offset`` only moves to the end offset read before that sync started.  The
    sync runs on this thread, never on a writer, so ``wait_durable`` keeps its timeout even when the
    disk stalls.
    """

    def __init__(self, flush: Callable[[], int], on_failure: Callable[[BaseException], None],
                 on_durable: Callable[[], None] | None = None) -> None:
        """*flush* makes everything written durable and returns the durable end offset (read before it
        synced); *on_durable* is called on the flusher thread after the durable offset moved."""
        self._flush = flush
        self._on_durable = on_durable
        self._on_failure = on_failure
        self._lock = threading.Lock()
        #: the flusher sleeps on this (held) Lock while ``_idle``; a writer that registers an end past the
        #: requested one while the flusher is idle releases it (one wake-up, no Condition bookkeeping)
        self._wake = threading.Lock()
        self._wake.acquire()
        self._idle = False
        #: waiting writers, oldest first, each ``[end_offset, gate, next_gate]``: *gate* is a held Lock the
        #: writer sleeps on; *next_gate* is the gate it opens once woken (set when a sync covered both)
        self._waiters: list[list[Any]] = []
        self._requested = 0
        self.durable_offset = 0
        self._handed_over = 0  # the durable offset on_durable was last called for
        self._handed_over_at = 0.0
        self.failed: BaseException | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="rocketstore-group-commit", daemon=True)

    def start(self, durable_offset: int) -> None:
        self.durable_offset = self._handed_over = self._requested = durable_offset
        self._thread.start()

    def _wake_flusher(self) -> None:
        try:
            self._wake.release()
        except RuntimeError:
            pass  # released already: one wake-up is enough

    def wait_durable(self, end_offset: int, timeout_s: float) -> bool:
        """True once *end_offset* is durable; False on timeout or after a failed sync."""
        if self.durable_offset >= end_offset:
            return True
        gate = threading.Lock()
        gate.acquire()
        waiter: list[Any] = [end_offset, gate, None]
        with self._lock:
            if self.durable_offset >= end_offset:
                return True
            if self.failed is not None or self._stopped:
                return False
            self._waiters.append(waiter)
            self._requested = max(self._requested, end_offset)
            idle = self._idle
        if idle:
            self._wake_flusher()
        woken = False
        try:
            woken = gate.acquire(True, timeout_s)
        finally:
            if woken:
                nxt = waiter[2]
            else:  # timed out (or interrupted): leave the queue, or pass the chain on if a sync took us out
                with self._lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
                        nxt = None
                    else:
                        nxt = waiter[2]
            if nxt is not None:
                nxt.release()
        return self.durable_offset >= end_offset

    def request(self, end_offset: int) -> None:
        """Ask for a sync without waiting (a put with WAIT=false)."""
        with self._lock:
            if end_offset <= self._requested:
                return
            self._requested = end_offset
            idle = self._idle
        if idle:
            self._wake_flusher()

    def _release_covered(self, durable: int) -> None:
        """Take the writers *durable* covers out of the queue and start their chain.  Holds the lock."""
        waiters = self._waiters
        ready = [w for w in waiters if w[0] <= durable]
        if not ready:
            return
        # (ends are not in queue order: a writer can register before one that appended ahead of it)
        self._waiters = [] if len(ready) == len(waiters) else [w for w in waiters if w[0] > durable]
        for i in range(len(ready) - 1):
            ready[i][2] = ready[i + 1][1]
        ready[0][1].release()

    def _release_all(self) -> None:
        """Open every gate at once (stop, failed sync).  Holds the lock."""
        ready, self._waiters = self._waiters, []
        for waiter in ready:
            waiter[1].release()

    def _hand_over(self) -> None:
        durable = self.durable_offset
        if durable > self._handed_over:
            self._handed_over = durable
            self._handed_over_at = time.monotonic()
            if self._on_durable is not None:
                self._on_durable()

    def _run(self) -> None:
        lock = self._lock
        wake = self._wake
        while True:
            with lock:
                pending = self._requested > self.durable_offset
                self._idle = not pending
                if not pending and self._stopped:
                    self._release_all()
                    break
            if not pending:
                if self._handed_over < self.durable_offset:
                    if not wake.acquire(True, HAND_OVER_S):
                        self._hand_over()  # nothing followed the last sync: the dispatcher gets it now
                else:
                    wake.acquire()
                continue
            if self._handed_over < self.durable_offset and time.monotonic() - self._handed_over_at >= HAND_OVER_S:
                self._hand_over()  # the dispatcher works while this thread waits on the disk
            try:
                durable = self._flush()
            except BaseException as exc:  # a failed fdatasync is final: fence, fail every waiter
                log.error("group commit: sync failed, fencing the store: %s", exc)
                with lock:
                    self.failed = exc
                    self._release_all()
                self._on_failure(exc)
                return
            with lock:
                self.durable_offset = max(self.durable_offset, durable)
                if self._waiters:
                    self._release_covered(self.durable_offset)
        self._hand_over()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._release_all()
        self._wake_flusher()
        if self._thread.is_alive():
            self._thread.join()


class AsyncFlusher:
    def __init__(self, *, interval_s: float, commit_log_step: Callable[[bool], None],
                 queues_step: Callable[[bool], None], thorough_commit_log_s: float, queues_interval_s: float,
                 thorough_queues_s: float, on_failure: Callable[[BaseException], None]) -> None:
        self._interval_s = interval_s
        self._commit_log_step = commit_log_step
        self._queues_step = queues_step
        self._thorough_commit_log_s = thorough_commit_log_s
        self._queues_interval_s = queues_interval_s
        self._thorough_queues_s = thorough_queues_s
        self._on_failure = on_failure
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rocketstore-flush", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        now = time.monotonic()
        last_thorough = last_queues = last_queues_thorough = now
        while not self._stop.wait(self._interval_s):
            now = time.monotonic()
            try:
                thorough = now - last_thorough >= self._thorough_commit_log_s
                if thorough:
                    last_thorough = now
                self._commit_log_step(thorough)
                if now - last_queues >= self._queues_interval_s:
                    last_queues = now
                    queues_thorough = now - last_queues_thorough >= self._thorough_queues_s
                    if queues_thorough:
                        last_queues_thorough = now
                    self._queues_step(queues_thorough)
            except OSError as exc:
                log.error("flush failed, fencing the store: %s", exc)
                self._on_failure(exc)
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
