"""The facade's write path: put and put_batch, the write gate, fencing and what refuses writes.

:class:`StoreWrites` is a base class of the facade (message_store.py).  ``put`` keeps its hot path inlined
(the properties string, the dispatch facts, the record draft: encode_properties and
drafting.draft_or_status written out, so a put makes no call it does not need); ``put_batch`` drafts with
batch_put.py and places the batch in one append.  The write gate answers for a store that refuses writes
(closed, fenced after a failed write or sync, read-only, slave, disk full, dispatcher failing, page cache
busy) with RocketMQ's status; ``_refuse_writes`` is the one flag the put fast path tests.

Must not import: message_store (the facade), reads, background; broker, remoting.
Thread-safety: put / put_batch may be called from any number of threads (the commitlog's writer lock
orders appends); the remembered host and queue key are single tuples swapped whole.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Literal

from rocketstore.errors import (
    InvalidTopicError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
)
from rocketstore.message.batch import MessageBatch
from rocketstore.message.batch_draft import BatchDraft
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress
from rocketstore.message.properties import NAME_VALUE_SEPARATOR as _NAME_VALUE_SEPARATOR
from rocketstore.message.properties import PROPERTY_FORMATS as _PROPERTY_FORMATS
from rocketstore.message.properties import PROPERTY_SEPARATOR as _PROPERTY_SEPARATOR
from rocketstore.message.properties import (
    PropertyName,
    encode_properties,
    parse_properties,
    properties_format,
    waits_store_msg_ok,
)
from rocketstore.message.record import (
    Message,
    RecordDraft,
    SysFlag,
    draft_message,
    host_bytes,
    validate_topic,
)
from rocketstore.store.batch_put import (
    BatchMeta,
    draft_message_batch,
    draft_message_list,
    draft_message_list_checked,
)
from rocketstore.store.commitlog import AppendError
from rocketstore.store.config import BrokerRole
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.drafting import (
    DelayLevelError,
    apply_delay_level,
    int_fields_remark,
    properties_remark,
)
from rocketstore.store.drafting import illegal_remark as _illegal_remark
from rocketstore.store.results import PutMessageStatus, PutResult
from rocketstore.store.store_parts import StoreParts

__all__ = ["FlushMode", "StoreWrites"]

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
_DICT = dict  # (a module global: found before the builtins)
#: tags -> tagsCode of the tags the put path has seen (a producer repeats a few): tags_code without a call
_TAG_CODES: dict[str, int] = {}
_TAG_CODES_GET = _TAG_CODES.get
_new_tuple = tuple.__new__
_PAGE_CACHE_BUSY_CEILING_MS = 10_000_000


def _fits_before_delay(message: Message) -> bool:
    """Whether the properties string of *message* (as given, before its DELAY moved it) is within the
    32767 characters 4.9.3's checkMessage allows."""
    try:
        return _java_length(encode_properties(message.properties)) <= 32767
    except (OverflowError, ValueError, TypeError, AttributeError):
        return False


def _java_length(text: str) -> int:
    """Java's String.length() of *text*: UTF-16 code units (a character past U+FFFF counts two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _bad_flush_mode(flush: object) -> ValueError:
    # anything else used to be taken for "later": under SYNC_FLUSH a typo gave up durability silently
    return ValueError(f"flush must be 'wait', 'ask' or 'later', not {flush!r}")


class StoreWrites(StoreParts):
    """MessageStore's write path (put, put_batch) and the state that refuses writes."""

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

    def _gate_remark(self, status: PutMessageStatus) -> str:
        """Why :meth:`_write_gate` refused a put, in words (a refusal's remark; only refusals build it)."""
        if status is PutMessageStatus.OS_PAGECACHE_BUSY:
            return "the commitlog write lock is busy (held past osPageCacheBusyTimeOutMills): try again"
        if self._closed:
            return "the store is closed: open it again to write"
        if not self._writable:
            return "the store is open read-only: open it without read_only=True to write"
        if self._fenced is not None:
            return f"the store refuses writes after a failed write or sync ({self._fenced}): open it again"
        if self._cleaner.disk_full:
            return "the disk is nearly full (diskMaxUsedSpaceRatio): writes resume once space is freed"
        if self._dispatcher.io_error is not None:
            return (f"consume queues or index cannot be written ({self._dispatcher.io_error}): writes resume "
                    "once they can")
        return "the store is a slave (brokerRole SLAVE): only its master takes writes"

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
        syncFlushTimeout), unless the message's WAIT is not true as Java's Boolean.parseBoolean reads it
        (WAIT=false, "0", ...: it asks for the sync and returns PUT_OK, as 4.9.3's isWaitStoreMsgOK) or
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
                return PutResult(gate, remark=self._gate_remark(gate))
        scheduled = None  # the message as given, when its DELAY moved it to SCHEDULE_TOPIC_XXXX
        if apply_delay and _DELAY in (message.properties or ()):  # (None: no properties, as below)
            # RocketMQ checks the topic the producer named before the delay moves it to SCHEDULE_TOPIC_XXXX
            try:
                validate_topic(message.topic)
            except (InvalidTopicError, TypeError) as exc:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=str(message.topic), queue_id=message.queue_id,
                                 remark=str(exc))
            scheduled = message
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
            # (a PeakProperties, iterated in a bigger table than its size gives, or a SentProperties, stored
            # as the text it came as, is encode_properties's)
            shape = _PROPERTY_FORMATS_GET(names) or properties_format(names) if props.__class__ is _DICT else None
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
                except (OverflowError, ValueError, TypeError, AttributeError) as exc:
                    return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                                     remark=properties_remark(props, exc))
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
                if scheduled is not None and _fits_before_delay(scheduled):
                    # 4.9.3 checks the length of the string it was given; only the encoder sees the one
                    # REAL_TOPIC and REAL_QID made too long, and answers PROPERTIES_SIZE_EXCEEDED
                    why = _illegal_remark(topic, props_text, queue_id)
                    return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, topic=topic,
                                     queue_id=queue_id, remark=f"{why} (with the REAL_TOPIC and REAL_QID the "
                                                               "delay adds)")
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                                 remark=_illegal_remark(topic, props_text, queue_id))
            store_host = message.store_host
            born_host = message.born_host
            try:
                props_bytes = props_text.encode()
            except UnicodeEncodeError:
                # a lone surrogate (a JSON header may carry one as an escape): 4.9.3's getBytes(UTF_8)
                # stores a '?' for each and takes the message
                props_bytes = props_text.encode("utf-8", "replace")
            draft = draft_message(message, props_bytes,
                                  self._store_host_bytes if born_host is None else self._host_bytes(born_host),
                                  self._store_host_bytes if store_host is None else self._host_bytes(store_host),
                                  self._max_message_bytes)
        except PropertiesTooLargeError as exc:
            # too many bytes; 4.9.3's checkMessage first measured the string it was given in UTF-16 units
            fits = _java_length(props_text) <= 32767 if scheduled is None else _fits_before_delay(scheduled)
            if not fits:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id, remark=str(exc))
            return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, topic=topic, queue_id=queue_id,
                             remark=str(exc))
        except (MessageTooLargeError, InvalidTopicError, MessageFieldError, OverflowError, ValueError, TypeError,
                AttributeError, struct.error) as exc:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id, remark=str(exc))
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
        except struct.error as exc:
            # a field the checks above let through that is no int (a float born timestamp): nothing was
            # appended (the record's end did not move), as RocketMQ refuses a message it cannot encode
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                             remark=int_fields_remark(message, exc))
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
        if wait is not None and wait.lower() != "true":  # isWaitStoreMsgOK: Boolean.parseBoolean of WAIT
            gc.request(end_offset)
            return PutMessageStatus.PUT_OK
        if gc.wait_durable(end_offset, self.config.sync_flush_timeout_ms / 1000):
            return PutMessageStatus.PUT_OK
        if gc.failed is not None:
            return PutMessageStatus.UNKNOWN_ERROR
        return PutMessageStatus.FLUSH_DISK_TIMEOUT

    def _batch_flush(self, flush: FlushMode, properties: Mapping[str, str]) -> FlushMode:
        """*flush*, or "ask" (the sync asked for, PUT_OK at once) for a batch whose WAIT is not true under
        SYNC_FLUSH, as :meth:`_await_durable` answers a put's."""
        if flush == "wait" and self._threads.group_commit is not None and not waits_store_msg_ok(properties):
            return "ask"
        return flush

    def put_batch(self, messages: Iterable[Message] | MessageBatch, *, flush: FlushMode = "wait") -> PutResult:
        """Append messages of one topic and queue contiguously, with consecutive queue offsets.

        As RocketMQ: a batch holds no delayed or transactional messages (MESSAGE_ILLEGAL otherwise) and
        must fit within maxMessageSize as a whole (*flush*: as :meth:`put`, WAIT read from the first
        message or the MessageBatch's own properties); anything but Messages is a
        TypeError.  A :class:`MessageBatch` (what a broker's batch send carries) is stored as RocketMQ stores
        a MessageExtBatch: each entry's properties bytes as given, then the batch's properties string.
        """
        if flush not in _FLUSH_MODES:
            raise _bad_flush_mode(flush)
        if isinstance(messages, MessageBatch):
            gate = self._write_gate()
            if gate is not None:
                return PutResult(gate, remark=self._gate_remark(gate))
            own = messages.batch_properties  # (4.9.3's MessageExtBatch.isWaitStoreMsgOK reads the batch's own)
            flush = self._batch_flush(flush, parse_properties(own) if own and _WAIT in own else {})
            return self._put_message_batch(messages, flush)
        # what is no batch of Messages is a TypeError, before anything is written (as put)
        if isinstance(messages, (Message, str, bytes)) or not isinstance(messages, Iterable):
            raise TypeError(f"put_batch takes Messages (a list) or a MessageBatch, not {type(messages).__name__}")
        batch = list(messages)
        if not all(map(isinstance, batch, repeat(Message))):
            bad = next(m for m in batch if not isinstance(m, Message))
            raise TypeError(f"put_batch takes Messages, not {type(bad).__name__}")
        gate = self._write_gate()
        if gate is not None:
            return PutResult(gate, remark=self._gate_remark(gate))
        if not batch:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
        # a client's batch carries its first message's WAIT (MessageBatch.generateFromList)
        flush = self._batch_flush(flush, batch[0].properties or {})
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
        except struct.error as exc:
            # a store timestamp that is no int (a float from time.time() * 1000): as in put, nothing was
            # appended (the batch's one store time fails its first record's packing)
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                             remark=f"store_timestamp is of type {type(store_timestamp).__name__}, not int"
                             if not isinstance(store_timestamp, (int, type(None))) else str(exc))
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
