"""The facade's administration: dispatch and durability read-outs, retention and queue clean-up, the broker
role and run-time settings, flush.

:class:`StoreAdmin` is a base class of the facade (message_store.py); what it runs lives in background.py,
cleanup.py and queue_cleanup.py, each given the pieces it needs.  None of it is on the put or get path.

Must not import: message_store (the facade), reads, batch_put; broker, remoting.
Thread-safety: as the facade: any method may be called from any thread, alongside puts and reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container

from rocketstore.errors import StoreClosedError, StoreConfigError
from rocketstore.store.cleanup import CleanReport
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.opening import _hot_memory_bytes
from rocketstore.store.queue_cleanup import QueueDropper, is_expired, is_unused
from rocketstore.store.store_parts import StoreParts

__all__ = ["RUN_TIME_SETTINGS", "StoreAdmin"]


#: the StoreConfig fields a running store takes from a new config (MessageStore.update_run_time_settings):
#: those 4.9.3 reads at every use, not once at start
RUN_TIME_SETTINGS = (
    # each clean-up pass
    "file_reserved_time_h", "delete_when", "disk_max_used_space_ratio", "clean_file_forcibly_enable",
    # each get
    "access_message_in_memory_max_ratio", "max_transfer_bytes_on_message_in_memory",
    "max_transfer_count_on_message_in_memory", "max_transfer_bytes_on_message_in_disk",
    "max_transfer_count_on_message_in_disk",
    # each flush round
    "flush_interval_commit_log_ms", "flush_commit_log_least_pages", "flush_commit_log_thorough_interval_ms",
    "flush_interval_consume_queue_ms", "flush_consume_queue_least_pages",
    "flush_consume_queue_thorough_interval_ms",
    # each put, each query
    "os_page_cache_busy_timeout_ms", "sync_flush_timeout_ms", "max_msgs_num_batch", "default_query_max_num",
)


class StoreAdmin(StoreParts):
    """MessageStore's administration calls."""

    # --- dispatch and durability ---------------------------------------------------------------------------

    def wait_dispatched(self, timeout_s: float = 10.0) -> bool:
        """Block until everything written (durable, in sync-flush mode) is in the consume queues and index."""
        return self._threads.wait_dispatched(timeout_s)

    def add_dispatch_listener(self, listener: Callable[[str, int, int, int, int], None]) -> None:
        """Call ``listener(topic, queue_id, next_queue_offset, tags_code, store_timestamp)`` for every record
        the dispatcher adds to a consume queue.  It runs on the dispatch thread: keep it short, and hop to
        your own thread or event loop (``loop.call_soon_threadsafe``) for real work.  An exception it raises
        is logged and dispatch goes on (the rest of that run of records may go unheard)."""
        self._dispatcher.listeners.append(listener)

    @property
    def dispatch_behind_bytes(self) -> int:
        return self._dispatcher.behind_bytes

    @property
    def dispatch_due_at(self) -> float:
        """The ``time.monotonic()`` time from which the dispatch thread waits for the GIL to run (math.inf
        while it has nothing to do or is running): a thread that keeps the GIL busy, as a busy-polling
        event loop does, should let go of it then."""
        return self._threads.dispatch_due_at

    def delete_expired_files(self, *, force: bool = False, now_ms: int | None = None) -> CleanReport:
        """One retention pass now (the background thread runs one every cleanResourceInterval)."""
        self._check_not_closing()
        if not self._writable:
            raise StoreClosedError() if self._closed else PermissionError("a read-only store deletes nothing")
        with self._threads.queue_files_lock:
            if self._closed:  # closed while this waited (its files are closed, or another process's now)
                raise StoreClosedError()
            report = self._cleaner.run(force=force, now_ms=now_ms)
        self._update_refuse_writes()
        return report

    def update_run_time_settings(self, config: StoreConfig) -> None:
        """Take *config*'s settings that 4.9.3 reads at every use (:data:`RUN_TIME_SETTINGS`) from their next
        use on: retention (each clean-up pass), the read limits and in-memory ratio (each get, and the
        suggest-slave flag), the flush intervals, least pages and thorough intervals (each flush round; a
        shorter interval acts at once), osPageCacheBusyTimeOutMills and syncFlushTimeout (each put),
        maxMsgsNumBatch and defaultQueryMaxNum (each query).  Every other setting stays as the store was
        opened with."""
        self._check_open()
        cfg = self.config = self.config.replace(**{name: getattr(config, name) for name in RUN_TIME_SETTINGS})
        self._cleaner.set_policy(file_reserved_time_h=cfg.file_reserved_time_h, delete_when=cfg.delete_when,
                                 disk_max_used_space_ratio=cfg.disk_max_used_space_ratio,
                                 clean_file_forcibly_enable=cfg.clean_file_forcibly_enable)
        self._memory_for_hot_bytes = _hot_memory_bytes(cfg)
        self._reader.set_limits(cfg, self._memory_for_hot_bytes)
        self._commitlog.lock_wait_s = cfg.os_page_cache_busy_timeout_ms / 1000
        self._threads.update_flush(cfg)

    def set_broker_role(self, role: str, *, wait_s: float = 10.0) -> None:
        """Take *role* (brokerRole) from the next put on, as 4.9.3's store reads its role at every put: a
        SLAVE refuses puts (SERVICE_NOT_AVAILABLE), a master takes them.  A store leaving SLAVE first takes
        its next queue offsets from its consume queues, once dispatch has built them from every replicated
        record (StoreError when it does not catch up within *wait_s*); 4.9.3 keeps the ones it recovered at
        start, and so writes queue offsets its consume queues already hold."""
        self._check_open()
        if role not in (BrokerRole.ASYNC_MASTER, BrokerRole.SYNC_MASTER, BrokerRole.SLAVE):
            raise StoreConfigError(f"unknown brokerRole {role!r}")
        if role == self.config.broker_role:
            return
        if not self._writable or role == BrokerRole.SLAVE or self.config.broker_role != BrokerRole.SLAVE:
            self.config = self.config.replace(broker_role=role)
            self._update_refuse_writes()
            return

        def become() -> None:
            self._commitlog.queue_offsets = {(cq.topic, cq.queue_id): cq.max_offset for cq in self._queues}
            self.config = self.config.replace(broker_role=role)
            self._update_refuse_writes()

        dropper = QueueDropper(self._commitlog, self._queues, self._dispatcher, self._threads, wait_s=wait_s)
        dropper.when_caught_up(become, f"become {role}")

    def clean_unused_topics(self, live_topics: Container[str]) -> list[tuple[str, int]]:
        """RocketMQ's cleanUnusedTopic: drop the consume queues of every topic not in *live_topics* (but
        SCHEDULE_TOPIC_XXXX, RMQ_SYS_TRANS_OP_HALF_TOPIC and LMQ topics); returns the (topic, queue id)
        dropped.  *live_topics* is asked while puts wait, so a live view of a topic table (which another
        thread may add to) is safe: a topic added before that moment is kept, one added later gets a new
        queue.  See :mod:`rocketstore.store.queue_cleanup` for what goes and why it is safe."""
        return self._queue_dropper().drop(lambda cq: is_unused(cq, live_topics), "clean unused topics")

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """RocketMQ's cleanExpiredConsumerQueue: drop the consume queues whose every message retention has
        deleted from the commitlog (SCHEDULE_TOPIC_XXXX's excepted); returns the (topic, queue id) dropped."""
        return self._queue_dropper().drop(lambda cq: is_expired(cq, self._commitlog.min_offset),
                                          "clean expired consume queues")

    def _queue_dropper(self) -> QueueDropper:
        self._check_not_closing()
        if not self._writable:
            raise PermissionError("a read-only store deletes nothing")
        return QueueDropper(self._commitlog, self._queues, self._dispatcher, self._threads)

    # --- durability for callers that do not block (SYNC_FLUSH) ---------------------------------------------

    @property
    def durable_offset(self) -> int:
        """SYNC_FLUSH: the commitlog offset up to which records are on disk (group commit); otherwise the
        end of what was written (an async-flush put is acknowledged once written)."""
        gc = self._threads.group_commit
        return gc.durable_offset if gc is not None else self.max_commit_log_offset

    @property
    def flush_failed(self) -> bool:
        """True once a sync failed or the group commit stopped: nothing more becomes durable."""
        gc = self._threads.group_commit
        return gc is not None and (gc.failed is not None or gc.stopped)

    def add_durable_listener(self, listener: Callable[[], None]) -> None:
        """SYNC_FLUSH: call *listener* (no arguments) after every sync, a failed sync and at close, on the
        syncing thread: it must be quick and must not block (an event loop's ``call_soon_threadsafe``).
        With ``put(..., flush="ask")`` it lets one thread wait for many puts: a record is durable
        once :attr:`durable_offset` reaches its ``commit_log_offset + wrote_bytes``.  Does nothing under ASYNC_FLUSH."""
        gc = self._threads.group_commit
        if gc is not None:
            gc.add_listener(listener)

    def request_flush(self, end_offset: int) -> None:
        """SYNC_FLUSH: ask for a sync that makes everything up to *end_offset* durable, without waiting
        (after puts made with ``flush="later"``).  Does nothing under ASYNC_FLUSH."""
        gc = self._threads.group_commit
        if gc is not None:
            gc.request(end_offset)

    def remove_durable_listener(self, listener: Callable[[], None]) -> None:
        gc = self._threads.group_commit
        if gc is not None:
            gc.remove_listener(listener)

    def _check_not_closing(self) -> None:
        """StoreClosedError once closed, or while another thread closes the store: its closing flush covers
        a flush, and a close waiting for the files lock behind such calls, which a thread may make in a
        loop, could wait for ever (a Lock is not fair)."""
        if self._closed or self._closing_thread not in (None, threading.get_ident()):
            raise StoreClosedError()

    def flush(self) -> None:
        """Make everything written durable now: commitlog, consume queues, index and checkpoint."""
        self._check_not_closing()
        if not self._writable:
            return
        # a slave's replica bytes carry no put's timestamp: its dispatcher's newest one (see background.py)
        ts = self._commitlog.last_store_timestamp or self._dispatcher.last_store_timestamp
        self._commitlog.flush(0)
        if ts:
            self._checkpoint.physic_msg_timestamp = ts
        self._threads.dispatch()
        logics_ts = self._dispatcher.last_store_timestamp
        with self._threads.queue_files_lock:
            # closed while this waited: a close flushed it all, and the checkpoint written now would land
            # after close returned (in a directory another process may have opened, or its user deleted)
            if self._closed:
                raise StoreClosedError()
            for cq in self._queues:
                cq.flush(0)
            if logics_ts:
                self._checkpoint.logics_msg_timestamp = logics_ts
            self._checkpoint.flush()
