"""MessageStore: the small facade of the embedded store.

    with MessageStore.open(path, StoreConfig(...)) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="TagA", keys="order-1"))
        store.wait_dispatched()
        got = store.get("TopicA", 0, 0, max_count=32)

Opening loads the files, recovers (normally, or abnormally when the ``abort`` marker says the last run
crashed), catches dispatch up, then runs dispatch and flushing on background threads.  ``read_only=True``
opens any store (a real RocketMQ one, a read-only copy, a live directory) in scratch mode: recovery and
dispatch happen in private memory and nothing on disk changes.

Thread-safety: put / put_batch / get / query / look-ups may be called from any number of threads.
Subsystems receive config values, never this object.
"""

from __future__ import annotations

import dataclasses
import fcntl
import mmap
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Self

from rocketstore.errors import (
    InvalidTopicError,
    MessageDecodeError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
    StoreClosedError,
    StoreLockedError,
)
from rocketstore.message.batch import MessageBatch
from rocketstore.message.batch_draft import BatchDraft
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import NAME_VALUE_SEPARATOR as _NAME_VALUE_SEPARATOR
from rocketstore.message.properties import PROPERTY_FORMATS as _PROPERTY_FORMATS
from rocketstore.message.properties import PROPERTY_SEPARATOR as _PROPERTY_SEPARATOR
from rocketstore.message.properties import (
    PropertyName,
    encode_properties,
    properties_format,
)
from rocketstore.message.record import (
    BLANK_MAGIC,
    Message,
    RecordDraft,
    StoredMessage,
    SysFlag,
    decode_record,
    draft_message,
    host_bytes,
    store_timestamp_position,
    validate_topic,
)
from rocketstore.store.batch_put import BatchMeta, delay_level, draft_message_batch, draft_message_list
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.cleanup import Cleaner, CleanReport
from rocketstore.store.commitlog import AppendError, CommitLog
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.consume_queue import ConsumeQueue, ConsumeQueueTable
from rocketstore.store.dispatch import SCHEDULE_TOPIC, Dispatcher
from rocketstore.store.flush import AsyncFlusher, GroupCommit
from rocketstore.store.index_file import IndexService
from rocketstore.store.recovery import RecoveryReport, recover
from rocketstore.store.results import GetMessageStatus, GetResult, PutMessageStatus, PutResult, QueryResult

__all__ = ["MAX_TIMESTAMP", "MessageStore"]

MAX_TIMESTAMP = (1 << 63) - 1
_DELAY = PropertyName.DELAY
_TAGS = PropertyName.TAGS
_KEYS = PropertyName.KEYS
_UNIQ_KEY = PropertyName.UNIQ_KEY
_WAIT = PropertyName.WAIT
_PUT_OK = PutMessageStatus.PUT_OK
_PREPARED_BIT = SysFlag.TRANSACTION_PREPARED_TYPE
_crc32 = zlib.crc32
_join = b"".join
_PROPERTY_FORMATS_GET = _PROPERTY_FORMATS.get
#: tags -> tagsCode of the tags the put path has seen (a producer repeats a few): tags_code without a call
_TAG_CODES: dict[str, int] = {}
_TAG_CODES_GET = _TAG_CODES.get
_new_tuple = tuple.__new__
_PAGE_CACHE_BUSY_CEILING_MS = 10_000_000
_LOCKED_PATHS: set[str] = set()
_LOCKED_PATHS_GUARD = threading.Lock()


def _total_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


def _lock_first_byte(fd: int) -> None:
    """Exclusive lock on byte 0 of the lock file, conflicting with a Java broker's FileChannel.tryLock(0, 1).

    On Linux an open-file-description lock: a classic POSIX record lock (lockf) is dropped as soon as the
    process closes ANY descriptor of the file, e.g. a backup tool reading it in-process.  OFD and POSIX
    locks on the same byte still conflict, so the Java broker stays locked out.  Raises OSError if held.
    """
    ofd_setlk = getattr(fcntl, "F_OFD_SETLK", None)
    if ofd_setlk is None:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        return
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padded to its C size
    fcntl.fcntl(fd, ofd_setlk, struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


class MessageStore:
    """The embedded RocketMQ-compatible message store.  Use :meth:`open`."""

    def __init__(self, config: StoreConfig, *, read_only: bool, background: bool,
                 progress: Callable[[int], None] | None = None) -> None:
        self.config = config
        self.read_only = read_only
        self._writable = not read_only
        self._closed = False
        self._fenced: str | None = None
        #: one flag for the put fast path: closed, fenced, read-only or slave
        self._refuse_writes = read_only or config.broker_role == BrokerRole.SLAVE
        self._lock_fd = -1
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
        self._memory_for_hot_bytes = int(_total_memory_bytes() * config.access_message_in_memory_max_ratio / 100)
        root = config.store_path_root_dir
        if self._writable:
            os.makedirs(root, exist_ok=True)
            self._acquire_lock(root)
        try:
            self._open_files(progress)
        except BaseException:
            self._release_lock()
            raise
        self._threads_stop = threading.Event()
        #: a lock used as a binary semaphore: released (by a put, a sync or close) = dispatch has work.
        #: Lock.acquire/release are C calls; threading.Event's Python-level Condition cost each put ~5 µs
        #: and each wake-up of the dispatch thread more (measured on the broker's one-at-a-time sends).
        self._dispatch_wake = threading.Lock()
        self._dispatch_wake.acquire()
        self._dispatch_idle = False
        #: sync flush: the dispatcher sleeps with this flag up instead, so that puts (whose records are not
        #: durable yet) do not wake it for nothing; the group commit wakes it for durable records
        self._dispatch_waits_for_sync = False
        self._dispatch_thread: threading.Thread | None = None
        self._flusher: AsyncFlusher | None = None
        self._group_commit: GroupCommit | None = None
        if self._writable:
            with open(self._abort_path, "wb"):
                pass
            if background:
                self._start_background()

    # --- opening -----------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, config: StoreConfig | None = None, *,
             read_only: bool = False, background: bool = True,
             progress: Callable[[int], None] | None = None) -> MessageStore:
        """Open (creating if needed) the store at *path*; ``read_only`` opens in scratch mode."""
        config = config or StoreConfig()
        if path is not None:
            config = config.replace(store_path_root_dir=os.fspath(path))
        return cls(config, read_only=read_only, background=background and not read_only, progress=progress)

    @property
    def _abort_path(self) -> str:
        return os.path.join(self.config.store_path_root_dir, "abort")

    def _acquire_lock(self, root: str) -> None:
        path = os.path.join(root, "lock")
        real = os.path.realpath(path)
        with _LOCKED_PATHS_GUARD:
            if real in _LOCKED_PATHS:
                raise StoreLockedError(root)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _lock_first_byte(fd)
            except OSError as exc:
                os.close(fd)
                raise StoreLockedError(root) from exc
            os.pwrite(fd, b"lock", 0)
            _LOCKED_PATHS.add(real)
            self._lock_fd = fd
            self._lock_real = real

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            with _LOCKED_PATHS_GUARD:
                _LOCKED_PATHS.discard(self._lock_real)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _open_files(self, progress: Callable[[int], None] | None) -> None:
        cfg = self.config
        w = self._writable
        root = cfg.store_path_root_dir
        self.last_exit_ok = not os.path.exists(self._abort_path)
        self._commitlog = CommitLog(cfg.commit_log_dir, cfg.mapped_file_size_commit_log, writable=w,
                                    preallocate=cfg.preallocate_commit_log, warm=cfg.warm_mapped_file_enable)
        self._queues = ConsumeQueueTable(cfg.consume_queue_dir, cfg.consume_queue_file_bytes, writable=w)
        self._checkpoint = Checkpoint(os.path.join(root, "checkpoint"), writable=w)
        self._index: IndexService | None = None
        if cfg.message_index_enable:
            self._index = IndexService(cfg.index_dir, cfg.max_hash_slot_num, cfg.max_index_num, writable=w)
            self._index.on_file_full.append(self._on_index_file_full)
        try:
            self._commitlog.files.load(allow_short_tail=True)
            self._queues.load()
            if self._index is not None:
                self._index.load(self.last_exit_ok, self._checkpoint.index_msg_timestamp)
            self._dispatcher = Dispatcher(self._commitlog, self._queues, self._index, self._delay_levels)
            self.recovery: RecoveryReport = recover(
                self._commitlog, self._queues, self._dispatcher, self._checkpoint,
                abnormal=not self.last_exit_ok, check_crc=cfg.check_crc_on_recover,
                index_safe=cfg.message_index_safe, progress=progress)
            self._rebuild_queue_offsets()
            self._dispatcher.reput_offset = max(self._queues.max_physic_offset(), self._commitlog.min_offset)
            self._dispatcher.dispatch_available()
            self._rebuild_queue_offsets()
            self._cleaner = Cleaner(self._commitlog, self._queues, self._index,
                                    file_reserved_time_h=cfg.file_reserved_time_h, delete_when=cfg.delete_when,
                                    disk_max_used_space_ratio=cfg.disk_max_used_space_ratio,
                                    clean_file_forcibly_enable=cfg.clean_file_forcibly_enable)
            self._commitlog.segment_guard = self._segment_guard
            self._commitlog.lock_wait_s = cfg.os_page_cache_busy_timeout_ms / 1000
        except BaseException as exc:
            try:
                self._close_files(clean=False)
            except Exception as cleanup_exc:  # noqa: BLE001 - the open's own error is the one to report
                exc.add_note(f"(closing the half-open store also failed: {cleanup_exc!r})")
            raise

    def _rebuild_queue_offsets(self) -> None:
        min_offset = self._commitlog.min_offset
        table: dict[tuple[str, int], int] = {}
        for cq in self._queues:
            table[(cq.topic, cq.queue_id)] = cq.max_offset
            cq.correct_min_offset(min_offset)
        self._commitlog.queue_offsets = table

    def _on_index_file_full(self, end_timestamp: int) -> None:
        self._checkpoint.index_msg_timestamp = end_timestamp
        self._checkpoint.flush()

    # --- background work ----------------------------------------------------------------------------

    def _start_background(self) -> None:
        cfg = self.config
        if cfg.is_sync_flush:
            self._group_commit = GroupCommit(self._sync_commit_log, self._fence, on_durable=self._wake_dispatch)
            self._group_commit.start(self._commitlog.max_offset)
        # Consume queues and the checkpoint are flushed on their own schedule in both modes; in sync-flush
        # mode the commitlog step has nothing left to do but move the checkpoint's physic timestamp.
        self._flusher = AsyncFlusher(
            interval_s=cfg.flush_interval_commit_log_ms / 1000, commit_log_step=self._flush_commit_log_step,
            queues_step=self._flush_queues_step,
            thorough_commit_log_s=cfg.flush_commit_log_thorough_interval_ms / 1000,
            queues_interval_s=cfg.flush_interval_consume_queue_ms / 1000,
            thorough_queues_s=cfg.flush_consume_queue_thorough_interval_ms / 1000, on_failure=self._fence)
        self._flusher.start()
        self._dispatch_thread = threading.Thread(target=self._dispatch_loop, name="rocketstore-dispatch",
                                                 daemon=True)
        self._dispatch_thread.start()
        self._clean_thread = threading.Thread(target=self._clean_loop, name="rocketstore-clean", daemon=True)
        self._clean_thread.start()

    def _clean_loop(self) -> None:
        interval_s = self.config.clean_resource_interval_ms / 1000
        next_clean = time.monotonic() + max(interval_s, 60.0)  # RocketMQ's first clean-up runs after 60 s
        while not self._threads_stop.wait(min(interval_s, 10.0)):
            self._cleaner.check_disk()
            self._update_refuse_writes()
            if time.monotonic() >= next_clean:
                next_clean = time.monotonic() + interval_s
                try:
                    self._cleaner.run()
                except OSError as exc:
                    self._fence(exc)

    def _dispatch_bound(self) -> int:
        gc = self._group_commit
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
        stop = self._threads_stop
        dispatcher = self._dispatcher
        wake = self._dispatch_wake
        sync_flush = self._group_commit is not None
        while not stop.is_set():
            failing = dispatcher.io_error is not None
            count = dispatcher.dispatch_available(self._dispatch_bound())
            if count >= busy_records:
                if self._dispatch_bound() - dispatcher.reput_offset < backlog_bytes:
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
                        self._dispatch_idle = True
                    woken = False
                    if dispatcher.reput_offset >= self._dispatch_bound():
                        woken = wake.acquire(True, 0.1)
                    self._dispatch_idle = self._dispatch_waits_for_sync = False
                    wake.acquire(False)  # consume a wake-up that came meanwhile: its record is seen below
                    if woken and len(self._commitlog.facts) < gather_records and not stop.is_set():
                        time.sleep(gather_s)
            if failing != (dispatcher.io_error is not None):
                self._update_refuse_writes()

    def _release_dispatch(self) -> None:
        try:
            self._dispatch_wake.release()
        except RuntimeError:
            pass  # already released: one wake-up is enough

    def _wake_dispatch(self) -> None:
        if self._dispatch_idle or self._dispatch_waits_for_sync:
            self._release_dispatch()

    def _sync_commit_log(self) -> int:
        end = self._commitlog.max_offset
        ts = self._commitlog.last_store_timestamp
        self._commitlog.flush(0)
        if ts:
            self._checkpoint.physic_msg_timestamp = ts
        return end

    def _flush_commit_log_step(self, thorough: bool) -> None:
        if self._group_commit is not None:
            return  # group commit keeps the commitlog durable and the physic timestamp current
        ts = self._commitlog.last_store_timestamp
        self._commitlog.flush(0 if thorough else self.config.flush_commit_log_least_pages)
        if thorough and ts:
            self._checkpoint.physic_msg_timestamp = ts

    def _flush_queues_step(self, thorough: bool) -> None:
        logics_ts = self._dispatcher.last_store_timestamp
        least = 0 if thorough else self.config.flush_consume_queue_least_pages
        for cq in self._queues:
            cq.flush(least)
        if thorough:
            if logics_ts:
                self._checkpoint.logics_msg_timestamp = logics_ts
            self._checkpoint.flush()

    def _fence(self, exc: BaseException) -> None:
        self._fenced = f"{type(exc).__name__}: {exc}"
        self._refuse_writes = True

    def _segment_guard(self) -> str | None:
        self._cleaner.check_disk()
        self._update_refuse_writes()
        return "SERVICE_NOT_AVAILABLE" if self._cleaner.disk_full else None

    def _update_refuse_writes(self) -> None:
        self._refuse_writes = (self._closed or not self._writable or self._fenced is not None
                               or self.config.broker_role == BrokerRole.SLAVE or self._cleaner.disk_full
                               or self._dispatcher.io_error is not None)

    # --- writing --------------------------------------------------------------------------------------------

    def _write_gate(self) -> PutMessageStatus | None:
        if (self._closed or not self._writable or self._fenced is not None or self._cleaner.disk_full
                or self._dispatcher.io_error is not None):
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if self.config.broker_role == BrokerRole.SLAVE:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        begin = self._commitlog.lock_begin_ms
        if begin:
            held = int(time.time() * 1000) - begin
            if self.config.os_page_cache_busy_timeout_ms < held < _PAGE_CACHE_BUSY_CEILING_MS:
                return PutMessageStatus.OS_PAGECACHE_BUSY
        return None

    def _apply_delay(self, message: Message) -> Message:
        props = message.properties
        delay = props.get(PropertyName.DELAY)
        if delay is None or message.sys_flag & SysFlag.TRANSACTION_MASK not in (0, SysFlag.TRANSACTION_COMMIT_TYPE):
            return message
        try:
            level = int(delay)
        except ValueError:
            return message
        if level <= 0:
            return message
        level = min(level, self._max_delay_level)
        new_props = dict(props)
        new_props[PropertyName.REAL_TOPIC] = message.topic
        new_props[PropertyName.REAL_QID] = str(message.queue_id)
        return dataclasses.replace(message, topic=SCHEDULE_TOPIC, queue_id=level - 1, properties=new_props)

    def _host_bytes(self, host: HostAddress) -> bytes:
        """``host_bytes(host)``, remembered for the last host seen (thread-safe: one tuple swapped whole)."""
        last = self._last_host
        if last[0] is host:
            return last[1]
        packed = host_bytes(host)
        self._last_host = (host, packed)
        return packed

    def _draft(self, message: Message, props_text: str) -> RecordDraft | PutMessageStatus:
        """Validate and pre-encode; RocketMQ's status when the message cannot be stored."""
        try:
            if len(props_text) > 32767 or len(message.topic) > 127:
                return PutMessageStatus.MESSAGE_ILLEGAL
            if not 0 <= message.queue_id <= 0x7FFFFFFF:
                return PutMessageStatus.MESSAGE_ILLEGAL
            born = message.born_host
            store = message.store_host
            return draft_message(message, props_text.encode("utf-8"),
                                 self._store_host_bytes if born is None else self._host_bytes(born),
                                 self._store_host_bytes if store is None else self._host_bytes(store),
                                 self.config.max_message_size)
        except PropertiesTooLargeError:
            return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        except (MessageTooLargeError, InvalidTopicError, MessageFieldError):
            return PutMessageStatus.MESSAGE_ILLEGAL
        except (OverflowError, ValueError, TypeError, AttributeError, struct.error):
            return PutMessageStatus.MESSAGE_ILLEGAL

    @staticmethod
    def _properties_text(props: dict[str, str]) -> str | PutMessageStatus:
        try:
            return encode_properties(props) if props else ""
        except (OverflowError, ValueError, TypeError, AttributeError, struct.error):
            return PutMessageStatus.MESSAGE_ILLEGAL

    @staticmethod
    def _fact_meta(topic: str, props: dict[str, str], props_text: str
                   ) -> tuple[str, int, str | None, str | None] | None:
        """(topic, tags_code, uniq_key, keys) for the dispatcher, read from the dict the writer has; None
        (the dispatcher decodes the record) when the dict may not say what the stored string says:
        a separator inside a name or value, a None value, or a schedule-topic record (whose tagsCode is
        its delivery time)."""
        if not props:
            return (topic, 0, None, None)
        n = len(props)
        if props_text.count(_NAME_VALUE_SEPARATOR) != n or props_text.count(_PROPERTY_SEPARATOR) != n - 1 \
                or topic == SCHEDULE_TOPIC:
            return None
        tags = props.get(PropertyName.TAGS)
        return (topic, tags_code(tags) if tags else 0, props.get(PropertyName.UNIQ_KEY) or None,
                props.get(PropertyName.KEYS))

    def put(self, message: Message, *, apply_delay: bool = True) -> PutResult:
        """Append one message.  Returns PUT_OK with its offsets, or RocketMQ's status for why not.

        ``apply_delay=False`` stores a message carrying DELAY in its own topic and queue: the schedule
        service's delivery, whose record keeps DELAY in its properties as RocketMQ's does (RocketMQ clears
        DELAY from the property map it checks, not from the properties string it writes).
        """
        if self._refuse_writes or self._commitlog.lock_begin_ms:
            gate = self._write_gate()
            if gate is not None:
                return PutResult(gate)
        if apply_delay and _DELAY in message.properties:
            # RocketMQ checks the topic the producer named before the delay moves it to SCHEDULE_TOPIC_XXXX
            try:
                validate_topic(message.topic)
            except (InvalidTopicError, TypeError):
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=str(message.topic), queue_id=message.queue_id)
            message = self._apply_delay(message)
        props = message.properties
        topic = message.topic
        queue_id = message.queue_id
        # the dispatch facts (tags code, uniq key, keys): taken from the dict when it says what the stored
        # string says (no separator inside a name or value, no None value; not a schedule-topic record,
        # whose tagsCode is its delivery time), else facts=False and the dispatcher decodes the record
        facts = True
        tags_hash = 0
        uniq_key = keys = None
        if props:
            # encode_properties inlined (the put hot path): the cached Java-HashMap-order format, filled
            # when every value is a str; anything else goes through encode_properties itself
            names = tuple(props)
            shape = _PROPERTY_FORMATS_GET(names) or properties_format(names)
            props_text = None
            if shape is not None:
                values = shape[1](props)
                try:
                    joined = "".join(values)  # type: ignore[arg-type]
                except TypeError:  # a None value (skipped) or one that is not a str (refused)
                    pass
                else:
                    props_text = shape[0] % values
                    facts = shape[2] and _NAME_VALUE_SEPARATOR not in joined and _PROPERTY_SEPARATOR not in joined \
                        and topic != SCHEDULE_TOPIC
            if props_text is None:
                try:
                    props_text = encode_properties(props)
                except (OverflowError, ValueError, TypeError, AttributeError):
                    return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
                n = len(props)
                facts = props_text.count(_NAME_VALUE_SEPARATOR) == n \
                    and props_text.count(_PROPERTY_SEPARATOR) == n - 1 and topic != SCHEDULE_TOPIC
            if facts:
                tags = props.get(_TAGS)
                if tags:
                    code = _TAG_CODES_GET(tags)
                    if code is None:
                        code = tags_code(tags)
                        if len(_TAG_CODES) < 4096:
                            _TAG_CODES[tags] = code
                    tags_hash = code
                uniq_key = props.get(_UNIQ_KEY) or None
                keys = props.get(_KEYS)
        else:
            props_text = ""
        # _draft inlined (the put hot path): the same checks, in the same order
        try:
            if len(props_text) > 32767 or len(topic) > 127 or not 0 <= queue_id <= 0x7FFFFFFF:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
            store_host = message.store_host
            born_host = message.born_host
            draft = draft_message(message, props_text.encode(),
                                  self._store_host_bytes if born_host is None else self._host_bytes(born_host),
                                  self._store_host_bytes if store_host is None else self._host_bytes(store_host),
                                  self._max_message_bytes)
        except PropertiesTooLargeError:
            return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, topic=topic, queue_id=queue_id)
        except (MessageTooLargeError, InvalidTopicError, MessageFieldError, OverflowError, ValueError, TypeError,
                AttributeError, struct.error):
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
        size = draft[1]
        sys_flag = draft[5]
        # NOT (0) and COMMIT (8) records take a queue offset, PREPARED (4) and ROLLBACK (12) do not: bit 4.
        # The last queue's key is reused: the queue-offset table then finds its own key object (no tuple
        # to build, hash twice and compare item by item per put)
        queue_key = self._last_queue_key
        if queue_key[1] != queue_id or queue_key[0] != topic:
            queue_key = self._last_queue_key = (topic, queue_id)
        try:
            offset, queue_offset, ts = self._commitlog.append(
                draft, None if sys_flag & _PREPARED_BIT else queue_key,
                message.store_timestamp, topic if facts else None, tags_hash, uniq_key, keys)
        except AppendError as exc:
            return PutResult(PutMessageStatus[exc.kind], remark=str(exc))
        except struct.error:
            # a field the checks above let through that is no int (a float born timestamp): nothing was
            # appended (the record's end did not move), as RocketMQ refuses a message it cannot encode
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
        except (OSError, ValueError, IndexError) as exc:
            self._fence(exc)
            return PutResult(PutMessageStatus.UNKNOWN_ERROR, remark=str(exc))
        if self._dispatch_idle:
            self._release_dispatch()
        status = _PUT_OK
        if self._group_commit is not None:
            status = self._await_durable(offset + size, props.get(_WAIT))
        # PutResult(...) without the namedtuple's Python-level __new__: every field, in order
        return _new_tuple(PutResult, (status, offset, size, queue_offset, ts, 1, topic, queue_id, "",
                                      store_host or self._store_host, ()))

    def _await_durable(self, end_offset: int, wait: str | None) -> PutMessageStatus:
        gc = self._group_commit
        if gc is None:
            return PutMessageStatus.PUT_OK
        if wait is not None and wait.lower() == "false":
            gc.request(end_offset)
            return PutMessageStatus.PUT_OK
        if gc.wait_durable(end_offset, self.config.sync_flush_timeout_ms / 1000):
            return PutMessageStatus.PUT_OK
        if gc.failed is not None:
            return PutMessageStatus.UNKNOWN_ERROR
        return PutMessageStatus.FLUSH_DISK_TIMEOUT

    def put_batch(self, messages: Iterable[Message] | MessageBatch) -> PutResult:
        """Append messages of one topic and queue contiguously, with consecutive queue offsets.

        As RocketMQ: a batch holds no delayed or transactional messages (MESSAGE_ILLEGAL otherwise) and
        must fit within maxMessageSize as a whole.  A :class:`MessageBatch` (what a broker's batch send
        carries) is stored as RocketMQ stores a MessageExtBatch: each entry's properties bytes as given, then
        the batch's properties string.
        """
        gate = self._write_gate()
        if gate is not None:
            return PutResult(gate)
        if isinstance(messages, MessageBatch):
            return self._put_message_batch(messages)
        batch = list(messages)
        if not batch:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
        prepared = self._draft_messages(batch)
        if prepared is None:
            # something in the batch is refused (or unusual): the message-by-message checks say what, as
            # they always have
            return self._put_batch_checked(batch)
        draft, meta = prepared
        first = batch[0]
        return self._append_batch(draft, draft.sizes, first.topic, first.queue_id, first.store_timestamp, meta,
                                  first.store_host)

    def _draft_messages(self, batch: list[Message]) -> tuple[BatchDraft, BatchMeta | None] | None:
        """:func:`draft_message_list` with this store's hosts and size limit."""
        return draft_message_list(batch, self._store_host_bytes, self._host_bytes, self._max_message_bytes)

    def _put_message_batch(self, batch: MessageBatch) -> PutResult:
        """put_batch of a MessageBatch: RocketMQ's putMessages of a MessageExtBatch."""
        drafted = draft_message_batch(batch, self._store_host_bytes, self._host_bytes, self._max_message_bytes)
        if isinstance(drafted, PutResult):
            return drafted
        draft, meta = drafted
        return self._append_batch(draft, draft.sizes, batch.topic, batch.queue_id, batch.store_timestamp, meta,
                                  batch.store_host)

    def _append_batch(self, draft: BatchDraft | list[RecordDraft], sizes: list[int], topic: str, queue_id: int,
                      store_timestamp: int | None,
                      meta: BatchMeta | None, store_host: HostAddress | None) -> PutResult:
        """Place a drafted batch (*sizes*: its records') and answer for it: the end of every put_batch path."""
        total = sum(sizes)
        if total > self._max_message_bytes:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"batch of {total} bytes exceeds maxMessageSize")
        try:
            offset, queue_offset, ts = self._commitlog.append_batch(draft, (topic, queue_id), store_timestamp, meta)
        except AppendError as exc:
            return PutResult(PutMessageStatus[exc.kind], remark=str(exc))
        except (OSError, ValueError, IndexError) as exc:
            self._fence(exc)
            return PutResult(PutMessageStatus.UNKNOWN_ERROR, remark=str(exc))
        if self._dispatch_idle:
            self._release_dispatch()
        status = self._await_durable(offset + total, None) if self._group_commit is not None else _PUT_OK
        return _new_tuple(PutResult, (status, offset, total, queue_offset, ts, len(sizes), topic, queue_id, "",
                                      store_host or self._store_host, tuple(sizes)))

    def _put_batch_checked(self, batch: list[Message]) -> PutResult:
        """put_batch message by message: each message drafted and checked in turn, so that a refused batch
        is answered with the status of its first refused message (the order RocketMQ checks in)."""
        topic, queue_id = batch[0].topic, batch[0].queue_id
        drafts: list[RecordDraft] = []
        sizes: list[int] = []
        metas: list[tuple[str, int, str | None, str | None]] | None = []
        draft_of = self._draft
        for message in batch:
            if message.topic != topic or message.queue_id != queue_id:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="a batch has one topic and queue")
            if type(message.born_timestamp) is not int or type(queue_id) is not int:
                # caught here, not by the writer: a batch's records are written one after another, and a
                # field that cannot be packed half way would leave whole records past the write position
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
            props = message.properties
            if message.sys_flag & SysFlag.TRANSACTION_MASK or (props.get(_DELAY) is not None
                                                               and delay_level(props) > 0):
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="no delayed or transactional batches")
            if props:
                try:
                    props_text = encode_properties(props)
                except (OverflowError, ValueError, TypeError, AttributeError, struct.error):
                    return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
            else:
                props_text = ""
            draft = draft_of(message, props_text)
            if draft.__class__ is PutMessageStatus:
                return PutResult(draft, topic=topic, queue_id=queue_id)  # type: ignore[arg-type]
            if metas is not None:
                # _fact_meta inlined
                if not props:
                    metas.append((topic, 0, None, None))
                elif props_text.count(_NAME_VALUE_SEPARATOR) == len(props) \
                        and props_text.count(_PROPERTY_SEPARATOR) == len(props) - 1 and topic != SCHEDULE_TOPIC:
                    tags = props.get(_TAGS)
                    metas.append((topic, tags_code(tags) if tags else 0, props.get(_UNIQ_KEY) or None,
                                  props.get(_KEYS)))
                else:
                    metas = None
            sizes.append(draft[1])  # type: ignore[index]
            drafts.append(draft)  # type: ignore[arg-type]
        meta = None
        if metas is not None:
            meta = (topic, [m[1] for m in metas], [m[2] for m in metas], [m[3] for m in metas])
        return self._append_batch(drafts, sizes, topic, queue_id, batch[0].store_timestamp, meta,
                                  batch[0].store_host)

    # --- reading -----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError()

    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get(topic, queue_id)

    @staticmethod
    def tag_codes(expression: str | None) -> frozenset[int] | None:
        """Codes of a subscription expression ``"a || b"``; None for ``*`` / empty (everything matches)."""
        if expression is None:
            return None
        text = expression.strip()
        if not text or text == "*":
            return None
        from rocketstore.message.hashing import tags_code

        return frozenset(tags_code(t.strip()) for t in text.split("||") if t.strip())

    def get(self, topic: str, queue_id: int, queue_offset: int, max_count: int = 32, *,
            tags: str | frozenset[int] | None = None) -> GetResult:
        """RocketMQ's getMessage: up to *max_count* records from *queue_offset*, with its statuses."""
        self._check_open()
        codes = self.tag_codes(tags) if isinstance(tags, str) or tags is None else tags
        cq = self._queue(topic, queue_id)
        if cq is None:
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_offset, max_offset = cq.min_offset, cq.max_offset
        if max_offset == 0:
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if queue_offset < min_offset:
            return GetResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if queue_offset == max_offset:
            return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, queue_offset, min_offset, max_offset)
        if queue_offset > max_offset:
            nxt = min_offset if min_offset == 0 else max_offset
            return GetResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, nxt, min_offset, max_offset)
        max_count = max(1, max_count)
        scan_entries = max(16000, max_count * 20) // 20
        found = cq.entries(queue_offset, scan_entries)
        if found is None:
            per_file = cq.segment_bytes // 20
            nxt = queue_offset + per_file - queue_offset % per_file
            return GetResult(GetMessageStatus.OFFSET_FOUND_NULL, nxt, min_offset, max_offset)
        entries, _ = found
        n = len(entries)
        # Without a tag filter a full batch ends the scan at entry max_count: convert that many to Python ints
        # first, and the rest only if the scan goes on (entries skipped in a removed segment).
        converted = n if codes is not None else min(n, max_count + 1)
        phys = entries["offset"][:converted].tolist()
        sizes = entries["size"][:converted].tolist()
        matched: list[bool] | None = None
        if codes is not None:
            import numpy as np

            raw_codes = entries["tags_code"].astype("<i8")
            as_int = ((raw_codes + 0x80000000) & 0xFFFFFFFF) - 0x80000000  # RocketMQ compares (int) tagsCode
            matched = np.isin(as_int, np.fromiter(codes, dtype="<i8")).tolist()
        cfg = self.config
        commitlog = self._commitlog
        max_phy = commitlog.max_offset
        hot_bytes = self._memory_for_hot_bytes
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        records: list[bytes] = []
        offsets: list[int] = []
        total = 0
        next_phy_file_start = None
        last_scanned_phy = 0
        stop_at = n
        seg_start, seg_wrote = 0, -1
        seg_buf: bytes | mmap.mmap = b""
        # RocketMQ's order per scanned entry: skip a removed segment, then "batch full?" (which sees every
        # entry, matching or not), then the tag filter, then the read.
        for i in range(n):
            if i == converted:
                phys, sizes, converted = entries["offset"].tolist(), entries["size"].tolist(), n
            offset_py = phys[i]
            size_py = sizes[i]
            last_scanned_phy = offset_py
            if next_phy_file_start is not None and offset_py < next_phy_file_start:
                continue
            if records:
                in_disk = max_phy - offset_py > hot_bytes
                count = len(records)
                if count >= max_count:
                    stop_at = i
                    break
                if in_disk:
                    if total + size_py > cfg.max_transfer_bytes_on_message_in_disk or \
                            count > cfg.max_transfer_count_on_message_in_disk - 1:
                        stop_at = i
                        break
                elif total + size_py > cfg.max_transfer_bytes_on_message_in_memory or \
                        count > cfg.max_transfer_count_on_message_in_memory - 1:
                    stop_at = i
                    break
            if matched is not None and not matched[i]:
                continue
            # Records of one pull mostly share a segment: slice its mapping directly while they do, and ask
            # the commitlog (which finds the segment, or says it is gone) for the first and any other.
            pos = offset_py - seg_start
            data = None
            if 0 <= pos and pos + size_py <= seg_wrote and size_py > 0:
                try:
                    data = seg_buf[pos : pos + size_py]
                except ValueError:  # its mapping was closed meanwhile (segment deleted): ask the commitlog
                    seg_wrote = -1
            if data is None:
                data = commitlog.read(offset_py, size_py)
                if data is not None:
                    seg = commitlog.files.find(offset_py)
                    if seg is not None:
                        seg_start, seg_wrote, seg_buf = seg.start_offset, seg.wrote, seg.buffer
            if data is None:
                if not records:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = commitlog.roll_next(offset_py)
                continue
            records.append(data)
            offsets.append(queue_offset + i)
            total += size_py
            status = GetMessageStatus.FOUND
            next_phy_file_start = None
        suggest = max_phy - last_scanned_phy > hot_bytes
        return GetResult(status, queue_offset + stop_at, min_offset, max_offset, tuple(records), tuple(offsets),
                         suggest)

    def message_at(self, commit_log_offset: int) -> StoredMessage | None:
        """The message whose record starts at *commit_log_offset*, or None."""
        self._check_open()
        if commit_log_offset < self._commitlog.min_offset or commit_log_offset >= self._commitlog.max_offset:
            return None
        data = self._commitlog.read_record(commit_log_offset)
        if data is None:
            return None
        try:
            return decode_record(data)
        except MessageDecodeError:
            return None

    def message_by_id(self, msg_id: str) -> StoredMessage | None:
        """Look up by offset message id (raises InvalidMessageIdError for malformed ids)."""
        _, offset = decode_offset_message_id(msg_id)
        return self.message_at(offset)

    def query(self, topic: str, key: str, max_count: int = 64, begin_ms: int = 0,
              end_ms: int = MAX_TIMESTAMP) -> QueryResult:
        """Messages indexed under *key* (a KEYS token or UNIQ_KEY) stored in [begin_ms, end_ms].

        As in RocketMQ, matching is by the key's hash: a colliding key's messages come back too.
        """
        self._check_open()
        if self._index is None:
            return QueryResult((), 0, 0)
        limit = min(max_count, self.config.max_msgs_num_batch)
        offsets, last_ts, last_phy = self._index.query(topic, key, limit, begin_ms, end_ms)
        messages = []
        if not offsets:
            return QueryResult((), 0, 0)
        for offset in sorted(offsets):
            m = self.message_at(offset)
            if m is not None:
                messages.append(m)
        return QueryResult(tuple(messages), last_ts, last_phy)

    def _store_time_of(self, commit_log_offset: int, size: int) -> int:
        data = self._commitlog.read(commit_log_offset, min(size, 256) if size > 0 else 0)
        if data is None or len(data) < 64:
            return -1
        sys_flag = int.from_bytes(data[36:40], "big", signed=True)
        pos = store_timestamp_position(sys_flag)
        return int.from_bytes(data[pos : pos + 8], "big", signed=True)

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """RocketMQ's getOffsetInQueueByTime (nearest entry, ties to the earlier one)."""
        self._check_open()
        cq = self._queue(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp_ms, self._commitlog.min_offset, self._store_time_of)

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self._queue(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self._queue(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    @property
    def min_commit_log_offset(self) -> int:
        return self._commitlog.min_offset

    @property
    def max_commit_log_offset(self) -> int:
        return self._commitlog.max_offset

    def store_time(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp of the message at *queue_offset*, -1 if there is none."""
        cq = self._queue(topic, queue_id)
        entry = cq.entry(queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self._store_time_of(entry[0], entry[1])

    def earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Store time of the oldest message (of one queue, or of the whole commitlog); -1 if none."""
        if topic is not None:
            return self.store_time(topic, queue_id, self.min_offset(topic, queue_id))
        head = self._commitlog.read_head(self._commitlog.min_offset)
        if head is None:
            return -1
        return self._store_time_of(self._commitlog.min_offset, head[0])

    def topics(self) -> dict[str, list[int]]:
        """Every topic with a consume queue, and its queue ids."""
        return self._queues.topics()

    # --- dispatch and durability ---------------------------------------------------------------------------

    def wait_dispatched(self, timeout_s: float = 10.0) -> bool:
        """Block until everything written (durable, in sync-flush mode) is in the consume queues and index."""
        deadline = time.monotonic() + timeout_s
        while True:
            bound = self._dispatch_bound()
            self._dispatcher.dispatch_available(bound)
            if self._dispatcher.reput_offset >= bound >= self._commitlog.max_offset:
                return True
            if self._group_commit is not None:
                self._group_commit.request(self._commitlog.max_offset)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0005)

    def add_dispatch_listener(self, listener: Callable[[str, int, int, int, int], None]) -> None:
        """Call ``listener(topic, queue_id, next_queue_offset, tags_code, store_timestamp)`` for every record
        the dispatcher adds to a consume queue.  It runs on the dispatch thread: keep it short, and hop to
        your own thread or event loop (``loop.call_soon_threadsafe``) for real work."""
        self._dispatcher.listeners.append(listener)

    @property
    def dispatch_behind_bytes(self) -> int:
        return self._dispatcher.behind_bytes

    def delete_expired_files(self, *, force: bool = False, now_ms: int | None = None) -> CleanReport:
        """One retention pass now (the background thread runs one every cleanResourceInterval)."""
        self._check_open()
        if not self._writable:
            raise StoreClosedError() if self._closed else PermissionError("a read-only store deletes nothing")
        report = self._cleaner.run(force=force, now_ms=now_ms)
        self._update_refuse_writes()
        return report

    @property
    def fenced(self) -> str | None:
        """Why the store refuses writes after a failed write or sync, or None."""
        return self._fenced

    def flush(self) -> None:
        """Make everything written durable now: commitlog, consume queues, index and checkpoint."""
        self._check_open()
        if not self._writable:
            return
        ts = self._commitlog.last_store_timestamp
        self._commitlog.flush(0)
        if ts:
            self._checkpoint.physic_msg_timestamp = ts
        self._dispatcher.dispatch_available()
        logics_ts = self._dispatcher.last_store_timestamp
        for cq in self._queues:
            cq.flush(0)
        if logics_ts:
            self._checkpoint.logics_msg_timestamp = logics_ts
        self._checkpoint.flush()

    # --- closing ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop background work, flush everything and remove the abort marker (a clean shutdown)."""
        if self._closed:
            return
        self._threads_stop.set()
        self._release_dispatch()
        if self._dispatch_thread is not None:
            self._dispatch_thread.join()
            self._clean_thread.join()
        if self._flusher is not None:
            self._flusher.stop()
        clean = False
        if self._writable and self._fenced is None:
            try:
                if self._group_commit is not None:
                    self._group_commit.stop()
                self.flush()
                if self._index is not None:
                    self._index.flush()
                clean = self._dispatch_caught_up()
            except OSError as exc:
                self._fence(exc)
        elif self._group_commit is not None:
            self._group_commit.stop()
        self._closed = True
        self._refuse_writes = True
        self._close_files(clean=clean)

    def _dispatch_caught_up(self) -> bool:
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
        self._release_lock()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals for dump / verify / tests (same package) ---------------------------------------------

    @property
    def store_host(self) -> HostAddress:
        return self._store_host
