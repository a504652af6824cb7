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
        lock = threading.Lock()
        #: writers wait here for durability; the flusher waits on its own condition for requests, so a
        #: request wakes only the flusher, never the other waiting writers (measured +20-40 % at 64 writers)
        self._cond = threading.Condition(lock)
        self._work = threading.Condition(lock)
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
        with self._cond:
            if end_offset > self._requested:
                self._requested = end_offset
                self._work.notify()
            deadline = time.monotonic() + timeout_s
            while self.durable_offset < end_offset:
                if self.failed is not None or self._stopped:
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def request(self, end_offset: int) -> None:
        """Ask for a sync without waiting (a put with WAIT=false)."""
        with self._cond:
            if end_offset > self._requested:
                self._requested = end_offset
                self._work.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._requested <= self.durable_offset and not self._stopped:
                    self._work.wait()
                if self._stopped and self._requested <= self.durable_offset:
                    return
            try:
                durable = self._flush()
            except BaseException as exc:  # a failed fdatasync is final: fence, fail every waiter
                log.error("group commit: sync failed, fencing the store: %s", exc)
                with self._cond:
                    self.failed = exc
                    self._cond.notify_all()
                self._on_failure(exc)
                return
            with self._cond:
                self.durable_offset = max(self.durable_offset, durable)
                self._cond.notify_all()
            if self._on_durable is not None:
                self._on_durable()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            self._work.notify_all()
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
