"""MessageStore: the small facade of the embedded store.

    with MessageStore.open(path, StoreConfig(...)) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="TagA", keys="order-1"))
        store.wait_dispatched()
        got = store.get("TopicA", 0, 0, max_count=32)

Opening loads the files, recovers (normally, or abnormally when the ``abort`` marker says the last run
crashed), catches dispatch up, then runs dispatch and flushing on background threads.  ``read_only=True``
opens any store (a real RocketMQ one, a read-only copy, a live directory) in scratch mode: recovery and
dispatch happen in private memory and nothing on disk changes.

This module owns opening and closing (the directory lock, the abort marker), the write path (put,
put_batch: the put hot path stays inlined here), get, the write gate and fencing, and the public API.  Its
base classes hold the rest of its methods: opening.py (loading and recovery, the open path's typed errors),
lookups.py (the look-ups by offset, id, key and time), store_admin.py (dispatch and durability read-outs,
retention, role and run-time settings, flush); store_parts.py declares what they share.  The rest is in
modules that get config values and the pieces they need, never this object: reads.py (get and the
look-ups), background.py (dispatch, clean-up and flush threads), drafting.py and batch_put.py (what a put
checks and drafts), lock.py (the ``lock`` file).  Nothing in store/ imports it but dump.py and verify.py
(which inspect an open store).

Thread-safety: put / put_batch / get / query / look-ups and close may be called from any number of threads.
Subsystems receive config values, never this object.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Literal, Self

from rocketstore.errors import (
    InvalidTopicError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
    StoreClosedError,
    StoreConfigError,
)
from rocketstore.message.arguments import int_argument
from rocketstore.message.batch import MessageBatch
from rocketstore.message.batch_draft import BatchDraft
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.properties import NAME_VALUE_SEPARATOR as _NAME_VALUE_SEPARATOR
from rocketstore.message.properties import PROPERTY_FORMATS as _PROPERTY_FORMATS
from rocketstore.message.properties import PROPERTY_SEPARATOR as _PROPERTY_SEPARATOR
from rocketstore.message.properties import (
    PeakProperties,
    PropertyName,
    encode_properties,
    properties_format,
)
from rocketstore.message.record import (
    Message,
    RecordDraft,
    SysFlag,
    draft_message,
    host_bytes,
    validate_topic,
)
from rocketstore.store.background import StoreThreads
from rocketstore.store.batch_put import (
    BatchMeta,
    draft_message_batch,
    draft_message_list,
    draft_message_list_checked,
)
from rocketstore.store.commitlog import AppendError
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.drafting import DelayLevelError, apply_delay_level
from rocketstore.store.file_queue import sync_directory
from rocketstore.store.lock import StoreLock
from rocketstore.store.lookups import MAX_TIMESTAMP, StoreLookups
from rocketstore.store.opening import StoreOpening, _hot_memory_bytes, _make_store_dir, _typed_open_error
from rocketstore.store.reads import StoreReader, tag_codes
from rocketstore.store.results import GetResult, PutMessageStatus, PutResult
from rocketstore.store.store_admin import RUN_TIME_SETTINGS, StoreAdmin

__all__ = ["MAX_TIMESTAMP", "RUN_TIME_SETTINGS", "MessageStore"]

_DELAY = PropertyName.DELAY
_TAGS = PropertyName.TAGS
_KEYS = PropertyName.KEYS
_UNIQ_KEY = PropertyName.UNIQ_KEY
_WAIT = PropertyName.WAIT
_PUT_OK = PutMessageStatus.PUT_OK
#: How a SYNC_FLUSH put deals with the disk: "wait" until its record is durable (the default), "ask" for
#: a sync and return at once, or return at once and leave asking to the caller (:meth:`request_flush`,
#: once for many puts).  Under ASYNC_FLUSH a put never waits, whatever it says.  Any other value is a
#: ValueError (under either flush type).
FlushMode = Literal["wait", "ask", "later"]
_FLUSH_WAIT: FlushMode = "wait"
_FLUSH_MODES = frozenset(("wait", "ask", "later"))
_PREPARED_BIT = SysFlag.TRANSACTION_PREPARED_TYPE
_PROPERTY_FORMATS_GET = _PROPERTY_FORMATS.get
_PEAK = PeakProperties
#: tags -> tagsCode of the tags the put path has seen (a producer repeats a few): tags_code without a call
_TAG_CODES: dict[str, int] = {}
_TAG_CODES_GET = _TAG_CODES.get
_new_tuple = tuple.__new__
_PAGE_CACHE_BUSY_CEILING_MS = 10_000_000


def _bad_flush_mode(flush: object) -> ValueError:
    # anything else used to be taken for "later": under SYNC_FLUSH a typo gave up durability silently
    return ValueError(f"flush must be 'wait', 'ask' or 'later', not {flush!r}")


class MessageStore(StoreOpening, StoreLookups, StoreAdmin):
    """The embedded RocketMQ-compatible message store.  Use :meth:`open`."""

    def __init__(self, config: StoreConfig, *, read_only: bool, background: bool,
                 progress: Callable[[int], None] | None = None) -> None:
        self.config = config
        self.read_only = read_only
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
             progress: Callable[[int], None] | None = None) -> MessageStore:
        """Open (creating if needed) the store at *path*; ``read_only`` opens in scratch mode."""
        config = config or StoreConfig()
        if path is not None:
            config = config.replace(store_path_root_dir=os.fspath(path))
        return cls(config, read_only=read_only, background=background and not read_only, progress=progress)

    # --- what the background threads report --------------------------------------------------------------

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

    @property
    def fenced(self) -> str | None:
        """Why the store refuses writes after a failed write or sync, or None."""
        return self._fenced

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

    def _host_bytes(self, host: HostAddress) -> bytes:
        """``host_bytes(host)``, remembered for the last host seen (thread-safe: one tuple swapped whole)."""
        last = self._last_host
        if last[0] is host:
            return last[1]
        packed = host_bytes(host)
        self._last_host = (host, packed)
        return packed

    def put(self, message: Message, *, apply_delay: bool = True, flush: FlushMode = "wait") -> PutResult:
        """Append one message.  Returns PUT_OK with its offsets, or RocketMQ's status for why not.

        Under SYNC_FLUSH a put returns once its record is durable (FLUSH_DISK_TIMEOUT after
        syncFlushTimeout), unless the message says WAIT=false (it asks for the sync and returns PUT_OK) or
        *flush* says otherwise (:data:`FlushMode`).  A caller that waits another way (an event loop) watches
        :meth:`add_durable_listener` and :attr:`durable_offset` for ``commit_log_offset + wrote_bytes``.

        ``apply_delay=False`` stores a message carrying DELAY in its own topic and queue: the schedule
        service's delivery, whose record keeps DELAY in its properties as RocketMQ's does (RocketMQ clears
        DELAY from the property map it checks, not from the properties string it writes).

        A *message* that is no :class:`Message` is a TypeError (nothing is written); a Message whose fields
        cannot be stored is answered MESSAGE_ILLEGAL, as RocketMQ answers it.
        """
        if message.__class__ is not Message and not isinstance(message, Message):
            raise TypeError(f"put takes a Message, not {type(message).__name__}")
        if flush is not _FLUSH_WAIT and flush not in _FLUSH_MODES:
            raise _bad_flush_mode(flush)
        if self._refuse_writes or self._commitlog.lock_begin_ms:
            gate = self._write_gate()
            if gate is not None:
                return PutResult(gate)
        if apply_delay and _DELAY in (message.properties or ()):  # (None: no properties, as below)
            # RocketMQ checks the topic the producer named before the delay moves it to SCHEDULE_TOPIC_XXXX
            try:
                validate_topic(message.topic)
            except (InvalidTopicError, TypeError):
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=str(message.topic), queue_id=message.queue_id)
            try:
                message = apply_delay_level(message, self._max_delay_level)
            except DelayLevelError as exc:  # nothing stored, as 4.9.3's parseInt throwing stores nothing
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=message.topic, queue_id=message.queue_id,
                                 remark=str(exc))
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
            # (a PeakProperties, iterated in a bigger table than its size gives, is encode_properties's)
            shape = _PROPERTY_FORMATS_GET(names) or properties_format(names) if props.__class__ is not _PEAK else None
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
        # drafting.draft_or_status inlined (the put hot path): the same checks, in the same order
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
        threads = self._threads
        if threads.dispatch_idle:
            threads.release_dispatch()
        status = _PUT_OK
        if threads.group_commit is not None:
            if flush == "wait":
                status = self._await_durable(offset + size, props.get(_WAIT))
            elif flush == "ask":
                threads.group_commit.request(offset + size)
        # PutResult(...) without the namedtuple's Python-level __new__: every field, in order
        return _new_tuple(PutResult, (status, offset, size, queue_offset, ts, 1, topic, queue_id, "",
                                      store_host or self._store_host, ()))

    def _await_durable(self, end_offset: int, wait: str | None) -> PutMessageStatus:
        gc = self._threads.group_commit
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

    def put_batch(self, messages: Iterable[Message] | MessageBatch, *, flush: FlushMode = "wait") -> PutResult:
        """Append messages of one topic and queue contiguously, with consecutive queue offsets.

        As RocketMQ: a batch holds no delayed or transactional messages (MESSAGE_ILLEGAL otherwise) and
        must fit within maxMessageSize as a whole (*flush*: as :meth:`put`); anything but Messages is a
        TypeError.  A :class:`MessageBatch` (what a broker's batch send carries) is stored as RocketMQ stores
        a MessageExtBatch: each entry's properties bytes as given, then the batch's properties string.
        """
        if flush not in _FLUSH_MODES:
            raise _bad_flush_mode(flush)
        if isinstance(messages, MessageBatch):
            gate = self._write_gate()
            return PutResult(gate) if gate is not None else self._put_message_batch(messages, flush)
        # what is no batch of Messages is a TypeError, before anything is written (as put)
        if isinstance(messages, (Message, str, bytes)) or not isinstance(messages, Iterable):
            raise TypeError(f"put_batch takes Messages (a list) or a MessageBatch, not {type(messages).__name__}")
        batch = list(messages)
        if not all(map(isinstance, batch, repeat(Message))):
            bad = next(m for m in batch if not isinstance(m, Message))
            raise TypeError(f"put_batch takes Messages, not {type(bad).__name__}")
        gate = self._write_gate()
        if gate is not None:
            return PutResult(gate)
        if not batch:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
        prepared = self._draft_messages(batch)
        if prepared is None:
            # something in the batch is refused (or unusual): the message-by-message checks say what, as
            # they always have
            return self._put_batch_checked(batch, flush)
        draft, meta = prepared
        first = batch[0]
        return self._append_batch(draft, draft.sizes, first.topic, first.queue_id, first.store_timestamp, meta,
                                  first.store_host, flush)

    def _draft_messages(self, batch: list[Message]) -> tuple[BatchDraft, BatchMeta | None] | None:
        """:func:`draft_message_list` with this store's hosts and size limit."""
        return draft_message_list(batch, self._store_host_bytes, self._host_bytes, self._max_message_bytes)

    def _put_message_batch(self, batch: MessageBatch, flush: FlushMode) -> PutResult:
        """put_batch of a MessageBatch: RocketMQ's putMessages of a MessageExtBatch."""
        drafted = draft_message_batch(batch, self._store_host_bytes, self._host_bytes, self._max_message_bytes)
        if isinstance(drafted, PutResult):
            return drafted
        draft, meta = drafted
        return self._append_batch(draft, draft.sizes, batch.topic, batch.queue_id, batch.store_timestamp, meta,
                                  batch.store_host, flush)

    def _append_batch(self, draft: BatchDraft | list[RecordDraft], sizes: list[int], topic: str, queue_id: int,
                      store_timestamp: int | None,
                      meta: BatchMeta | None, store_host: HostAddress | None, flush: FlushMode) -> PutResult:
        """Place a drafted batch (*sizes*: its records') and answer for it: the end of every put_batch path."""
        total = sum(sizes)
        if total > self._max_message_bytes:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"batch of {total} bytes exceeds maxMessageSize")
        try:
            offset, queue_offset, ts = self._commitlog.append_batch(draft, (topic, queue_id), store_timestamp, meta)
        except AppendError as exc:
            return PutResult(PutMessageStatus[exc.kind], remark=str(exc))
        except struct.error:
            # a store timestamp that is no int (a float from time.time() * 1000): as in put, nothing was
            # appended (the batch's one store time fails its first record's packing)
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
        except (OSError, ValueError, IndexError) as exc:
            self._fence(exc)
            return PutResult(PutMessageStatus.UNKNOWN_ERROR, remark=str(exc))
        threads = self._threads
        if threads.dispatch_idle:
            threads.release_dispatch()
        status = _PUT_OK
        gc = threads.group_commit
        if gc is not None:
            if flush == "wait":
                status = self._await_durable(offset + total, None)
            elif flush == "ask":
                gc.request(offset + total)
        return _new_tuple(PutResult, (status, offset, total, queue_offset, ts, len(sizes), topic, queue_id, "",
                                      store_host or self._store_host, tuple(sizes)))

    def _put_batch_checked(self, batch: list[Message], flush: FlushMode = "wait") -> PutResult:
        """put_batch message by message (:func:`draft_message_list_checked`): a refused batch is answered with
        the status of its first refused message."""
        drafted = draft_message_list_checked(batch, self._store_host_bytes, self._host_bytes,
                                             self._max_message_bytes)
        if isinstance(drafted, PutResult):
            return drafted
        drafts, sizes, meta = drafted
        first = batch[0]
        return self._append_batch(drafts, sizes, first.topic, first.queue_id, first.store_timestamp, meta,
                                  first.store_host, flush)

    # --- reading (store/reads.py; the look-ups: lookups.py) -------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError()

    tag_codes = staticmethod(tag_codes)

    def get(self, topic: str, queue_id: int, queue_offset: int, max_count: int = 32, *,
            tags: str | frozenset[int] | None = None,
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
        with self._commitlog.lock:
            self._commitlog.refuse_appends = True
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
