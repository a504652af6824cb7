"""MessageStore: the small facade of the embedded store.

    with MessageStore.open(path, StoreConfig(...)) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="TagA", keys="order-1"))
        store.wait_dispatched()
        got = store.get("TopicA", 0, 0, max_count=32)

Opening loads the files, recovers (normally, or abnormally when the ``abort`` marker says the last run
crashed), catches dispatch up, then runs dispatch and flushing on background threads.  ``read_only=True``
opens any store (a real RocketMQ one, a read-only copy, a live directory) in scratch mode: recovery and
dispatch happen in private memory and nothing on disk changes.

This module owns opening and closing (the directory lock, the abort marker), get, replication's append and
read, and the public API.  Its base classes hold the rest of its methods: writes.py (put and put_batch, the
put hot path inlined there, the write gate and fencing), opening.py (loading and recovery, the open path's
typed errors), lookups.py (the look-ups by offset, id, key and time), store_admin.py (dispatch and
durability read-outs, retention, role and run-time settings, flush); store_parts.py declares what they
share.  The rest is in modules that get config values and the pieces they need, never this object:
reads.py (get and the look-ups), background.py (dispatch, clean-up and flush threads), drafting.py and
batch_put.py (what a put checks and drafts), lock.py (the ``lock`` file).  Nothing in store/ imports it
but dump.py and verify.py (which inspect an open store).

Thread-safety: put / put_batch / get / query / look-ups and close may be called from any number of threads.
Subsystems receive config values, never this object.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Self

from rocketstore.errors import StoreClosedError, StoreConfigError
from rocketstore.message.arguments import int_argument
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.record import host_bytes
from rocketstore.store.background import StoreThreads
from rocketstore.store.commitlog import AppendError
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.file_queue import sync_directory
from rocketstore.store.lock import StoreLock
from rocketstore.store.lookups import MAX_TIMESTAMP, StoreLookups
from rocketstore.store.opening import StoreOpening, _hot_memory_bytes, _make_store_dir, _typed_open_error
from rocketstore.store.reads import StoreReader, tag_codes
from rocketstore.store.results import GetResult
from rocketstore.store.store_admin import RUN_TIME_SETTINGS, StoreAdmin
from rocketstore.store.writes import FlushMode, StoreWrites

__all__ = ["MAX_TIMESTAMP", "RUN_TIME_SETTINGS", "FlushMode", "MessageStore"]


class MessageStore(StoreWrites, StoreOpening, StoreLookups, StoreAdmin):
    """The embedded RocketMQ-compatible message store.  Use :meth:`open`."""

    def __init__(self, config: StoreConfig, *, read_only: bool, background: bool,
                 progress: Callable[[int], None] | None = None, index_wanted: bool = True) -> None:
        self.config = config
        self.read_only = read_only
        self._index_wanted = index_wanted
        self._writable = not read_only
        self._closed = False
        #: (min, max, flushed) commitlog offsets as close found them: the read-outs' answers once closed
        self._offsets_at_close = (0, 0, 0)
        self._close_lock = threading.Lock()
        #: the ident of the thread running close, while it does (a listener it calls may call close again)
        self._closing_thread: int | None = None
        self._fenced: str | None = None
        #: one flag for the put fast path: closed, fenced, read-only or slave
        self._refuse_writes = read_only or config.broker_role == BrokerRole.SLAVE
        self._lock = StoreLock()
        self._store_host = parse_host(config.store_host)
        #: both hosts as records store them, packed once (the put path's default born and store host)
        self._store_host_bytes = host_bytes(self._store_host)
        self._max_message_bytes = config.max_message_size
        #: (host, host_bytes(host)) of the last explicit host a put carried: a broker's messages repeat it
        self._last_host: tuple[HostAddress | None, bytes] = (None, b"")
        #: (topic, queue_id) of the last single put: a producer's puts repeat a few queues
        self._last_queue_key: tuple[str, int] = ("", -1)
        self._delay_levels = config.delay_levels_ms()
        self._max_delay_level = max(self._delay_levels)
        self._memory_for_hot_bytes = _hot_memory_bytes(config)
        root = config.store_path_root_dir
        if self._writable:
            _make_store_dir("storePathRootDir", root)
            try:
                self._lock.acquire(root)
            except OSError as exc:
                typed = _typed_open_error(exc, root)
                if typed is not None:
                    raise typed from exc
                raise
            # as 4.9.3's DefaultMessageStore makes them at once: a new broker's disk ratios are not -1
            for key, directory in (("storePathCommitLog", config.commit_log_dir),
                                   ("storePathRootDir", config.consume_queue_dir)):
                try:
                    _make_store_dir(key, directory)
                except (OSError, StoreConfigError):
                    self._lock.release()
                    raise
        try:
            self._open_files(progress)
        except BaseException as exc:
            self._lock.release()
            typed = _typed_open_error(exc, root)
            if typed is not None:
                raise typed from exc
            raise
        self._reader = StoreReader(config, self._commitlog, self._queues, self._index, self._memory_for_hot_bytes)
        self._threads = StoreThreads(config, self._commitlog, self._queues, self._checkpoint, self._dispatcher,
                                     self._cleaner, fence=self._fence, update_refuse_writes=self._update_refuse_writes)
        if self._dispatcher.io_error is not None:
            self._update_refuse_writes()  # opened on a full disk: refused until the dispatcher can write again
        if self._writable:
            try:
                with open(self._abort_path, "wb"):
                    pass
                # durable before the first put: a marker a power loss takes away makes the next open take
                # this run for a clean one (its tails trusted to be zero, nothing it wrote checked)
                sync_directory(root)
            except BaseException as exc:
                # the files are open and the lock held: a failed open must leave neither behind
                try:
                    self._close_files(clean=False)
                except Exception as cleanup_exc:  # noqa: BLE001 - the open's own error is the one to report
                    exc.add_note(f"(closing the half-open store also failed: {cleanup_exc!r})")
                typed = _typed_open_error(exc, root)
                if typed is not None:
                    raise typed from exc
                raise
            if background:
                self._threads.start()

    # --- opening (loading and recovery: opening.py) ------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, config: StoreConfig | None = None, *,
             read_only: bool = False, background: bool = True,
             progress: Callable[[int], None] | None = None, index_wanted: bool = True) -> MessageStore:
        """Open (creating if needed) the store at *path*; ``read_only`` opens in scratch mode.
        ``index_wanted=False``: the caller never queries by key (a scan), so index files that
        messageIndexEnable=false leaves unread for their size are no warning (logged at DEBUG)."""
        config = config or StoreConfig()
        if path is not None:
            config = config.replace(store_path_root_dir=os.fspath(path))
        return cls(config, read_only=read_only, background=background and not read_only, progress=progress,
                   index_wanted=index_wanted)

    # --- reading (store/reads.py; the look-ups: lookups.py) -------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError()

    tag_codes = staticmethod(tag_codes)

    def get(self, topic: str, queue_id: int, queue_offset: int, max_count: int = 32, *,
            tags: str | frozenset[int] | set[int] | None = None,
            match: Callable[[Mapping[str, str]], bool] | None = None) -> GetResult:
        """RocketMQ's getMessage: up to *max_count* records from *queue_offset*, with its statuses;
        *match* filters by the records' properties (see StoreReader.get)."""
        return self._reader.get(topic, queue_id, queue_offset, max_count, tags=tags, match=match)

    # --- replication ----------------------------------------------------------------------------------------

    def append_replica(self, offset: int, data: bytes | memoryview) -> int:
        """A slave's write path: commitlog bytes from the master laid down at *offset* (the written end);
        returns the new end.  The dispatcher builds consume queues and index from them as from puts.
        Raises StoreClosedError on a closed or fenced store (or one whose dispatcher failed), PermissionError
        on a read-only one, ValueError when *offset* is not the end."""
        if self._closed or self._fenced is not None or self._dispatcher.io_error is not None:
            raise StoreClosedError()
        if not self._writable:  # (its scratch mappings took the bytes, and the store's end moved past them)
            raise PermissionError("a read-only store takes no replica bytes")
        try:
            end = self._commitlog.append_replica(offset, data)
        except AppendError as exc:
            if exc.kind == "SERVICE_NOT_AVAILABLE":  # closed meanwhile
                raise StoreClosedError() from exc
            raise
        threads = self._threads
        if threads.group_commit is not None:
            threads.group_commit.request(end)
        threads.wake_dispatch()
        return end

    def count_replicated(self) -> dict[str, list[int]]:
        """From now on, count the records dispatched from replicated bytes (a slave's): the returned
        topic -> [records, bytes], written by the dispatch thread (read it with ``list(d.values())``)."""
        dispatcher = self._dispatcher
        if dispatcher.replica_counts is None:
            dispatcher.replica_counts = {}
        return dispatcher.replica_counts

    def read_replica(self, offset: int, max_bytes: int) -> bytes:
        """A master's read for its slaves: up to *max_bytes* commitlog bytes from *offset*, within one
        segment (empty when nothing is written there yet)."""
        offset = int_argument("offset", offset)
        max_bytes = int_argument("max_bytes", max_bytes)
        self._check_open()
        return self._commitlog.read_chunk(offset, max_bytes)

    # --- closing ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop background work, flush everything and remove the abort marker (a clean shutdown).  Any
        number of threads may call it: one closes, the others wait for it and return.  A dispatch or
        durable listener may call it: on this store's dispatch or group-commit thread it returns at once and
        a thread of its own closes the store (a later close() from elsewhere waits for that); on another
        store's thread it closes the store before it returns; called from a listener that close itself runs,
        it returns and the close under way finishes."""
        # run concurrently, two closes would flush and unmap the same files and close the lock file's
        # descriptor twice (the second os.close may hit a descriptor the process has reused meanwhile)
        if self._closing_thread == threading.get_ident():
            # a listener close runs (dispatch in its flush, the group commit's last call) closing the store:
            # the close under way finishes it (waiting for itself, this call hung for ever)
            return
        if self._threads.is_own_thread():
            # a listener on one of this store's threads: close cannot join the thread it runs on (RuntimeError,
            # the store left refusing writes, locked and not closed); a thread of its own closes it meanwhile.
            # (On another store's thread, a listener there closing this store, close runs here and now.)
            threading.Thread(target=self.close, name="rocketstore-close").start()
            return
        with self._close_lock:
            if not self._closed:
                self._closing_thread = threading.get_ident()
                try:
                    self._close()
                finally:
                    self._closing_thread = None

    def _close(self) -> None:
        # no append after this one: a put racing close is refused (SERVICE_NOT_AVAILABLE), not written
        # after the closing flush, past the dispatch that decides the abort marker, or into closed files
        self._commitlog.refuse_further_appends()
        self._refuse_writes = True
        self._threads.stop()
        gc = self._threads.group_commit
        clean = False
        if self._writable and self._fenced is None:
            try:
                if gc is not None:
                    # RocketMQ's group commit syncs once more on shutdown: puts waiting for theirs (nothing is
                    # appended now) learn they are durable (PUT_OK), not that the flusher went away
                    gc.wait_durable(self._commitlog.max_offset, self.config.sync_flush_timeout_ms / 1000)
                    gc.stop()
                self.flush()
                if self._index is not None:
                    self._index.flush()
                clean = self._threads.dispatch_caught_up()
            except OSError as exc:
                self._fence(exc)
        elif gc is not None:
            gc.stop()
        commitlog = self._commitlog
        self._offsets_at_close = (commitlog.min_offset, commitlog.max_offset, commitlog.flushed_offset)
        self._closed = True
        self._reader.closed = True
        self._refuse_writes = True
        # a flush() or retention pass from another thread either ends before the files close or, waiting for
        # this lock, finds the store closed (StoreClosedError): none writes or deletes a file after close
        with self._threads.queue_files_lock:
            self._close_files(clean=clean)

    def _close_files(self, clean: bool) -> None:
        self._commitlog.close()
        self._queues.close()
        if self._index is not None:
            self._index.close()
        if clean and self._writable:
            try:
                os.unlink(self._abort_path)
            except FileNotFoundError:
                pass
            try:
                # everything is synced (flush above): after a power loss the next open need not recover
                sync_directory(self.config.store_path_root_dir)
            except OSError:
                pass  # the removal may be lost: the next open recovers as after a crash, nothing worse
        self._lock.release()

    def __enter__(self) -> Self:
        self._check_open()  # a closed store entered again would answer every read with StoreClosedError
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals for dump / verify / tests (same package) ---------------------------------------------

    @property
    def store_host(self) -> HostAddress:
        return self._store_host
