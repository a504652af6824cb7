"""Background durability: async flush on a timer, and group commit for sync flush.

* ``AsyncFlusher`` (RocketMQ's FlushRealTimeService + FlushConsumeQueueService): every interval it flushes
  the commitlog if enough pages are dirty, everything on the thorough interval, consume queues on their
  own schedule, and then the checkpoint.
* ``GroupCommit`` (RocketMQ's GroupCommitService): a put that must be durable waits until the flushed
  offset passes its end; all waiting puts share one fdatasync, run by the first of them when nobody is
  syncing and by the group-commit thread while syncs follow each other.  A failed sync fences the store:
  the waiters get an error and nothing later is acknowledged.

Thread-safety: each service owns one thread; ``GroupCommit.wait_durable`` and ``request`` may be called
from any thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["AsyncFlusher", "GroupCommit"]

log = logging.getLogger(__name__)

#: The longest an idle group commit (no sync pending) keeps newly durable records before handing them to
#: ``on_durable`` (the dispatcher): consumers of a store that just went quiet see its last records ~1 ms
#: after they became durable, RocketMQ's ReputMessageService's polling period.
HAND_OVER_IDLE_S = 0.001
#: While syncs follow each other (writers waiting), at most one hand-over per this period.  A dispatch run
#: holds the GIL that the writers and this thread need, and its cost is mostly fixed (measured on the
#: 2-core dev box, 100 B records from facts: ~12 µs a record in runs of 32, ~6 in runs of 64, ~2.5 in runs
#: of 256), so handing over every 1 ms of a busy stream (runs of 5-30 records) made dispatch a third of
#: the GIL time of 64 sync writers and kept delaying the flusher's return from fdatasync at 1 writer.  Every
#: 10 ms measured +10-35 % sync puts/s at 64 writers and up to +25 % at 1 writer (A/B, session 4 in
#: bench/HISTORY.md); consumers then see records up to ~10 ms after they became durable while writers are
#: busy, the same bound the dispatch thread keeps for a busy async store (its 10 ms pause after a long run).
#: The price: at 1 writer the put that meets a dispatch run waits for it (p99 ~0.4 -> ~0.8 ms).
HAND_OVER_BUSY_S = 0.01


#: A waiting writer looks at the durable offset at least this often, whether or not its gate was opened: a
#: writer a sync covered is normally woken by another thread (below), but if every other thread is gone
#: while the next sync hangs on the disk, this bounds how late it learns that it is durable.
WAIT_SLICE_S = 0.01


#: Who syncs (``GroupCommit._owner``): nobody; a writer, for its own group (it leads); the flusher thread
#: (from when it is handed the sync until no writer waits).
_NOBODY = 0
_LEADER = 1
_FLUSHER = 2


def _open(gate: threading.Lock) -> None:
    """Open *gate* if it is shut.  (Opened already, it may be open, or shut again by its writer, who never
    waits on it again: either way there is nobody left to wake.)"""
    try:
        gate.release()
    except RuntimeError:
        pass


class GroupCommit:
    """Syncs the commitlog for the writers waiting on it, in groups: on the thread of the writer that finds
    nobody syncing, and on the flusher thread while syncs follow each other.

    Hand-offs between threads are what a sync put costs besides the fdatasync: every time the GIL passes
    to a thread that sleeps, it stays idle for that thread's wake-up (~10 µs on the 2-core VM), and a
    woken thread that finds the GIL taken sleeps a second time.  So the protocol keeps wake-ups few and
    times them to moments the GIL is about to be free:

    * a writer that finds nobody syncing runs the sync itself (it leads): a lone writer never hands off
      (a flusher thread cost it two wake-ups per put, flusher and writer), and a burst's first group does
      not wait for the flusher to wake.  Writers that arrive meanwhile queue; if some are left when the
      leader's sync returns (it read the end before they appended), the leader hands the sync to the
      flusher thread and returns: leading their group too would add a sync to its own put each time;
    * the flusher sleeps on a plain locked Lock and is woken only when it is handed the sync, a sync is
      requested while nobody syncs, or records became durable that it must hand over (below);
    * the writers a sync covered join a FIFO of gates to open (oldest first), and a thread opens one just
      before it gives up the GIL: a writer right before it blocks on its own gate, the syncing thread
      right before its next fdatasync, and every remaining one when the sync goes to nobody or the flusher
      goes to sleep (nobody else may come to open them).  The woken writer then finds the GIL free instead
      of queueing for it behind the thread that woke it.  Waking each one as soon as the previous one ran
      (the earlier chain) or all at once made them queue for the GIL, and the order in which they then won
      it was arbitrary: A/B on 64 writers, the FIFO cut the p99 ack latency from 12-14 ms to 7.5-9 ms
      (session 4 in bench/HISTORY.md);
    * the dispatcher is told about durable records just before a sync starts, so that it works while
      the syncing thread waits on the disk, at most every ``HAND_OVER_BUSY_S``, and otherwise by the
      flusher ``HAND_OVER_IDLE_S`` after syncs stopped.

    Durability: a writer returns True only once ``durable_offset`` covers its end, and ``durable_offset``
    only moves to the end offset read before a sync started, after that sync returned; one thread syncs
    at a time.  A writer that waits for another's sync keeps its timeout even when the disk stalls; a
    leader is inside the fdatasync itself, so its put returns when the disk does, and answers a timeout
    (False) when its sync took longer than the timeout, as a waiter would have.
    """

    def __init__(self, flush: Callable[[], int], on_failure: Callable[[BaseException], None],
                 on_durable: Callable[[], None] | None = None, *, leaders: bool = True) -> None:
        """*flush* makes everything written durable and returns the durable end offset (read before it
        synced); *on_durable* is called after the durable offset moved, on the flusher thread or a
        leading writer's.  *leaders* False: every sync runs on the flusher thread (RocketMQ's
        GroupCommitService), so that every writer keeps its timeout when the disk stalls, at the price of
        two thread hand-offs per lone put."""
        self._flush = flush
        self._leaders = leaders
        self._on_durable = on_durable
        self._on_failure = on_failure
        self._lock = threading.Lock()
        #: the flusher sleeps on this (held) Lock while ``_idle``; whoever gives it work while it is idle
        #: releases it (one wake-up, no Condition bookkeeping)
        self._wake = threading.Lock()
        self._wake.acquire()
        self._idle = False
        #: the flusher sleeps with a timeout, to hand durable records over once syncs stop
        self._timing = False
        self._owner = _NOBODY
        #: leads taken so far (an interrupted leader tells from it whether the lead is still its own)
        self._leads = 0
        #: ``stop`` waits on this for a leader's sync to end (the files close after it)
        self._owner_free = threading.Condition(self._lock)
        #: writers waiting for a sync, in registration order: (end_offset, gate), *gate* a held Lock the
        #: writer sleeps on
        self._waiters: list[tuple[int, threading.Lock]] = []
        #: gates of writers a finished sync covered, oldest first, not opened yet
        self._ready: deque[threading.Lock] = deque()
        self._requested = 0
        self.durable_offset = 0
        self._syncs = 0  # syncs returned so far (the flusher tells from it whether syncs stopped)
        self._handed_over = 0  # the durable offset on_durable was last called for
        self._handed_over_at = 0.0
        self.failed: BaseException | None = None
        self._stopped = False
        #: called with no arguments after every sync that returned, after a failed one, and on stop (on
        #: whichever thread that was): waiters that are not threads (an event loop's) look at
        #: ``durable_offset``, ``failed`` and ``stopped`` then
        self._listeners: tuple[Callable[[], None], ...] = ()
        self._thread = threading.Thread(target=self._run, name="rocketstore-group-commit", daemon=True)

    def start(self, durable_offset: int) -> None:
        self.durable_offset = self._handed_over = self._requested = durable_offset
        self._thread.start()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call *listener* after every sync, a failed sync and stop; it must be quick and must not block
        (it runs on the syncing thread, between syncs).  Pair it with :meth:`request`."""
        self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        self._listeners = tuple(fn for fn in self._listeners if fn is not listener)

    def _tell_listeners(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a listener's bug must not stop the syncs
                log.exception("group commit: a durability listener failed")

    @property
    def stopped(self) -> bool:
        return self._stopped

    def is_own_thread(self) -> bool:
        """Whether the caller runs on this group commit's own thread (a durability listener: it cannot stop
        the group commit, which joins that thread)."""
        return threading.current_thread() is self._thread

    def _wake_flusher(self) -> None:
        try:
            self._wake.release()
        except RuntimeError:
            pass  # released already: one wake-up is enough

    def wait_durable(self, end_offset: int, timeout_s: float) -> bool:
        """True once *end_offset* is durable; False on timeout or after a failed sync."""
        if self.durable_offset >= end_offset:
            return True
        # a KeyboardInterrupt (or another signal handler's exception) can reach this thread anywhere while it
        # leads: the lead is then handed to the flusher, or every later sync waited for a leader that had
        # gone (puts FLUSH_DISK_TIMEOUT, dispatch stuck at the durable offset, close hung for ever)
        lead_no = -1
        baton = None
        try:
            with self._lock:
                if self.durable_offset >= end_offset:
                    return True
                if self.failed is not None or self._stopped:
                    return False
                self._requested = max(self._requested, end_offset)
                ready = self._ready
                baton = ready.popleft() if ready else None
                lead = self._owner == _NOBODY
                wake = False
                if lead and self._leaders:
                    self._owner = _LEADER
                    self._leads += 1
                    lead_no = self._leads
                else:
                    if lead:  # no leaders: the flusher syncs for this writer
                        self._owner = _FLUSHER
                        lead = False
                        wake = self._idle
                    gate = threading.Lock()
                    gate.acquire()
                    waiter = (end_offset, gate)
                    lead_no = 0  # (queued: interrupted from here, it leaves the queue)
                    self._waiters.append(waiter)
            if lead:
                # a leader cannot leave a stalled fdatasync, but it answers as a waiter would have: a sync
                # that outlasted the timeout is a timeout (FLUSH_DISK_TIMEOUT), however late it is learned
                began = time.monotonic()
                return self._lead(end_offset, baton) and time.monotonic() - began <= timeout_s
            if wake:
                self._wake_flusher()
            if baton is not None:
                baton.release()  # this thread gives up the GIL right below: the woken writer finds it free
        except BaseException:
            if lead_no > 0:
                self._leader_left(lead_no)
            elif lead_no == 0:
                # a queued writer stays queued no longer: a sync covering it would pass its gate on as a
                # wake-up, and the wake-up would go to nobody
                self._leave(waiter)
            if baton is not None:
                # the gate of a covered writer this thread took to open: open it (or that writer learns it is
                # durable only at its next look, a WAIT_SLICE_S later, or its timeout when that is shorter)
                _open(baton)
            raise
        woken = False
        try:
            if timeout_s <= WAIT_SLICE_S:
                woken = gate.acquire(True, timeout_s)
            else:
                deadline = time.monotonic() + timeout_s
                woken = gate.acquire(True, WAIT_SLICE_S)
                while not woken and self.durable_offset < end_offset and self.failed is None \
                        and not self._stopped:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    woken = gate.acquire(True, min(left, WAIT_SLICE_S))
        finally:
            if not woken:  # timed out, covered without a wake-up, or interrupted: leave the queue
                self._leave(waiter)
        return self.durable_offset >= end_offset

    def _leave(self, waiter: tuple[int, threading.Lock]) -> None:
        """Take a writer that is not woken out of the queue (queued or not)."""
        with self._lock:
            try:
                self._waiters.remove(waiter)
            except ValueError:
                # a sync covered it: its gate waits in _ready.  Take it out, or the thread that pops it
                # would pass its wake-up to nobody, and the chain of wake-ups would stop there until the
                # next sync returned (the GIL idle meanwhile)
                try:
                    self._ready.remove(waiter[1])
                except ValueError:
                    pass  # popped already (that wake-up came to this thread, awake anyway), or never queued

    def _leader_left(self, lead_no: int) -> None:
        """The leader *lead_no* was interrupted: if it still leads, the flusher takes its sync over."""
        with self._lock:
            if self._owner != _LEADER or self._leads != lead_no:
                return  # it had handed the lead on (a later leader's is not this one's to give away)
            self._owner = _FLUSHER
            idle = self._idle
            self._owner_free.notify_all()
        if idle:
            self._wake_flusher()

    def _lead(self, end_offset: int, baton: threading.Lock | None) -> bool:
        """Sync on this writer's thread until *end_offset* is durable; then hand the sync on or drop it."""
        lock = self._lock
        if self._handed_over < self.durable_offset and \
                time.monotonic() - self._handed_over_at >= HAND_OVER_BUSY_S:
            self._hand_over()  # the dispatcher works while this thread waits on the disk
        if baton is not None:
            baton.release()  # this thread gives up the GIL in the fdatasync right below
        while True:
            try:
                durable = self._flush()
            except Exception as exc:  # noqa: BLE001 - a failed fdatasync is final: fence, fail every waiter
                log.error("group commit: sync failed, fencing the store: %s", exc)
                self._fail(exc)
                return False
            except BaseException:  # interrupted (KeyboardInterrupt): the flusher redoes the sync
                with lock:
                    self._owner = _FLUSHER
                    idle = self._idle
                    self._owner_free.notify_all()
                if idle:
                    self._wake_flusher()
                raise
            with lock:
                self.durable_offset = max(self.durable_offset, durable)
                self._syncs += 1
                if self._waiters:
                    self._take_covered(self.durable_offset)
                if self.durable_offset < end_offset:
                    continue  # (a flush that returns an end short of bytes appended before it: sync again)
                wake = False
                ready: deque[threading.Lock] | None = None
                if self._requested > self.durable_offset:
                    self._owner = _FLUSHER  # writers came while it synced: theirs is the flusher's
                    wake = self._idle
                else:
                    self._owner = _NOBODY
                    if self._ready:
                        ready, self._ready = self._ready, deque()
                    if self._handed_over < self.durable_offset and not self._timing:
                        self._timing = True  # the flusher hands these over if no sync follows
                        wake = self._idle
                if self._stopped:
                    self._owner_free.notify_all()
            break
        if self._listeners:
            self._tell_listeners()
        if wake:
            self._wake_flusher()
        if ready:
            for gate in ready:
                gate.release()
        return True

    def request(self, end_offset: int) -> None:
        """Ask for a sync without waiting (a put with WAIT=false)."""
        with self._lock:
            if end_offset <= self._requested:
                return
            self._requested = end_offset
            if self._owner != _NOBODY:
                return  # the syncing thread sees it when its sync returns
            self._owner = _FLUSHER
            idle = self._idle
        if idle:
            self._wake_flusher()

    def _take_covered(self, durable: int) -> None:
        """Move the writers *durable* covers from the queue to the gates to open.  Holds the lock."""
        waiters = self._waiters
        covered = [w for w in waiters if w[0] <= durable]
        if covered:
            # (ends are not in queue order: a writer can register before one that appended ahead of it)
            self._waiters = [] if len(covered) == len(waiters) else [w for w in waiters if w[0] > durable]
            self._ready.extend([w[1] for w in covered])

    def _release_all(self) -> None:
        """Open every gate at once (stop, failed sync).  Holds the lock."""
        ready, self._ready = self._ready, deque()
        waiters, self._waiters = self._waiters, []
        for gate in ready:
            gate.release()
        for waiter in waiters:
            waiter[1].release()

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            self.failed = exc
            self._owner = _NOBODY
            self._release_all()
            self._owner_free.notify_all()
            idle = self._idle
        if idle:
            self._wake_flusher()  # (a leader failed) the flusher thread ends
        self._on_failure(exc)
        self._tell_listeners()

    def _hand_over(self) -> None:
        with self._lock:
            durable = self.durable_offset
            if durable <= self._handed_over:
                return
            self._handed_over = durable
            self._handed_over_at = time.monotonic()
        if self._on_durable is not None:
            self._on_durable()

    def _time_hand_over(self) -> None:
        """Sleep until woken; meanwhile hand durable records over once no sync followed for
        ``HAND_OVER_IDLE_S``, or once a leader, which hands over before its syncs, let the busy period
        pass by ``HAND_OVER_IDLE_S`` (its writer stopped between puts).  While leaders keep syncing, this
        looks about once per busy period, not once per ``HAND_OVER_IDLE_S``."""
        timeout = HAND_OVER_IDLE_S
        seen = self._syncs
        while not self._wake.acquire(True, timeout):
            with self._lock:
                if self._handed_over >= self.durable_offset:
                    return
                quiet = self._owner == _NOBODY and self._syncs == seen
                seen = self._syncs
                due = self._handed_over_at + HAND_OVER_BUSY_S + HAND_OVER_IDLE_S
            now = time.monotonic()
            if quiet or now >= due:
                self._hand_over()
                return
            timeout = max(HAND_OVER_IDLE_S, due - now)
        # woken: the main loop looks at what for

    def _run(self) -> None:
        lock = self._lock
        wake = self._wake
        while True:
            baton = None
            with lock:
                self._idle = False
                if self.failed is not None:
                    return  # the failing thread released everyone
                if self._owner == _NOBODY and self._requested > self.durable_offset:
                    self._owner = _FLUSHER
                syncing = self._owner == _FLUSHER
                if syncing and self._requested <= self.durable_offset:
                    self._owner = _NOBODY
                    syncing = False
                if syncing:
                    if self._ready:
                        baton = self._ready.popleft()
                elif self._stopped and self._owner == _NOBODY:
                    self._release_all()
                    break
                else:
                    ready, self._ready = self._ready, deque()
                    timing = self._timing = self._handed_over < self.durable_offset
                    self._idle = True
            if not syncing:
                for gate in ready:  # going to sleep: nobody else may come to open these
                    gate.release()
                if timing:
                    self._time_hand_over()
                else:
                    wake.acquire()
                continue
            if self._handed_over < self.durable_offset and \
                    time.monotonic() - self._handed_over_at >= HAND_OVER_BUSY_S:
                self._hand_over()  # the dispatcher works while this thread waits on the disk
            if baton is not None:
                baton.release()  # this thread gives up the GIL in the fdatasync right below
            try:
                durable = self._flush()
            except BaseException as exc:  # noqa: BLE001 - a failed fdatasync is final: fence, fail every waiter
                log.error("group commit: sync failed, fencing the store: %s", exc)
                self._fail(exc)
                return
            with lock:
                self.durable_offset = max(self.durable_offset, durable)
                self._syncs += 1
                if self._waiters:
                    self._take_covered(self.durable_offset)
            if self._listeners:
                self._tell_listeners()
        self._hand_over()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._release_all()
            while self._owner == _LEADER:
                self._owner_free.wait()
        self._wake_flusher()
        if self._thread.is_alive():
            self._thread.join()
        self._tell_listeners()


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
        #: set by :meth:`stop` and :meth:`set_intervals`: the sleep between rounds ends early
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rocketstore-flush", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def set_intervals(self, *, interval_s: float, thorough_commit_log_s: float, queues_interval_s: float,
                      thorough_queues_s: float) -> None:
        """New intervals from the next round on (UPDATE_BROKER_CONFIG; 4.9.3's flush services read theirs at
        every round).  The sleep under way ends now, so a shorter interval acts at once rather than after
        the old one (an hour, say)."""
        self._interval_s = interval_s
        self._thorough_commit_log_s = thorough_commit_log_s
        self._queues_interval_s = queues_interval_s
        self._thorough_queues_s = thorough_queues_s
        self._wake.set()

    def _run(self) -> None:
        last_queues = time.monotonic()
        # the first round of each is thorough, as 4.9.3's flush services count from a last thorough flush at
        # 0: the checkpoint is written a second after the start, not a minute (a store killed within its
        # first minute had none, or the run before's, and its recovery walked from the first segment or from
        # that older one)
        last_thorough = last_queues_thorough = -math.inf
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
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
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
