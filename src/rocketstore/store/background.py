"""The store's background threads: dispatch, clean-up, and the flushing that keeps writes durable.

Owns :class:`StoreThreads`: the dispatch thread (commitlog -> consume queues and index, woken by puts),
the clean-up thread (disk checks, retention), the :class:`AsyncFlusher` and, under SYNC_FLUSH, the
:class:`GroupCommit`, with the flush steps they run, and the :class:`PageWarmer` ahead of the writer.  The facade (message_store.py) builds one per open
store, starts it when the store runs background work, wakes the dispatcher after a put and stops it all
on close.  What these threads find wrong reaches the facade through two callbacks only: *fence* (a write,
sync or clean-up failed: refuse writes) and *update_refuse_writes* (the disk or the dispatcher changed
state).

Must not import: message_store (the facade), reads, batch_put; broker, remoting.
Thread-safety: :meth:`release_dispatch`, :meth:`wake_dispatch`, :meth:`dispatch_bound` and
:meth:`wait_dispatched` may be called from any thread (the put path calls the first two), and
:attr:`queue_files_lock` taken from any; :meth:`start`, :meth:`stop` and :meth:`dispatch_caught_up` from the
thread that opens and closes the store.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from rocketstore.message.record import BLANK_MAGIC
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.cleanup import Cleaner
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.dispatch import Dispatcher
from rocketstore.store.flush import AsyncFlusher, GroupCommit
from rocketstore.store.page_warmer import PageWarmer

__all__ = ["StoreThreads"]

#: wait_dispatched polls this often; while dispatch fails it backs off, doubling, up to the dispatch
#: thread's pause between tries
_WAIT_POLL_S = 0.0005
_WAIT_FAILING_MAX_PAUSE_S = 0.5


class StoreThreads:
    """Dispatch, clean-up and flush threads of one open store (none run until :meth:`start`)."""

    def __init__(self, config: StoreConfig, commitlog: CommitLog, queues: ConsumeQueueTable,
                 checkpoint: Checkpoint, dispatcher: Dispatcher, cleaner: Cleaner, *,
                 fence: Callable[[BaseException], None], update_refuse_writes: Callable[[], None]) -> None:
        self.config = config
        self._commitlog = commitlog
        self._queues = queues
        self._checkpoint = checkpoint
        self._dispatcher = dispatcher
        self._cleaner = cleaner
        self._fence = fence
        self._update_refuse_writes = update_refuse_writes
        self._stop = threading.Event()
        #: a lock used as a binary semaphore: released (by a put, a sync or close) = dispatch has work.
        #: Lock.acquire/release are C calls; threading.Event's Python-level Condition cost each put ~5 µs
        #: and each wake-up of the dispatch thread more (measured on the broker's one-at-a-time sends).
        self._dispatch_wake = threading.Lock()
        self._dispatch_wake.acquire()
        #: the dispatch thread sleeps until a put releases it (the put path reads this flag)
        self.dispatch_idle = False
        #: sync flush: the dispatcher sleeps with this flag up instead, so that puts (whose records are not
        #: durable yet) do not wake it for nothing; the group commit wakes it for durable records
        self._dispatch_waits_for_sync = False
        #: the monotonic time from which the dispatch thread waits for the GIL (inf while it sleeps with
        #: nothing to do, or runs): a busy-polling event loop naps then to let it in (remoting/busy_poll.py)
        self.dispatch_due_at = math.inf
        self._dispatch_thread: threading.Thread | None = None
        self._clean_thread: threading.Thread | None = None
        #: held while consume-queue files are flushed or deleted (flush steps, retention passes, dropping
        #: queues): a queue is never destroyed under a thread that is syncing or trimming its files
        self.queue_files_lock = threading.Lock()
        self._flusher: AsyncFlusher | None = None
        self.group_commit: GroupCommit | None = None
        self.page_warmer: PageWarmer | None = None

    def start(self) -> None:
        cfg = self.config
        if cfg.is_sync_flush:
            self.group_commit = GroupCommit(self._sync_commit_log, self._fence, on_durable=self.wake_dispatch)
            self.group_commit.start(self._commitlog.max_offset)
        # Consume queues and the checkpoint are flushed on their own schedule in both modes; in sync-flush
        # mode the commitlog step has nothing left to do but move the checkpoint's physic timestamp.
        self._flusher = AsyncFlusher(
            interval_s=cfg.flush_interval_commit_log_ms / 1000, commit_log_step=self._flush_commit_log_step,
            queues_step=self._flush_queues_step,
            thorough_commit_log_s=cfg.flush_commit_log_thorough_interval_ms / 1000,
            queues_interval_s=cfg.flush_interval_consume_queue_ms / 1000,
            thorough_queues_s=cfg.flush_consume_queue_thorough_interval_ms / 1000, on_failure=self._fence)
        self._flusher.start()
        files = self._commitlog.files
        if cfg.warm_ahead_bytes > 0 and files.writable and not cfg.warm_mapped_file_enable:
            self.page_warmer = PageWarmer(files, cfg.warm_ahead_bytes)
            self.page_warmer.start()
        self._dispatch_thread = threading.Thread(target=self._dispatch_loop, name="rocketstore-dispatch",
                                                 daemon=True)
        self._dispatch_thread.start()
        self._clean_thread = threading.Thread(target=self._clean_loop, name="rocketstore-clean", daemon=True)
        self._clean_thread.start()

    def update_flush(self, config: StoreConfig) -> None:
        """Take *config*'s flush settings (the commitlog's and the consume queues' intervals, least pages and
        thorough intervals) from the next flush round on, as 4.9.3's flush services read them at every
        round; the rest of this object's config is read at start only."""
        self.config = config
        if self._flusher is not None:
            self._flusher.set_intervals(
                interval_s=config.flush_interval_commit_log_ms / 1000,
                thorough_commit_log_s=config.flush_commit_log_thorough_interval_ms / 1000,
                queues_interval_s=config.flush_interval_consume_queue_ms / 1000,
                thorough_queues_s=config.flush_consume_queue_thorough_interval_ms / 1000)

    def _clean_loop(self) -> None:
        interval_s = self.config.clean_resource_interval_ms / 1000
        # RocketMQ's first clean-up runs 60 s after the start whatever the interval, then one every interval
        next_clean = time.monotonic() + 60.0
        while not self._stop.wait(max(0.0, min(interval_s, 10.0, next_clean - time.monotonic()))):
            self._cleaner.check_disk()
            self._update_refuse_writes()
            if time.monotonic() >= next_clean:
                next_clean = time.monotonic() + interval_s
                try:
                    with self.queue_files_lock:
                        self._cleaner.run()
                except OSError as exc:
                    self._fence(exc)

    def dispatch_bound(self) -> int:
        gc = self.group_commit
        # sync flush: never show consumers a record that a crash could still erase
        return gc.durable_offset if gc is not None else self._commitlog.max_offset

    def _dispatch_loop(self) -> None:
        # A wake-up that finds fewer than this many records waiting first sleeps this long, so that records
        # arriving one at a time (a broker's sends, each between two socket reads that free the GIL) are
        # dispatched a batch at a time: one GIL hand-over and one run's fixed cost per batch, not per
        # record (dispatching a run of 1 cost ~30 µs per record here, a run of 64 ~6).  Consumers see a
        # record at most ~1 ms later, RocketMQ's own reput cadence (it polls every 1 ms).  A busy writer
        # (a put loop holding the GIL) already leaves hundreds waiting by the time this thread runs.
        gather_records = 64
        gather_s = 0.001
        # After a long run (writers busy: a put loop, a burst of sends) the thread pauses before looking
        # again, unless a backlog is building up.  Each look costs the writers a GIL hand-over (the put loop
        # is made to stop and wait for the run), and a run has a fixed cost of some 60 numpy calls: a pause
        # makes runs several times longer and hand-overs as much rarer.  Consumers then see a record up to
        # ~10 ms later, but only while the writers are that busy; with a backlog the loop does not pause, so
        # dispatch keeps up with any put rate.
        busy_records = 256
        busy_pause_s = 0.01
        backlog_bytes = 1 << 20
        stop = self._stop
        dispatcher = self._dispatcher
        wake = self._dispatch_wake
        sync_flush = self.group_commit is not None
        while not stop.is_set():
            self.dispatch_due_at = math.inf  # this thread holds the GIL now
            count = self.dispatch(self.dispatch_bound())
            if count >= busy_records:
                if self.dispatch_bound() - dispatcher.reput_offset < backlog_bytes:
                    self.dispatch_due_at = time.monotonic() + busy_pause_s
                    stop.wait(busy_pause_s)
            elif count == 0:
                if dispatcher.io_error is not None:
                    stop.wait(0.5)
                else:
                    # Sleep until a put (or, in sync mode, a sync) wakes us, instead of RocketMQ's 1 ms poll,
                    # which costs the writers GIL time for nothing.  The flag goes up before the re-check, and
                    # writers look at it after appending, so no record can slip in unseen.
                    if sync_flush:
                        self._dispatch_waits_for_sync = True
                    else:
                        self.dispatch_idle = True
                    woken = False
                    if dispatcher.reput_offset >= self.dispatch_bound():
                        woken = wake.acquire(True, 0.1)
                    self.dispatch_idle = self._dispatch_waits_for_sync = False
                    wake.acquire(False)  # consume a wake-up that came meanwhile: its record is seen below
                    if woken and len(self._commitlog.facts) < gather_records and not stop.is_set():
                        self.dispatch_due_at = time.monotonic() + gather_s
                        time.sleep(gather_s)

    def dispatch(self, bound: int | None = None) -> int:
        """Dispatch what is written up to *bound* (:meth:`Dispatcher.dispatch_available`), on whichever thread
        calls (the dispatch thread, or wait_dispatched / flush on a store opened without it); when that starts
        or stops failing, the put fast path's refuse-writes flag is updated.  The records dispatched."""
        dispatcher = self._dispatcher
        failing = dispatcher.io_error is not None
        count = dispatcher.dispatch_available(bound)
        if failing != (dispatcher.io_error is not None):
            self._update_refuse_writes()
        return count

    def release_dispatch(self) -> None:
        self.dispatch_due_at = 0.0  # runnable from now: it takes the GIL next
        try:
            self._dispatch_wake.release()
        except RuntimeError:
            pass  # already released: one wake-up is enough

    def wake_dispatch(self) -> None:
        if self.dispatch_idle or self._dispatch_waits_for_sync:
            self.release_dispatch()

    def _sync_commit_log(self) -> int:
        end = self._commitlog.max_offset
        ts = self._commitlog.last_store_timestamp or self._dispatcher.last_store_timestamp
        self._commitlog.flush(0)
        if ts:
            self._checkpoint.physic_msg_timestamp = ts
        return end

    def _flush_commit_log_step(self, thorough: bool) -> None:
        if self.group_commit is not None:
            return  # group commit keeps the commitlog durable and the physic timestamp current
        # a slave's commitlog grows by replica bytes, whose store times only its dispatcher reads: the
        # newest dispatched record lies within the bytes the flush makes durable
        ts = self._commitlog.last_store_timestamp or self._dispatcher.last_store_timestamp
        self._commitlog.flush(0 if thorough else self.config.flush_commit_log_least_pages)
        if thorough and ts:
            self._checkpoint.physic_msg_timestamp = ts

    def _flush_queues_step(self, thorough: bool) -> None:
        logics_ts = self._dispatcher.last_store_timestamp
        least = 0 if thorough else self.config.flush_consume_queue_least_pages
        with self.queue_files_lock:
            for cq in self._queues:
                cq.flush(least)
        if thorough:
            if logics_ts:
                self._checkpoint.logics_msg_timestamp = logics_ts
            self._checkpoint.flush()

    def wait_dispatched(self, timeout_s: float = 10.0) -> bool:
        """Block until everything written (durable, in sync-flush mode) is in the consume queues and index."""
        deadline = time.monotonic() + timeout_s
        pause = _WAIT_POLL_S
        while True:
            bound = self.dispatch_bound()
            self.dispatch(bound)
            if self._dispatcher.reput_offset >= bound >= self._commitlog.max_offset:
                return True
            gc = self.group_commit
            if gc is not None:
                gc.request(self._commitlog.max_offset)
            now = time.monotonic()
            if now > deadline:
                return False
            if self._dispatcher.io_error is not None:
                # dispatch cannot write (out of descriptors, a full disk): a retry every poll only burns a
                # core until the timeout; back off toward the dispatch thread's own pause between tries
                pause = min(pause * 2, _WAIT_FAILING_MAX_PAUSE_S, max(deadline - now, _WAIT_POLL_S))
            else:
                pause = _WAIT_POLL_S
            time.sleep(pause)

    def dispatch_caught_up(self) -> bool:
        """Dispatch has every record: it reached the end, or only the unused tail of a full segment is left."""
        reput = self._dispatcher.reput_offset
        end = self._commitlog.max_offset
        if reput >= end:
            return True
        mf = self._commitlog.files.find(reput)
        if mf is None or mf.start_offset + mf.size_bytes != end:
            return False
        head = self._commitlog.read_head(reput)
        return head is None or head[1] == BLANK_MAGIC

    def is_own_thread(self) -> bool:
        """Whether the caller runs on one of these threads (dispatch, clean-up, group commit: a listener's
        thread), which :meth:`stop` and the group commit's stop would join from itself.  Another store's
        threads are not these."""
        current = threading.current_thread()
        gc = self.group_commit
        return (current is self._dispatch_thread or current is self._clean_thread
                or (gc is not None and gc.is_own_thread()))

    def stop(self) -> None:
        """Stop the dispatch and clean-up threads and the flusher (the group commit stays: see the facade's
        close, which stops it once the last writes are flushed)."""
        self._stop.set()
        self.release_dispatch()
        if self._dispatch_thread is not None:
            self._dispatch_thread.join()
        if self._clean_thread is not None:
            self._clean_thread.join()
        if self._flusher is not None:
            self._flusher.stop()
        if self.page_warmer is not None:
            self.page_warmer.stop()
