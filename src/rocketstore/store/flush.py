"""Background durability: async flush on a timer, and group commit for sync flush.

* ``AsyncFlusher`` (RocketMQ's FlushRealTimeService + FlushConsumeQueueService): every interval it flushes
  the commitlog if enough pages are dirty, everything on the thorough interval, consume queues on their
  own schedule, and then the checkpoint.
* ``GroupCommit`` (RocketMQ's GroupCommitService): a put that must be durable waits until the flushed
  offset passes its end; all waiting puts share one fdatasync.  A failed sync fences the store: the waiters
  get an error and nothing later is acknowledged.

Thread-safety: each service owns one thread; ``GroupCommit.wait_durable`` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["AsyncFlusher", "GroupCommit"]

log = logging.getLogger(__name__)


class GroupCommit:
    def __init__(self, flush: Callable[[], int], on_failure: Callable[[BaseException], None],
                 on_durable: Callable[[], None] | None = None) -> None:
        """*flush* makes everything written durable and returns the durable end offset; *on_durable* is
        called (on the flusher thread) after the durable offset moved."""
        self._flush = flush
        self._on_durable = on_durable
        self._on_failure = on_failure
        self._lock = threading.Lock()
        #: the flusher waits here for requests; writers never wait on it
        self._work = threading.Condition(self._lock)
        #: (end offset, gate) of each waiting writer.  A writer sleeps on its own gate (a locked Lock) and
        #: the flusher releases the gates its sync covered: no woken writer has to re-take a shared lock,
        #: which with a Condition made 64 woken writers file through one lock after every sync.
        self._waiters: list[tuple[int, threading.Lock]] = []
        self._requested = 0
        self.durable_offset = 0
        self.failed: BaseException | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="rocketstore-group-commit", daemon=True)

    def start(self, durable_offset: int) -> None:
        self.durable_offset = durable_offset
        self._thread.start()

    def wait_durable(self, end_offset: int, timeout_s: float) -> bool:
        """True once *end_offset* is durable; False on timeout or after a failed sync."""
        if self.durable_offset >= end_offset:
            return True
        gate = threading.Lock()
        gate.acquire()
        waiter = (end_offset, gate)
        with self._lock:
            if self.durable_offset >= end_offset:
                return True
            if self.failed is not None or self._stopped:
                return False
            self._waiters.append(waiter)
            if end_offset > self._requested:
                self._requested = end_offset
                self._work.notify()
        if not gate.acquire(True, timeout_s):
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return self.durable_offset >= end_offset

    def request(self, end_offset: int) -> None:
        """Ask for a sync without waiting (a put with WAIT=false)."""
        with self._lock:
            if end_offset > self._requested:
                self._requested = end_offset
                self._work.notify()

    def _release(self, durable: int | None) -> None:
        """Open the gates of the writers *durable* covers (all of them when None).  Holds the lock."""
        waiters = self._waiters
        if durable is None:
            ready, self._waiters = waiters, []
        else:
            ready = [w for w in waiters if w[0] <= durable]
            if len(ready) == len(waiters):
                self._waiters = []
            elif ready:
                self._waiters = [w for w in waiters if w[0] > durable]
        for _, gate in ready:
            gate.release()

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._requested <= self.durable_offset and not self._stopped:
                    self._work.wait()
                if self._stopped and self._requested <= self.durable_offset:
                    self._release(None)
                    return
            try:
                durable = self._flush()
            except BaseException as exc:  # a failed fdatasync is final: fence, fail every waiter
                log.error("group commit: sync failed, fencing the store: %s", exc)
                with self._lock:
                    self.failed = exc
                    self._release(None)
                self._on_failure(exc)
                return
            with self._lock:
                self.durable_offset = max(self.durable_offset, durable)
                self._release(self.durable_offset)
            if self._on_durable is not None:
                self._on_durable()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._work.notify_all()
            self._release(None)
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
