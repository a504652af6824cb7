"""The read side of the store: get, look-ups by offset, id, key and time, queue bounds.

Owns :class:`StoreReader`, which the facade (message_store.py) builds once its files are open and whose
methods its public read methods call.  It reads the commitlog, the consume queue table and the index
service it is given and never changes them; the facade sets :attr:`StoreReader.closed` when it closes.

Must not import: message_store (the facade), dispatch, flush, cleanup, recovery; broker, remoting.
Thread-safety: every method may be called from any number of threads, alongside puts and dispatch (the
pieces it reads are safe for that).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Mapping

from rocketstore.errors import MessageDecodeError, StoreClosedError
from rocketstore.message.arguments import int_argument, str_argument
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import parse_properties
from rocketstore.message.record import (
    MESSAGE_MAGIC,
    SYS_FLAG_POS,
    StoredMessage,
    SysFlag,
    decode_record,
    header_layout,
    store_timestamp_position,
)
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.index_file import IndexService
from rocketstore.store.results import GetMessageStatus, GetResult, QueryResult

__all__ = ["MessageMatcher", "StoreReader", "record_properties", "tag_codes"]

#: a per-message filter of get(): takes the record's properties, answers whether it is handed out
MessageMatcher = Callable[[Mapping[str, str]], bool]


#: bytes before the body (TOTALSIZE .. BODYLENGTH) by the sysFlag's host bits (0x10 born, 0x20 store IPv6)
_HEAD_BYTES = {(SysFlag.BORNHOST_V6 if born else 0) | (SysFlag.STOREHOST_V6 if store else 0):
               header_layout(born, store).size for born in (False, True) for store in (False, True)}
_HOST_BITS = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")


def record_properties(data: bytes) -> dict[str, str] | None:
    """The properties of one whole record, parsed as 4.9.3's filter decodes them (string2messageProperties);
    None if the record does not hold together.  Reads only the lengths on the way, not the whole record."""
    end = len(data)
    if end < SYS_FLAG_POS + 4:
        return None
    p = _HEAD_BYTES[_INT.unpack_from(data, SYS_FLAG_POS)[0] & _HOST_BITS]
    if p + 3 > end:
        return None
    p += _INT.unpack_from(data, p - 4)[0]  # past the body
    if p < 0 or p + 3 > end:
        return None
    p += 1 + data[p]  # past the topic
    if p + 2 > end:
        return None
    props_end = p + 2 + _SHORT.unpack_from(data, p)[0]
    if props_end < p + 2 or props_end > end:
        return None
    raw = data[p + 2 : props_end]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = java_utf8(raw)  # as 4.9.3's filter reads them: U+FFFD per malformed sequence
    return parse_properties(text)


def tag_codes(expression: str | None) -> frozenset[int] | None:
    """Codes of a subscription expression ``"a || b"``; None for ``*`` / empty (everything matches)."""
    if expression is None:
        return None
    text = expression.strip()
    if not text or text == "*":
        return None
    from rocketstore.message.hashing import tags_code

    return frozenset(tags_code(t.strip()) for t in text.split("||") if t.strip())


class StoreReader:
    """Reads of one open store.  *memory_for_hot_bytes*: how far behind the commitlog's end a record still
    counts as in memory (the pull limits and suggest-slave flag depend on it)."""

    def __init__(self, config: StoreConfig, commitlog: CommitLog, queues: ConsumeQueueTable,
                 index: IndexService | None, memory_for_hot_bytes: int) -> None:
        self.config = config
        self._commitlog = commitlog
        self._queues = queues
        self._index = index
        self._memory_for_hot_bytes = memory_for_hot_bytes
        #: set by the facade's close: every read then raises StoreClosedError
        self.closed = False

    def set_limits(self, config: StoreConfig, memory_for_hot_bytes: int) -> None:
        """The facade's update of the read limits (its config's transfer limits and the hot share), from the
        next get() on; one running meanwhile may see old and new ones together (limits only: harmless)."""
        self.config = config
        self._memory_for_hot_bytes = memory_for_hot_bytes

    def get(self, topic: str, queue_id: int, queue_offset: int, max_count: int = 32, *,
            tags: str | frozenset[int] | set[int] | None = None, match: MessageMatcher | None = None,
            ) -> GetResult:
        """RocketMQ's getMessage: up to *max_count* records from *queue_offset*, with its statuses.

        *tags* filters by the consume queue's tag codes; *match* (4.9.3's isMatchedByCommitLog) is asked
        about each record read, with its properties: one it refuses is skipped, and counts neither toward
        *max_count* nor the transfer limits, but the returned next offset moves past it.

        An offset past the consume queue's end (or into a queue with none yet) that the commitlog still holds
        for the queue (its next queue offset, which a writing store keeps: the records are written but not
        dispatched yet) answers OFFSET_OVERFLOW_ONE at that offset, not 4.9.3's NO_MESSAGE_IN_QUEUE /
        OFFSET_OVERFLOW_BADLY with its correction (to 0 while the queue keeps its first entry).  A consumer
        that read those records from a slave (slaveReadEnable) and asks this master for the next was sent
        back to 0 and read the whole queue again; now it waits there, as at the end.  An offset past what
        the commitlog holds for the queue is corrected as before."""
        # the arguments' types first (one class test each when they are right): a float offset failed deep
        # inside with a slicing TypeError, a float queue id found queue 0, a bool offset came back as next offset
        if topic.__class__ is not str:
            str_argument("topic", topic)
        if queue_id.__class__ is not int:
            queue_id = int_argument("queue_id", queue_id)
        if queue_offset.__class__ is not int:
            queue_offset = int_argument("queue_offset", queue_offset)
        if max_count.__class__ is not int:
            max_count = int_argument("max_count", max_count)
        if self.closed:
            raise StoreClosedError()
        codes = tag_codes(tags) if isinstance(tags, str) or tags is None else tags
        if codes is not None and not isinstance(codes, (frozenset, set)):
            raise TypeError(f"tags must be a str or a set of tag codes, not {type(tags).__name__}")
        cq = self._queues.get(topic, queue_id)
        if cq is None:
            if 0 < queue_offset <= self._commitlog.queue_offsets.get((topic, queue_id), 0):
                return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, queue_offset, 0, 0)  # not dispatched yet
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_offset, max_offset = cq.min_offset, cq.max_offset
        if max_offset == 0:
            if 0 < queue_offset <= self._commitlog.queue_offsets.get((topic, queue_id), 0):
                return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, queue_offset, min_offset, max_offset)
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if queue_offset < min_offset:
            return GetResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if queue_offset == max_offset:
            return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, queue_offset, min_offset, max_offset)
        if queue_offset > max_offset:
            if queue_offset <= self._commitlog.queue_offsets.get((topic, queue_id), 0):
                # the commitlog holds the queue up to here, its consume queue is not there yet (dispatch is
                # behind): nothing new yet, as at the end (see the docstring)
                return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, queue_offset, min_offset, max_offset)
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
        converted = n if codes is not None or match is not None else min(n, max_count + 1)
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
                # as 4.9.3: a refused entry after a removed record's (nothing handed out yet) answers
                # NO_MATCHED_MESSAGE, not MESSAGE_WAS_REMOVING (which only the removed record's own read says)
                if not records:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
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
            if match is not None:
                props = record_properties(bytes(data))
                # a record whose properties cannot be read (it does not hold together: damaged on disk) is
                # handed over, so the consumer names it as damaged, not dropped here as "not matched"
                if props is not None and not match(props):
                    if not records:
                        status = GetMessageStatus.NO_MATCHED_MESSAGE
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
        """The message whose record starts at *commit_log_offset*; None when no record starts there (outside
        the commitlog, or the bytes there have no message magic: the end-of-segment fill, the middle of a
        record).

        A record that starts there but is damaged (its size does not fit, it does not decode, or its body
        fails its CRC: bit rot since it was stored) raises MessageDecodeError naming its commitlog offset: it
        is there, so "no such message" would be wrong, and its body must not be handed out as intact (4.9.3
        reads it unchecked).  A damaged magic reads as no record: it cannot be told from an offset that is
        not a record's start."""
        if commit_log_offset.__class__ is not int:
            commit_log_offset = int_argument("commit_log_offset", commit_log_offset)
        if self.closed:
            raise StoreClosedError()
        commitlog = self._commitlog
        if commit_log_offset < commitlog.min_offset or commit_log_offset >= commitlog.max_offset:
            return None
        head = commitlog.read_head(commit_log_offset)
        if head is None or head[1] != MESSAGE_MAGIC:
            return None
        data = commitlog.read(commit_log_offset, head[0])
        if data is None:
            if commit_log_offset < commitlog.min_offset:  # retention deleted its segment meanwhile
                return None
            raise MessageDecodeError(f"declared size {head[0]} does not fit (the record at commitlog offset "
                                     f"{commit_log_offset})")
        try:
            return decode_record(data, check_crc=True)
        except MessageDecodeError as exc:
            raise MessageDecodeError(
                f"{exc.reason} (the record at commitlog offset {commit_log_offset})") from exc

    def message_by_id(self, msg_id: str) -> StoredMessage | None:
        """Look up by offset message id (raises InvalidMessageIdError for malformed ids, MessageDecodeError
        for a damaged record: see :meth:`message_at`)."""
        _, offset = decode_offset_message_id(str_argument("msg_id", msg_id))
        return self.message_at(offset)

    def query(self, topic: str, key: str, max_count: int, begin_ms: int, end_ms: int) -> QueryResult:
        """Messages indexed under *key* (a KEYS token or UNIQ_KEY) stored in [begin_ms, end_ms].

        As in RocketMQ, matching is by the key's hash: a colliding key's messages come back too.  A hit whose
        record is damaged raises MessageDecodeError naming it (:meth:`message_at`): left out, the answer
        would read as "no such message".
        """
        str_argument("topic", topic)
        str_argument("key", key)
        max_count = int_argument("max_count", max_count)
        begin_ms = int_argument("begin_ms", begin_ms)
        end_ms = int_argument("end_ms", end_ms)
        if self.closed:
            raise StoreClosedError()
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
        self._queue_arguments(topic, queue_id)
        timestamp_ms = int_argument("timestamp_ms", timestamp_ms)
        if self.closed:
            raise StoreClosedError()
        cq = self._queues.get(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp_ms, self._commitlog.min_offset, self._store_time_of)

    @staticmethod
    def _queue_arguments(topic: object, queue_id: object) -> None:
        """TypeError unless *topic* is a str and *queue_id* an int (a float queue id found queue 0, a str
        one no queue at all)."""
        if topic.__class__ is not str:
            str_argument("topic", topic)
        if queue_id.__class__ is not int:
            int_argument("queue_id", queue_id)

    def min_offset(self, topic: str, queue_id: int) -> int:
        self._queue_arguments(topic, queue_id)
        if self.closed:  # its files are unmapped: the queue would read as empty, not as what it holds
            raise StoreClosedError()
        cq = self._queues.get(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        self._queue_arguments(topic, queue_id)
        if self.closed:
            raise StoreClosedError()
        cq = self._queues.get(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def store_time(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp of the message at *queue_offset*, -1 if there is none."""
        self._queue_arguments(topic, queue_id)
        if queue_offset.__class__ is not int:
            queue_offset = int_argument("queue_offset", queue_offset)
        if self.closed:
            raise StoreClosedError()
        cq = self._queues.get(topic, queue_id)
        entry = cq.entry(queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self._store_time_of(entry[0], entry[1])

    def earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Store time of the oldest message (of one queue, or of the whole commitlog); -1 if none."""
        if topic is not None:
            self._queue_arguments(topic, queue_id)
        if self.closed:
            raise StoreClosedError()
        if topic is not None:
            return self.store_time(topic, queue_id, self.min_offset(topic, queue_id))
        head = self._commitlog.read_head(self._commitlog.min_offset)
        if head is None:
            return -1
        return self._store_time_of(self._commitlog.min_offset, head[0])

