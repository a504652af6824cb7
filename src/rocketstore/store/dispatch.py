"""Dispatch (RocketMQ's reput): turn new commitlog records into consume-queue and index entries.

The only module that knows both the commitlog and the consume queues / index.  It walks records from
``reput_offset`` up to a bound (the written end, or in sync-flush mode the durable end, so no consumer
sees a record a crash could still erase), and for each one:

1. NOT and COMMIT records get a consume-queue entry at their QUEUEOFFSET (tagsCode from TAGS, or the
   delivery time in SCHEDULE_TOPIC_XXXX);
2. every record but ROLLBACK gets index entries for UNIQ_KEY and each KEYS token;
3. listeners hear (topic, queue_id, queue_offset + 1, tags_code, store_timestamp) (long polling).

Records this process wrote arrive as facts (``CommitLog.facts``: what the writer already knew, in order)
and are dispatched a run at a time without decoding; everything else (records of an earlier run, schedule
topic records, abnormal recovery's walk hands in its own facts) is decoded.  Both paths write the same
bytes (tests/unit/store/test_dispatch_facts.py).  Measured: ~60 µs of Python per record decoded one at a
time under cProfile, ~8 µs per record from facts in runs of a few hundred.

Thread-safety: ``dispatch_available`` serialises on its own lock; a background thread calls it in a loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from rocketstore.errors import MessageDecodeError
from rocketstore.message.hashing import tags_code
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    TOTAL_SIZE_MAGIC,
    SysFlag,
    decode_dispatch_info,
)
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.index_file import IndexService

__all__ = ["SCHEDULE_TOPIC", "DispatchListener", "Dispatcher"]

log = logging.getLogger(__name__)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DispatchListener = Callable[[str, int, int, int, int], None]


def tags_code_of(topic: str, props: Mapping[str, str], store_timestamp: int, delay_levels_ms: Mapping[int, int],
                 max_delay_level: int) -> int:
    """A record's consume-queue tagsCode: the hash of its TAGS, except in SCHEDULE_TOPIC_XXXX, where it is
    the delivery time (store time + its DELAY level's delay, the level capped at the highest; 1 s for a
    level with no configured delay)."""
    if topic == SCHEDULE_TOPIC:
        delay = props.get(PropertyName.DELAY)
        if delay is not None:
            try:
                level = int(delay)
            except ValueError:
                level = 0
            if level > 0:
                level = min(level, max_delay_level)
                return store_timestamp + delay_levels_ms.get(level, 1000)
    return tags_code(props.get(PropertyName.TAGS))


class Dispatcher:
    def __init__(self, commitlog: CommitLog, queues: ConsumeQueueTable, index: IndexService | None,
                 delay_levels_ms: dict[int, int]) -> None:
        self.commitlog = commitlog
        self.queues = queues
        self.index = index
        self.delay_levels_ms = delay_levels_ms
        self.max_delay_level = max(delay_levels_ms) if delay_levels_ms else 0
        self.reput_offset = 0
        self.lock = threading.Lock()
        self.listeners: list[DispatchListener] = []
        #: store time of the newest record dispatched (checkpoint.logicsMsgTimestamp)
        self.last_store_timestamp = 0
        self.error: str | None = None
        #: set while consume-queue or index files cannot be written (disk full, I/O error); dispatch
        #: retries and clears it once a record goes through
        self.io_error: OSError | None = None

    def tags_code_of(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        return tags_code_of(topic, props, store_timestamp, self.delay_levels_ms, self.max_delay_level)

    def dispatch_record(self, commit_log_offset: int, buf, pos: int, *, check_crc: bool = False) -> int:  # type: ignore[no-untyped-def]
        """Dispatch the message record at *pos* of *buf* (commitlog offset given); returns its size."""
        (_, size, topic, queue_id, queue_offset, sys_flag, store_ts, props_text) = decode_dispatch_info(
            buf, pos, commit_log_offset, check_crc=check_crc)
        props = parse_properties(props_text) if props_text else {}
        tx = sys_flag & SysFlag.TRANSACTION_MASK
        code = 0
        queued = tx == 0 or tx == SysFlag.TRANSACTION_COMMIT_TYPE
        if queued:
            if topic == SCHEDULE_TOPIC:
                code = self.tags_code_of(topic, props, store_ts)
            else:
                tags = props.get("TAGS")
                code = tags_code(tags) if tags else 0
            cq = self.queues.queues.get((topic, queue_id))
            if cq is None:
                cq = self.queues.find_or_create(topic, queue_id)
            if not cq.put(commit_log_offset, size, code, queue_offset):
                self.error = (f"consume queue {topic}/{queue_id} expected entry {queue_offset} "
                              f"but holds {cq.max_offset}")
                log.error("dispatch: %s", self.error)
        index = self.index
        if index is not None:
            uniq = props.get("UNIQ_KEY")
            keys = props.get("KEYS")
            if uniq is not None or keys:
                index.build(topic, commit_log_offset, store_ts, sys_flag, uniq, keys)
        self.last_store_timestamp = store_ts
        if queued and self.listeners:
            for listener in self.listeners:
                listener(topic, queue_id, queue_offset + 1, code, store_ts)
        return size

    def dispatch_facts(self, facts: list[tuple]) -> None:  # type: ignore[type-arg]
        """Dispatch a run of records from what the writer already knew, in commitlog order: each fact is
        (commit_log_offset, size, topic, queue_id, queue_offset, sys_flag, store_timestamp, tags_code,
        uniq_key, keys).  The same consume-queue entries, index entries and listener calls as
        ``dispatch_record`` on each record, with no decoding and with the writes batched per queue."""
        if not facts:
            return
        by_queue: dict[tuple[str, int], list[tuple]] = {}  # type: ignore[type-arg]
        indexed: list[tuple[str, int, int, int, str | None, str | None]] = []
        index = self.index
        for fact in facts:
            tx = fact[5] & 0xC
            if tx == 0 or tx == 8:
                key = (fact[2], fact[3])
                run = by_queue.get(key)
                if run is None:
                    by_queue[key] = [fact]
                else:
                    run.append(fact)
            if index is not None and (fact[8] is not None or fact[9]):
                indexed.append((fact[2], fact[0], fact[6], fact[5], fact[8], fact[9]))
        queues = self.queues
        for (topic, queue_id), run in by_queue.items():
            cq = queues.queues.get((topic, queue_id))
            if cq is None:
                cq = queues.find_or_create(topic, queue_id)
            bad = cq.put_run(run)
            if bad is not None:
                self.error = (f"consume queue {topic}/{queue_id} expected entry {bad} "
                              f"but holds {cq.max_offset}")
                log.error("dispatch: %s", self.error)
        if indexed:
            index.build_many(indexed)  # type: ignore[union-attr]
        self.last_store_timestamp = facts[-1][6]
        listeners = self.listeners
        if listeners:
            for fact in facts:
                tx = fact[5] & 0xC
                if tx == 0 or tx == 8:
                    for listener in listeners:
                        listener(fact[2], fact[3], fact[4] + 1, fact[7], fact[6])

    def dispatch_available(self, bound: int | None = None) -> int:
        """Dispatch every record between ``reput_offset`` and *bound* (default: the written end).

        Records the writer described (``commitlog.facts``) are dispatched from those facts; anything else
        (records written before this open, schedule-topic records, a backlog past the facts' cap) is
        decoded from the commitlog."""
        with self.lock:
            commitlog = self.commitlog
            end = commitlog.max_offset if bound is None else bound
            facts = commitlog.facts
            count = 0
            self.reput_offset = max(self.reput_offset, commitlog.min_offset)
            while self.reput_offset < end:
                reput = self.reput_offset
                while facts and facts[0][0] < reput:
                    facts.popleft()
                if facts and facts[0][0] == reput:
                    run = []
                    expect = reput
                    while facts:
                        fact = facts[0]
                        nxt = fact[0] + fact[1]
                        if fact[0] != expect or nxt > end:
                            break
                        run.append(facts.popleft())
                        expect = nxt
                    if not run:
                        break
                    try:
                        self.dispatch_facts(run)
                    except OSError as exc:
                        # nothing is skipped: the decode path dispatches these records again on the next try
                        if self.io_error is None:
                            log.error("dispatch: cannot write consume queue or index: %s", exc)
                        self.io_error = exc
                        return count
                    self.io_error = None
                    self.reput_offset = expect
                    count += len(run)
                    continue
                stop = min(end, facts[0][0]) if facts else end
                walked = self._walk(stop)
                if walked < 0:
                    return count
                count += walked
                if self.reput_offset == reput:
                    break
            return count

    def _walk(self, end: int) -> int:
        """Decode and dispatch records of the segment holding ``reput_offset``, up to *end*; returns how
        many, or -1 after an I/O error (``reput_offset`` then stays at the record that failed)."""
        commitlog = self.commitlog
        offset = self.reput_offset
        mf = commitlog.files.find(offset)
        if mf is None:
            return 0
        count = 0
        pos = offset - mf.start_offset
        limit = min(mf.wrote, end - mf.start_offset)
        buf = mf.buffer
        head = TOTAL_SIZE_MAGIC
        while pos + 8 <= limit:
            size, magic = head.unpack_from(buf, pos)
            if magic == BLANK_MAGIC:
                pos = mf.size_bytes
                break
            if magic != MESSAGE_MAGIC or size <= 0 or pos + size > limit:
                if magic == MESSAGE_MAGIC and size > 0 and pos + size > limit:
                    break  # not all of it is visible yet
                self.error = f"undecodable record at commitlog offset {mf.start_offset + pos}"
                log.error("dispatch: %s", self.error)
                pos = limit
                break
            try:
                self.dispatch_record(mf.start_offset + pos, buf, pos)
            except MessageDecodeError as exc:
                self.error = str(exc)
                log.error("dispatch: %s", exc)
            except OSError as exc:
                # nothing is skipped: the record is dispatched again on the next try
                if self.io_error is None:
                    log.error("dispatch: cannot write consume queue or index: %s", exc)
                self.io_error = exc
                self.reput_offset = mf.start_offset + pos
                return -1
            self.io_error = None
            pos += size
            count += 1
        new_offset = mf.start_offset + pos
        if pos >= mf.size_bytes or (pos + 8 > mf.size_bytes):
            new_offset = mf.start_offset + mf.size_bytes
        if new_offset != offset:
            self.reput_offset = new_offset
        return count

    @property
    def behind_bytes(self) -> int:
        return max(0, self.commitlog.max_offset - self.reput_offset)
