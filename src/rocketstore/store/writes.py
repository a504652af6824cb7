"""The facade's write path: put and put_batch, the write gate, fencing and what refuses writes.

:class:`StoreWrites` is a base class of the facade (message_store.py).  ``put`` keeps its hot path inlined
(the properties string, the dispatch facts, the record draft and its placement: encode_properties,
drafting.draft_or_status, record.draft_message and the commitlog's single append written out in one frame,
so a put makes no Python call it does not need); ``put_batch`` drafts with
batch_put.py and places the batch in one append.  The write gate answers for a store that refuses writes
(closed, fenced after a failed write or sync, read-only, slave, disk full, dispatcher failing, page cache
busy) with RocketMQ's status; ``_refuse_writes`` is the one flag the put fast path tests.

Must not import: message_store (the facade), reads, background; broker, remoting.
Thread-safety: put / put_batch may be called from any number of threads (the commitlog's writer lock
orders appends); the remembered host, queue key and properties shape are single tuples swapped whole.
"""

from __future__ import annotations

import struct
import time
import zlib
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
    _order_free,
    encode_properties,
    parse_properties,
    properties_format,
    waits_store_msg_ok,
)
from rocketstore.message.record import (
    _PROPS_LEN_BYTES,
    _TOPIC_PARTS,
    _WRITE_HEADERS,
    BLANK_RECORD_BYTES,
    MESSAGE_MAGIC,
    PLAIN_WRITE_HEADER,
    Message,
    RecordDraft,
    SysFlag,
    _check_record_fields,
    _topic_part,
    host_bytes,
    host_flags,
    validate_topic,
)
from rocketstore.store.batch_put import (
    BatchMeta,
    draft_message_batch,
    draft_message_list,
    draft_message_list_checked,
)
from rocketstore.store.commitlog import FACTS_MAX, AppendError
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
_time_ns = time.time_ns
_crc32 = zlib.crc32
_join_bytes = b"".join
_TOPIC_PARTS_GET = _TOPIC_PARTS.get
#: the shape put found last for a plain dict of properties, as (format, values getter, True, names count),
#: kept only for names free of separators whose Java HashMap order does not depend on insertion order: a
#: dict of as many names, every one found by the getter, holds the same names and prints alike (the check
#: encode_properties_column makes for a batch).  One tuple swapped whole (thread-safe).
_last_shape: tuple = ("", None, False, -1)  # type: ignore[type-arg]
_PAGE_CACHE_BUSY_CEILING_MS = 10_000_000


def _fits_before_delay(message: Message) -> bool:
    """Whether the properties string of *message* (as given, before its DELAY moved it) is within the
    32767 characters 4.9.3's checkMessage allows."""
    try:
        return _java_length(encode_properties(message.properties)) <= 32767
    except (OverflowError, ValueError, TypeError, AttributeError):
        return False


def _properties_shape(props: dict[str, str]) -> tuple | None:  # type: ignore[type-arg]
    """``properties_format`` of the names of *props* (None when a name is no str), remembered as put's last
    shape when it may serve every dict of these names."""
    global _last_shape
    names = tuple(props)
    shape = _PROPERTY_FORMATS_GET(names) or properties_format(names)
    if shape is not None and shape[2] and _order_free(names):
        _last_shape = (*shape, len(names))
    return shape


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
            # when every value is a str; anything else goes through encode_properties itself.  (A
            # PeakProperties, iterated in a bigger table than its size gives, or a SentProperties, stored as
            # the text it came as, is encode_properties's.)  The last shape first (see _last_shape)
            props_text = values = None
            if props.__class__ is _DICT:
                shape = _last_shape
                if len(props) == shape[3]:
                    try:
                        values = shape[1](props)
                    except KeyError:  # other names
                        pass
                if values is None:
                    found = _properties_shape(props)
                    if found is not None:
                        shape = found
                        values = shape[1](props)
                if values is not None:
                    try:
                        joined = "".join(values)  # type: ignore[arg-type]
                    except TypeError:  # a None value (skipped) or one that is not a str (refused)
                        pass
                    else:
                        props_text = shape[0] % values
                        facts = shape[2] and _NAME_VALUE_SEPARATOR not in joined \
                            and _PROPERTY_SEPARATOR not in joined and topic != SCHEDULE_TOPIC
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
            born = self._store_host_bytes if born_host is None else self._host_bytes(born_host)
            store = self._store_host_bytes if store_host is None else self._host_bytes(store_host)
            # record.draft_message written out (the put hot path): the same checks, in the same order
            topic_part = _TOPIC_PARTS_GET(topic)
            if topic_part is None:
                topic_part = _topic_part(topic)
            props_len = len(props_bytes)
            if props_len > 32767:
                raise PropertiesTooLargeError(props_len)
            body = message.body
            if body.__class__ is not bytes:
                # a buffer's len() may count items, not bytes (a memoryview of ints): its bytes, or TypeError
                # for something that is no buffer (a str, None, an int)
                body = bytes(memoryview(body))
            body_len = len(body)
            size = 90 + body_len + len(topic_part) + props_len  # 91 bytes of fixed fields, TOPICLENGTH in topic_part
            sys_flag = message.sys_flag & ~0x30
            if len(born) + len(store) != 16:  # an IPv6 host
                sys_flag, extra = host_flags(sys_flag, born, store)
                size += extra
            if size > self._max_message_bytes:
                raise MessageTooLargeError(size, self._max_message_bytes)
            flag = message.flag
            born_ts = message.born_timestamp
            reconsume = message.reconsume_times
            prepared = message.prepared_transaction_offset
            if flag or sys_flag or reconsume or prepared or not -0x8000000000000000 <= born_ts <= 0x7FFFFFFFFFFFFFFF:
                # the usual message has these at 0 and a sane born time (its queue id was checked above)
                _check_record_fields(queue_id, flag, sys_flag, reconsume, born_ts, prepared)
                header = _WRITE_HEADERS[sys_flag >> 4 & 3]
            else:
                header = PLAIN_WRITE_HEADER  # IPv4 hosts (no host bit in sys_flag), the four fields 0
            crc = _crc32(body) & 0x7FFFFFFF
            tail = _join_bytes((body, topic_part, _PROPS_LEN_BYTES[props_len] if props_len < 4096
                                else props_len.to_bytes(2, "big"), props_bytes))
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
        # NOT (0) and COMMIT (8) records take a queue offset, PREPARED (4) and ROLLBACK (12) do not: bit 4.
        # The last queue's key is reused: the queue-offset table then finds its own key object (no tuple
        # to build, hash twice and compare item by item per put)
        queue_key = self._last_queue_key
        if queue_key[1] != queue_id or queue_key[0] != topic:
            queue_key = self._last_queue_key = (topic, queue_id)
        # The single record's placement, under the commitlog's lock with its state (CommitLog.append_batch
        # places a batch the same way: keep the two in step).  A free lock is taken without parsing a
        # timeout (most appends)
        commitlog = self._commitlog
        lock = commitlog.lock
        if not lock.acquire(False) and not lock.acquire(True, commitlog.lock_wait_s):
            return PutResult(PutMessageStatus.OS_PAGECACHE_BUSY, remark="the commitlog write lock is busy")
        try:
            if commitlog.refuse_appends:
                raise AppendError("SERVICE_NOT_AVAILABLE", "the store is closed")
            now = _time_ns() // 1_000_000
            commitlog.lock_begin_ms = now
            ts = message.store_timestamp
            if ts is None:
                ts = now
            mf = commitlog.tail
            if mf is None or size + 8 > mf.size_bytes - mf.wrote:  # 8: BLANK_RECORD_BYTES
                if size + BLANK_RECORD_BYTES > commitlog.segment_bytes:  # (a record that fits the tail fits a segment)
                    raise AppendError("MESSAGE_ILLEGAL", f"{size} bytes of records cannot fit a segment of "
                                                         f"{commitlog.segment_bytes} bytes")
                mf = commitlog.segment_for(size)
            pos = mf.wrote
            offset = mf.start_offset + pos
            if sys_flag & _PREPARED_BIT:
                queue_offset = 0
            else:
                queue_offsets = commitlog.queue_offsets
                queue_offset = queue_offsets.get(queue_key, 0)
            buf = commitlog.tail_buffer
            if header is PLAIN_WRITE_HEADER:  # FLAG, SYSFLAG, RECONSUMETIMES, PREPAREDOFFSET: zero pad bytes
                header.pack_into(buf, pos, size, MESSAGE_MAGIC, crc, queue_id, queue_offset, offset, born_ts, born,
                                 ts, store, body_len)
            else:
                header.pack_into(buf, pos, size, MESSAGE_MAGIC, crc, queue_id, flag, queue_offset, offset,
                                 sys_flag, born_ts, born, ts, store, reconsume, prepared, body_len)
            buf[pos + header.size : pos + size] = tail
            if not sys_flag & _PREPARED_BIT:
                queue_offsets[queue_key] = queue_offset + 1
            mf.wrote = pos + size
            if facts:
                pending = commitlog.facts
                if len(pending) < FACTS_MAX:
                    pending.append((offset, size, topic, queue_id, queue_offset, sys_flag, ts, tags_hash, uniq_key,
                                    keys))
            commitlog.last_store_timestamp = ts
        except AppendError as exc:
            return PutResult(PutMessageStatus[exc.kind], remark=str(exc))
        except struct.error as exc:
            # a field the checks above let through that is no int (a float store timestamp): nothing was
            # appended (the record's end did not move), as RocketMQ refuses a message it cannot encode
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                             remark=int_fields_remark(message, exc))
        except (OSError, ValueError, IndexError) as exc:
            self._fence(exc)
            return PutResult(PutMessageStatus.UNKNOWN_ERROR, remark=str(exc))
        finally:
            commitlog.lock_begin_ms = 0
            lock.release()
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
