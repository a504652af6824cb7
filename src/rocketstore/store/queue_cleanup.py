"""Dropping whole consume queues: RocketMQ 4.9.3's DefaultMessageStore.cleanUnusedTopic and
cleanExpiredConsumerQueue, which the broker runs on CLEAN_UNUSED_TOPIC (316) and CLEAN_EXPIRED_CONSUMEQUEUE
(306).

What goes, as 4.9.3 decides it:

* unused: every queue of a topic the caller's set of live topics (the broker's topic table) does not
  name, except SCHEDULE_TOPIC_XXXX, RMQ_SYS_TRANS_OP_HALF_TOPIC and LMQ (``%LMQ%``) topics, which 4.9.3
  never treats as unused.  Retry and DLQ topics are no exception: they stay only while the topic table has
  them (a broker creates them there when a group first needs them).
* expired: every queue (SCHEDULE_TOPIC_XXXX's excepted) whose newest entry points before the commitlog's
  first byte, so that retention has deleted every message it indexes.  A queue whose newest segment has no
  entry yet stays (4.9.3 logs it as just created).

For each queue dropped: its files and directory are deleted, it leaves the queue table, and the commitlog
forgets its next queue offset, so a message sent to it later starts a new queue at queue offset 0 (as in
4.9.3).  Consumer offsets are the broker's and are left alone, as 4.9.3 leaves them.

Safety against the store's threads, which 4.9.3 does not attempt: the queues are dropped holding the
commitlog's writer lock (no put can take a queue offset meanwhile), after dispatch has caught up with
everything written (no record of a dropped queue is still on its way to it) and under the dispatcher's
lock (it cannot create or write a queue meanwhile) and :attr:`StoreThreads.queue_files_lock` (no flush or
retention pass is working on a queue's files).  A reader still holding a dropped queue finds no entries.
The writer lock is held only for the final check, the last few records' dispatch and the deletions: waiting
for dispatch happens outside it, retried until a deadline when puts keep dispatch behind, and a backlog
larger than :data:`DISPATCH_UNDER_LOCK_BYTES` is never dispatched under it (that took puts' lock for
seconds, answering them OS_PAGECACHE_BUSY, when dispatch had fallen far behind).

Imports store pieces, never the facade.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Container
from typing import TypeVar

from rocketstore.errors import StoreClosedError, StoreError
from rocketstore.store.background import StoreThreads
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import ConsumeQueue, ConsumeQueueTable
from rocketstore.store.dispatch import SCHEDULE_TOPIC, Dispatcher

__all__ = ["DISPATCH_UNDER_LOCK_BYTES", "KEPT_TOPICS", "LMQ_TOPIC_PREFIX", "QueueDropper", "is_expired", "is_unused"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the most commitlog bytes :meth:`QueueDropper.drop` dispatches while it holds the writer lock (~10k records
#: of 100 B: some 50 ms of dispatch); a larger backlog is left to the dispatch thread and looked at again
DISPATCH_UNDER_LOCK_BYTES = 1 << 20

#: topics whose queues cleanUnusedTopic keeps whatever the topic table says
KEPT_TOPICS = frozenset({SCHEDULE_TOPIC, "RMQ_SYS_TRANS_OP_HALF_TOPIC"})
LMQ_TOPIC_PREFIX = "%LMQ%"


def is_unused(cq: ConsumeQueue, live_topics: Container[str]) -> bool:
    topic = cq.topic
    return topic not in live_topics and topic not in KEPT_TOPICS and not topic.startswith(LMQ_TOPIC_PREFIX)


def is_expired(cq: ConsumeQueue, commit_log_min_offset: int) -> bool:
    if cq.topic == SCHEDULE_TOPIC:
        return False
    end = cq.last_record_end()
    return end != -1 and end < commit_log_min_offset


class QueueDropper:
    """Drops consume queues of one open store, safely against its dispatch, flush and clean-up threads.
    Any thread may call :meth:`drop`; calls serialise on the store's locks."""

    def __init__(self, commitlog: CommitLog, queues: ConsumeQueueTable, dispatcher: Dispatcher,
                 threads: StoreThreads, *, wait_s: float = 10.0) -> None:
        self._commitlog = commitlog
        self._queues = queues
        self._dispatcher = dispatcher
        self._threads = threads
        self._wait_s = wait_s

    def when_caught_up(self, change: Callable[[], T], what: str) -> T:
        """Run *change* holding the commitlog's writer lock, the dispatcher's lock and the queue files lock,
        once dispatch has caught up with everything written (see the module's docstring); its result.
        StoreError (naming *what*) when dispatch does not catch up with the puts within the wait."""
        commitlog, dispatcher, threads = self._commitlog, self._dispatcher, self._threads
        deadline = time.monotonic() + self._wait_s
        while True:
            threads.wait_dispatched(max(0.0, deadline - time.monotonic()))
            with threads.queue_files_lock, commitlog.holding(what):
                if commitlog.refuse_appends:  # the store closes: its files are, or are about to be, closed
                    raise StoreClosedError()
                if commitlog.max_offset - dispatcher.reput_offset <= DISPATCH_UNDER_LOCK_BYTES:
                    dispatcher.dispatch_available(threads.dispatch_bound())
                    with dispatcher.lock:
                        if dispatcher.reput_offset >= commitlog.max_offset:
                            return change()
            if time.monotonic() > deadline:
                raise StoreError(f"cannot {what}: dispatch stays behind the writes "
                                 f"(at {dispatcher.reput_offset} of {commitlog.max_offset})")

    def drop(self, doomed: Callable[[ConsumeQueue], bool], why: str) -> list[tuple[str, int]]:
        """Drop every queue for which *doomed* (called under the locks, once dispatch has caught up) is
        true; returns their (topic, queue id), sorted.  Raises StoreError when dispatch does not catch up
        with the puts within the wait (the store is too busy: try again)."""
        def change() -> list[tuple[str, int]]:
            doomed_keys = sorted((cq.topic, cq.queue_id) for cq in self._queues if doomed(cq))
            self._queues.drop(doomed_keys)
            for key in doomed_keys:
                self._commitlog.queue_offsets.pop(key, None)
            return doomed_keys

        keys = self.when_caught_up(change, f"drop consume queues ({why})")
        for topic, queue_id in keys:
            log.info("%s: dropped consume queue %s/%d", why, topic, queue_id)
        return keys
