"""The commitlog: every record of every topic, appended to fixed-size segments under one writer lock.

Owns record placement (end-of-file blank records and roll-over), the per-queue next queue offset
(RocketMQ's topicQueueTable), and reading records back by commitlog offset.  It does not know consume
queues or indexes (dispatch.py joins them).

A single record is placed by ``MessageStore.put`` itself (store/writes.py: the put hot path, written out
in one frame), under :attr:`CommitLog.lock` with this class's state (``tail``, ``tail_buffer``,
``segment_for``, ``queue_offsets``, ``facts``, ``lock_begin_ms``, ``refuse_appends``), as
``append_batch`` places a batch: keep the two in step.

Thread-safety: appends serialise on one lock; reads are lock-free below ``max_offset``, which only grows
after the bytes are in place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate, repeat
from typing import Any

from rocketstore.errors import StoreError
from rocketstore.message.batch_draft import BatchDraft, encode_batch_draft
from rocketstore.message.record import (
    BLANK_MAGIC,
    BLANK_RECORD,
    BLANK_RECORD_BYTES,
    TOTAL_SIZE_MAGIC,
    RecordDraft,
    write_record,
)
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import MappedFile

__all__ = ["AppendError", "CommitLog"]

log = logging.getLogger(__name__)

#: facts kept for the dispatcher at most; past this (nobody dispatching) records are decoded again instead
FACTS_MAX = 1 << 18
_time_ns = time.time_ns
#: close's look, while the write lock stays held with no append under way, for a lock an interrupted put left
#: held (see :meth:`CommitLog.refuse_further_appends`)
LEFT_HELD_CHECK_S = 5.0


class AppendError(StoreError):
    """The commitlog could not take a record; ``kind`` says why (size or segment creation)."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        super().__init__(detail)


class CommitLog:
    def __init__(self, directory: str, segment_bytes: int, *, writable: bool, preallocate: bool,
                 warm: bool) -> None:
        self.files = FileQueue(directory, segment_bytes, writable=writable, preallocate=preallocate, warm=warm)
        self.segment_bytes = segment_bytes
        self.lock = threading.Lock()
        #: (topic, queue_id) -> next queue offset; rebuilt from the consume queues at open.
        self.queue_offsets: dict[tuple[str, int], int] = {}
        #: ms since the epoch when the current append took the lock, 0 when free (OS page cache busy check).
        self.lock_begin_ms = 0
        #: what holds the write lock when it is no append (appends mark themselves by ``lock_begin_ms``): a
        #: replica write, a queue drop (see :meth:`holding`); None otherwise
        self.lock_holder: str | None = None
        #: store timestamp of the newest record appended (for the checkpoint).
        self.last_store_timestamp = 0
        #: asked before a new segment is created; returns a PutMessageStatus name to refuse with, or None
        self.segment_guard: Callable[[], str | None] | None = None
        #: how long an append waits for the lock before answering OS_PAGECACHE_BUSY instead of piling up
        self.lock_wait_s = 1.0
        #: what the writer knew about each record it placed, in commitlog order, for the dispatcher (so
        #: live records need no decoding): (commit_log_offset, size, topic, queue_id, queue_offset,
        #: sys_flag, store_timestamp, tags_code, uniq_key, keys).  Appended under the lock; the dispatcher
        #: pops from the left.  Records appended without facts are decoded by the dispatcher.
        self.facts: deque[tuple] = deque()  # type: ignore[type-arg]
        #: the segment appends write into and its mapping, or None (ask the file queue): a single append
        #: reads these two attributes instead of calling ``files.last()`` and the ``buffer`` property.
        #: Only :meth:`segment_for` changes the tail while the store is open (recovery truncates before
        #: the first append, clean-up never deletes the last segment), and it refreshes both.
        self.tail: MappedFile | None = None
        self.tail_buffer: Any = None
        #: set (under the lock) when the store closes: appends from then on are refused, so none lands after
        #: the closing flush or in a segment being closed
        self.refuse_appends = False
        #: a segment could not be created and that was logged: logged once until one is created again
        self._create_failure_logged = False

    # --- offsets -----------------------------------------------------------------------------------

    @property
    def max_offset(self) -> int:
        return self.files.max_offset

    @property
    def min_offset(self) -> int:
        first = self.files.first()
        return first.start_offset if first is not None else 0

    @property
    def flushed_offset(self) -> int:
        return self.files.flushed_offset

    def roll_next(self, offset: int) -> int:
        """Start of the segment after the one holding *offset*."""
        return offset + self.segment_bytes - offset % self.segment_bytes

    # --- writing -------------------------------------------------------------------------------------

    def segment_for(self, record_bytes: int) -> MappedFile:
        """The segment to write *record_bytes* into, closing the current one with a blank if needed."""
        try:
            mf = self.files.last()
            if mf is None or mf.is_full or record_bytes + BLANK_RECORD_BYTES > mf.remaining:
                refusal = self.segment_guard() if self.segment_guard is not None else None
                if refusal is not None:
                    raise AppendError(refusal, "the disk is nearly full: writes are refused until space is freed")
            self.tail = None
            mf = self.files.last_writable()
            if record_bytes + BLANK_RECORD_BYTES > mf.remaining:
                remaining = mf.remaining
                pos = mf.wrote
                if remaining >= BLANK_RECORD_BYTES:
                    BLANK_RECORD.pack_into(mf.buffer, pos, remaining, BLANK_MAGIC)
                mf.wrote = mf.size_bytes
                mf = self.files.create_next()
        except OSError as exc:
            self._log_create_failure(exc)
            raise AppendError("CREATE_MAPEDFILE_FAILED", f"cannot create a commitlog segment: {exc}") from exc
        self._create_failure_logged = False
        self.tail_buffer = mf.buffer
        self.tail = mf
        return mf

    def _log_create_failure(self, exc: OSError) -> None:
        # the senders get 4.9.3's fixed "create mapped file failed" text: the cause (ENOSPC, EMFILE, ...) is
        # only here; once per failing spell, not once per refused put
        if not self._create_failure_logged:
            self._create_failure_logged = True
            log.error("cannot create a commitlog segment in %s (puts are refused with "
                      "CREATE_MAPEDFILE_FAILED until one can be made): %s", self.files.directory, exc)

    def append_batch(self, drafts: BatchDraft | Sequence[RecordDraft], queue_key: tuple[str, int] | None,
                     store_timestamp: int | None,
                     meta: tuple[str, Sequence[int], Sequence[str | None], Sequence[str | None]] | None = None,
                     ) -> tuple[int, int, int]:
        """Place a batch's records contiguously in one segment, with consecutive queue offsets (all 0 when
        ``queue_key`` is None) and one store time; returns (first offset, first queue offset, store
        timestamp).  *meta* (topic, tags codes, uniq keys, keys: one per record), when given, becomes
        dispatch facts.

        A :class:`BatchDraft` (records sharing all but body, flag and properties: the usual batch) is encoded
        in one piece and copied into the segment with one slice assignment, its facts built by C-level zips
        of columns; a sequence of record drafts (records that differ in more) is written draft by draft."""
        batch: BatchDraft | None = None
        singles: Sequence[RecordDraft] = ()
        if isinstance(drafts, BatchDraft):
            batch = drafts
            total = batch.total
            sizes = batch.sizes
        else:
            singles = drafts
            sizes = [draft[1] for draft in singles]
            total = sum(sizes)
        if total + BLANK_RECORD_BYTES > self.segment_bytes:
            raise AppendError("MESSAGE_ILLEGAL", f"{total} bytes of records cannot fit a segment of "
                                                 f"{self.segment_bytes} bytes")
        lock = self.lock
        if not lock.acquire(False) and not lock.acquire(True, self.lock_wait_s):
            raise AppendError("OS_PAGECACHE_BUSY", "the commitlog write lock is busy")
        try:
            if self.refuse_appends:
                raise AppendError("SERVICE_NOT_AVAILABLE", "the store is closed")
            now = _time_ns() // 1_000_000
            self.lock_begin_ms = now
            ts = now if store_timestamp is None else store_timestamp
            mf = self.files.last()
            if mf is None or total + BLANK_RECORD_BYTES > mf.size_bytes - mf.wrote:
                mf = self.segment_for(total)
            pos = mf.wrote
            first_offset = mf.start_offset + pos
            n = len(sizes)
            if queue_key is not None:
                first_queue_offset = self.queue_offsets.get(queue_key, 0)
                queue_offsets: Sequence[int] = range(first_queue_offset, first_queue_offset + n)
            else:
                first_queue_offset = 0
                queue_offsets = (0,) * n
            buf = mf.buffer
            queue_ids: Iterable[int]
            sys_flags: Iterable[int]
            if batch is not None:
                buf[pos : pos + total] = encode_batch_draft(batch, first_queue_offset, first_offset, ts,
                                                            queue_step=0 if queue_key is None else 1)
                queue_ids = repeat(batch.queue_id)
                sys_flags = repeat(batch.sys_flag)
            else:
                p = pos
                for draft, queue_offset in zip(singles, queue_offsets):
                    write_record(buf, p, draft, queue_offset, first_offset - pos + p, ts)
                    p += draft[1]
                queue_ids = [draft[3] for draft in singles]
                sys_flags = [draft[5] for draft in singles]
            mf.wrote = pos + total
            if queue_key is not None:
                self.queue_offsets[queue_key] = first_queue_offset + n
            facts = self.facts
            if meta is not None and len(facts) < FACTS_MAX:
                # after the records count as written (as append's): a failed batch leaves no facts behind,
                # and a KeyboardInterrupt between the two leaves written records without facts (decoded by
                # the dispatcher), never facts of records that are not (the next put overwrote them: the
                # dispatcher then refused the rest of the queue as a gap)
                facts.extend(zip(accumulate(sizes, initial=first_offset), sizes, repeat(meta[0], n), queue_ids,
                                 queue_offsets, sys_flags, repeat(ts), meta[1], meta[2], meta[3]))
            self.last_store_timestamp = ts
        finally:
            self.lock_begin_ms = 0
            lock.release()
        return first_offset, first_queue_offset, ts

    # --- reading ----------------------------------------------------------------------------------------

    # --- replication -------------------------------------------------------------------------------

    def append_replica(self, offset: int, data: bytes | memoryview) -> int:
        """Lay down commitlog bytes a master sent (a slave's HA client) at *offset*, which must be the
        written end; returns the new end.  *data* may cut records anywhere (the dispatcher waits for the
        rest of a record) but never crosses a segment, as a master sends them.  An empty commitlog starts
        at the segment *offset* begins (the master's last segment, for a new slave).  Raises ValueError
        when *offset* or the length does not fit, AppendError when no segment can be made."""
        n = len(data)
        with self.holding("a replica write"):
            if self.refuse_appends:
                raise AppendError("SERVICE_NOT_AVAILABLE", "the store is closed")
            end = self.files.max_offset
            if self.files.last() is None:
                if offset % self.segment_bytes:
                    raise ValueError(f"an empty commitlog starts on a segment boundary, not at {offset}")
            elif offset != end:
                raise ValueError(f"replica bytes at {offset} but the commitlog ends at {end}")
            try:
                mf = self.files.last_writable(offset)
            except OSError as exc:
                self._log_create_failure(exc)
                raise AppendError("CREATE_MAPEDFILE_FAILED", f"cannot create a commitlog segment: {exc}") from exc
            self.tail = None  # a later put refreshes its cached tail
            pos = mf.wrote
            if mf.start_offset + pos != offset or pos + n > mf.size_bytes:
                raise ValueError(f"{n} replica bytes at {offset} do not fit segment {mf.start_offset} "
                                 f"(written to {mf.start_offset + pos})")
            mf.buffer[pos:pos + n] = data
            mf.wrote = pos + n
            return mf.start_offset + mf.wrote

    def read_chunk(self, offset: int, max_bytes: int) -> bytes:
        """Up to *max_bytes* written bytes from *offset*, from the one segment that holds it (what a
        master sends a slave); empty when nothing is written there yet."""
        mf = self.files.find(offset)
        if mf is None:
            return b""
        pos = offset - mf.start_offset
        stop = min(mf.wrote, pos + max_bytes)
        try:
            return bytes(mf.buffer[pos:stop]) if stop > pos else b""
        except ValueError:  # its mapping was closed meanwhile: retention deleted the segment
            return b""

    def _locate(self, offset: int, size_bytes: int) -> tuple[MappedFile, int] | None:
        """(segment, position) when *size_bytes* at *offset* lie inside one segment below the written end."""
        mf = self.files.find(offset)
        if mf is None:
            return None
        pos = offset - mf.start_offset
        if size_bytes <= 0 or pos + size_bytes > mf.wrote:
            return None
        return mf, pos

    def read(self, offset: int, size_bytes: int) -> bytes | None:
        """*size_bytes* at *offset* if they lie inside one segment below the written end, else None."""
        found = self._locate(offset, size_bytes)
        if found is None:
            return None
        mf, pos = found
        try:
            return mf.buffer[pos : pos + size_bytes]
        except ValueError:  # its mapping was closed meanwhile: retention deleted the segment
            return None

    def read_head(self, offset: int) -> tuple[int, int] | None:
        """(TOTALSIZE, MAGICCODE) at *offset* within written data."""
        found = self._locate(offset, 8)
        if found is None:
            return None
        try:
            return TOTAL_SIZE_MAGIC.unpack_from(found[0].buffer, found[1])
        except ValueError:  # its mapping was closed meanwhile: retention deleted the segment
            return None

    def read_record(self, offset: int) -> bytes | None:
        """The whole record starting at *offset* (its TOTALSIZE decides the length), else None."""
        head = self.read_head(offset)
        return None if head is None else self.read(offset, head[0])

    # --- durability ------------------------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        return self.files.flush(least_pages)

    @contextmanager
    def holding(self, holder: str) -> Iterator[None]:
        """The write lock, for *holder*: a writer that is no append (a replica write, a queue drop), marked
        as holding it while it does (:attr:`lock_holder`), so that close waits for it however long it takes
        instead of taking the lock for one an interrupted put left held."""
        with self.lock:
            try:
                self.lock_holder = holder  # (inside the try: an interrupt right here leaves no stale mark)
                yield
            finally:
                self.lock_holder = None

    def refuse_further_appends(self) -> None:
        """Refuse every append from now on, once the one under way (if any) has ended.

        A KeyboardInterrupt that reaches a putting thread right as its lock.acquire returns (before the try
        that releases it) leaves the write lock held by nobody: puts then answer OS_PAGECACHE_BUSY, and a
        close waiting for the lock hung for ever.  A lock held with no holder marked (no append under way:
        ``lock_begin_ms`` 0; no :meth:`holding` holder: ``lock_holder`` None) at two looks
        ``LEFT_HELD_CHECK_S`` apart is taken for one left so: logged, and not waited for."""
        lock = self.lock
        idle_looks = 0
        while not lock.acquire(True, LEFT_HELD_CHECK_S):
            idle_looks = idle_looks + 1 if self.lock_begin_ms == 0 and self.lock_holder is None else 0
            if idle_looks >= 2:
                log.error("the commitlog write lock was left held (a put interrupted as it took it, by a "
                          "KeyboardInterrupt?): closing without it")
                self.refuse_appends = True
                return
        try:
            self.refuse_appends = True
        finally:
            lock.release()

    def close(self) -> None:
        self.tail = self.tail_buffer = None
        self.files.close(drop_unused_tail=True)
