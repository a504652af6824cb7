"""Dispatch (RocketMQ's reput): turn new commitlog records into consume-queue and index entries.

The only module that knows both the commitlog and the consume queues / index.  It walks records from
``reput_offset`` up to a bound (the written end, or in sync-flush mode the durable end, so no consumer
sees a record a crash could still erase), and for each one:

1. NOT and COMMIT records get a consume-queue entry at their QUEUEOFFSET (tagsCode from TAGS, or the
   delivery time in SCHEDULE_TOPIC_XXXX);
2. every record but ROLLBACK gets index entries for UNIQ_KEY and each KEYS token; every record, keys or
   not, rolls a full index file (creates the first), as each goes through 4.9.3's buildIndex;
3. listeners hear (topic, queue_id, queue_offset + 1, tags_code, store_timestamp) (long polling).

Records this process wrote arrive as facts (``CommitLog.facts``: what the writer already knew, in order)
and are dispatched a run at a time without decoding; everything else (records of an earlier run, schedule
topic records, abnormal recovery's walk hands in its own facts) is decoded.  Both paths write the same
bytes (tests/unit/store/test_dispatch_facts.py, test_dispatch_columns.py).  Runs of one or two (sends
arriving on their own) go fact by fact in as few Python steps as it takes; longer runs column by column:
the facts are transposed once (in C), each queue's entries packed into its file as one block (in numpy
only for runs of a couple of hundred, where its fixed cost pays), the index keys hashed and appended in one
loop (in numpy for many keys) and a lone listener called from a C-level loop.  Measured on the 2-core
shared dev box (100 B records from facts with TAGS, UNIQ_KEY and one KEYS, one listener; dispatch thread
CPU per record by run length, median of 4, session 5 harness): 1: ~7.6 µs (was ~10.8), 4: ~6.0 (6.5),
16: ~3.9 (5.5), 64: ~1.9 (2.6), 256: ~1.0 (1.3), 4096 (a backlog's pieces): ~0.6 (0.7).  Decoding costs
~60 µs of Python per record under cProfile.

Thread-safety: ``dispatch_available`` serialises on its own lock; a background thread calls it in a loop.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import compress, repeat, starmap
from operator import itemgetter

from rocketstore.errors import MessageDecodeError
from rocketstore.message.hashing import tags_code
from rocketstore.message.java_numbers import parse_java_int
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    TOTAL_SIZE_MAGIC,
    SysFlag,
    decode_dispatch_info,
)
from rocketstore.message.system_topics import SCHEDULE_TOPIC
from rocketstore.repeats import EVERY, FailureRun
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.index_file import IndexService

__all__ = ["SCHEDULE_TOPIC", "DispatchListener", "Dispatcher"]

log = logging.getLogger(__name__)

DispatchListener = Callable[[str, int, int, int, int], None]

#: a Java long's wrap-round: ((n + _LONG_HALF) & _LONG_MASK) - _LONG_HALF
_LONG_HALF, _LONG_MASK = 1 << 63, (1 << 64) - 1


def tags_code_of(topic: str, props: Mapping[str, str], store_timestamp: int, delay_levels_ms: Mapping[int, int],
                 max_delay_level: int) -> int:
    """A record's consume-queue tagsCode: the hash of its TAGS, except in SCHEDULE_TOPIC_XXXX, where it is
    the delivery time (store time + its DELAY level's delay, the level capped at the highest; 1 s for a
    level with no configured delay), added as Java longs add (wrapping round past 2**63).

    DELAY is read as Integer.parseInt reads it.  A DELAY it refuses (only another writer puts one there:
    the store's own put refuses it) makes 4.9.3's checkMessageAndReturnSize fail, which stops its reput
    and ends its recovery at that record; here such a record is dispatched with its TAGS hash instead,
    so dispatch and recovery go on (the schedule service, which reads the code as a delivery time, takes
    the hash for a time long past or far ahead: it delivers such a record at once)."""
    if topic == SCHEDULE_TOPIC:
        delay = props.get(PropertyName.DELAY)
        if delay is not None:
            try:
                level = parse_java_int(delay)
            except ValueError:
                level = 0
            if level > 0:
                level = min(level, max_delay_level)
                due = store_timestamp + delay_levels_ms.get(level, 1000)
                return ((due + _LONG_HALF) & _LONG_MASK) - _LONG_HALF
    return tags_code(props.get(PropertyName.TAGS))


#: runs shorter than this go fact by fact (``_dispatch_one``): transposing them costs more than it saves
#: (measured in instructions per record: about even at 3, columns ahead from 4 on)
_RUN_MIN_FACTS = 3
#: runs at least this long write their consume-queue entries through numpy (``_queue_columns``), whose fixed
#: cost of a dozen calls per run pays off only over a couple of hundred records; shorter ones pack them with
#: one struct call per queue (measured, instructions per dispatched record: packing ~5k fewer in runs of 64,
#: ~1k more in runs of 256)
_COLUMNS_MIN_FACTS = 192
#: a short run over several queues is grouped by queue only from this many facts on; below, fact by fact
#: (grouping costs ~0.3 µs a fact and saves only when a queue gets several; measured ~6% more
#: instructions per record grouping runs of 8 over 4 queues)
_GROUP_MIN_FACTS = 32
#: a lone listener is called from a C-level loop (``starmap``) from this many facts on; setting that loop up
#: costs more than it saves for fewer
_STARMAP_MIN_FACTS = 16
#: longer runs are cut into pieces of this many: transposing the facts costs ~2x more per fact once a
#: piece's tuples no longer fit the CPU caches (measured: ~170 ns per fact up to ~2k facts, ~380 at 16k)
_RUN_MAX_FACTS = 4096
_TX_BITS = SysFlag.TRANSACTION_MASK
_SIZE = itemgetter(1)
_PLUS_ONE = (1).__add__


def _take_run(facts: deque[tuple], reput: int, end: int) -> list[tuple]:  # type: ignore[type-arg]
    """Pop from the left of *facts* (whose first fact is at *reput*) the longest run of facts that are
    contiguous in the commitlog and end at or before *end*, and return it.

    The writer appends to *facts* from another thread, but only appends, and every step here that reads
    the deque is one C call made with the GIL held.  Facts ascend and never overlap, so a run is contiguous
    exactly when its sizes add up to the distance from its first offset to its end: one C-level sum instead
    of a check per fact; only a run with a hole in it (a segment's blank tail, a record written without
    facts) is walked fact by fact, up to the hole."""
    if len(facts) == 1:  # sends arriving one at a time: the common short case, without the general steps
        fact = facts[0]
        if fact[0] + fact[1] > end:
            return []
        facts.popleft()
        return [fact]
    snapshot = list(facts)
    last = snapshot[-1]
    if last[0] + last[1] > end:
        snapshot = snapshot[: bisect_right(snapshot, end, key=_fact_end)]
        if not snapshot:
            return snapshot
        last = snapshot[-1]
    if sum(map(_SIZE, snapshot)) != last[0] + last[1] - reput:
        expect = reput
        count = 0
        for fact in snapshot:
            if fact[0] != expect:
                break
            expect = fact[0] + fact[1]
            count += 1
        del snapshot[count:]
    # pop as many as were taken, in one C-level loop (starmap calls popleft with no arguments each time)
    deque(starmap(facts.popleft, repeat((), len(snapshot))), maxlen=0)
    return snapshot


def _fact_end(fact: tuple) -> int:  # type: ignore[type-arg]
    return fact[0] + fact[1]  # type: ignore[no-any-return]


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
        #: how many times a dispatch listener raised (each is logged, then ignored)
        self.listener_failures = 0
        #: set while consume-queue or index files cannot be written (disk full, I/O error); dispatch
        #: retries and clears it once a record goes through
        self.io_error: OSError | None = None
        #: the gaps met so far in each consume queue (``_gap``), for the life of this dispatcher (one open)
        self._gaps: dict[tuple[str, int], FailureRun] = {}
        #: topic -> [records, bytes] of the records decoded from the commitlog (``dispatch_record``, the path
        #: of a slave's replicated bytes) while set: a slave's puts, as 4.9.3's slave counts them
        #: (MessageStore.count_replicated); only this dispatcher's thread writes it
        self.replica_counts: dict[str, list[int]] | None = None

    def tags_code_of(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        return tags_code_of(topic, props, store_timestamp, self.delay_levels_ms, self.max_delay_level)

    def dispatch_record(self, commit_log_offset: int, buf, pos: int) -> int:  # type: ignore[no-untyped-def]
        """Dispatch the message record at *pos* of *buf* (commitlog offset given); returns its size."""
        (_, size, topic, queue_id, queue_offset, sys_flag, store_ts, props_text) = decode_dispatch_info(
            buf, pos, commit_log_offset)
        props = parse_properties(props_text) if props_text else {}
        counts = self.replica_counts
        if counts is not None:
            counter = counts.get(topic)
            if counter is None:
                counter = counts[topic] = [0, 0]
            counter[0] += 1
            counter[1] += size
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
                self._gap(topic, queue_id, queue_offset, cq.max_offset)
        index = self.index
        if index is not None:  # every record, keys or not: a full index file rolls on the next record
            index.build(topic, commit_log_offset, store_ts, sys_flag, props.get("UNIQ_KEY"), props.get("KEYS"))
        self.last_store_timestamp = store_ts
        if queued and self.listeners:
            try:
                for listener in self.listeners:
                    listener(topic, queue_id, queue_offset + 1, code, store_ts)
            except Exception as exc:  # noqa: BLE001 - a listener's failure must not stop dispatch
                self._listener_failed(exc)
        return size

    def _listener_failed(self, exc: Exception) -> None:
        """A dispatch listener raised: the records are dispatched all the same (a listener only hears of
        them), and the failure is logged (the first, then every 1000th)."""
        self.listener_failures += 1
        if self.listener_failures % 1000 == 1:
            log.error("dispatch: a listener failed (%d failures so far)", self.listener_failures,
                      exc_info=exc)

    def dispatch_facts(self, facts: list[tuple]) -> None:  # type: ignore[type-arg]
        """Dispatch a run of records from what the writer already knew, in commitlog order: each fact is
        (commit_log_offset, size, topic, queue_id, queue_offset, sys_flag, store_timestamp, tags_code,
        uniq_key, keys).  The same consume-queue entries, index entries and listener calls as
        ``dispatch_record`` on each record, with no decoding and with the writes batched per queue."""
        n = len(facts)
        if n < _RUN_MIN_FACTS:
            for fact in facts:
                self._dispatch_one(fact)
            return
        step = _RUN_MAX_FACTS
        for start in range(0, n, step):
            piece = facts if n <= step else facts[start : start + step]
            if len(piece) < _RUN_MIN_FACTS:
                for fact in piece:
                    self._dispatch_one(fact)
            else:
                self._dispatch_run(piece)

    def _dispatch_one(self, fact: tuple) -> None:  # type: ignore[type-arg]
        """``dispatch_facts`` of one fact (sends arriving one at a time), in as few Python steps as it takes."""
        (offset, size, topic, queue_id, queue_offset, sys_flag, ts, code, uniq, keys) = fact
        tx = sys_flag & _TX_BITS
        queued = tx == 0 or tx == SysFlag.TRANSACTION_COMMIT_TYPE
        if queued:
            cq = self.queues.queues.get((topic, queue_id))
            if cq is None:
                cq = self.queues.find_or_create(topic, queue_id)
            if not cq.put(offset, size, code, queue_offset):
                self._gap(topic, queue_id, queue_offset, cq.max_offset)
        index = self.index
        if index is not None:
            if tx != SysFlag.TRANSACTION_ROLLBACK_TYPE and (uniq is not None or keys):
                index.build_one(topic, offset, ts, uniq, keys)
            else:  # no key to add: 4.9.3's buildIndex still rolls a full file (or creates the first) first
                index.roll_if_due()
        self.last_store_timestamp = ts
        if queued:
            try:
                for listener in self.listeners:
                    listener(topic, queue_id, queue_offset + 1, code, ts)
            except Exception as exc:  # noqa: BLE001 - a listener's failure must not stop dispatch
                self._listener_failed(exc)

    def _dispatch_run(self, facts: list[tuple]) -> None:  # type: ignore[type-arg]
        """``dispatch_facts`` for a run of several, column by column: the facts are transposed once (in C),
        each queue's entries written as blocks (``_queue_rows`` or, for a long run, ``_queue_columns``), the
        index keys handed over as columns (``IndexService.build_run``, which hashes and appends a long
        run's keys in numpy) and the listeners called from one C-level loop when there is one listener."""
        n = len(facts)
        (offsets, sizes, topics, queue_ids, queue_offsets, sys_flags, stamps, codes, uniqs, keys) = zip(*facts)
        queued: list[bool] | None = None  # None: every record is queued and indexed (no transaction bits)
        # (count(0) is a pointer comparison per fact: small ints are shared objects)
        if sys_flags.count(0) != n and any(map(_TX_BITS.__and__, sys_flags)):
            tx = [flag & _TX_BITS for flag in sys_flags]
            queued = [t == 0 or t == SysFlag.TRANSACTION_COMMIT_TYPE for t in tx]
        one_queue = queued is None and topics.count(topics[0]) == n and queue_ids.count(queue_ids[0]) == n
        if n < _COLUMNS_MIN_FACTS:
            self._queue_rows(facts, topics, queue_ids, queued, one_queue)
        else:
            self._queue_columns(offsets, sizes, topics, queue_ids, queue_offsets, codes, queued, one_queue)
        index = self.index
        if index is not None and (uniqs[0] is not None or keys[0] is not None
                                  or uniqs.count(None) < n or keys.count(None) < n):
            if queued is None:
                index.build_run(topics, offsets, stamps, uniqs, keys)
            else:
                kept = [t != SysFlag.TRANSACTION_ROLLBACK_TYPE for t in tx]
                index.build_run(*(tuple(compress(col, kept)) for col in (topics, offsets, stamps, uniqs, keys)))
        if index is not None:
            # 4.9.3 hands every record to buildIndex, which rolls a full file (or creates the first) before
            # anything else: a file filled before the run's last record (or full before a run build_run did
            # not see) rolls now, not at the next keyed record.  (A full file ending at this run's last
            # record was filled by it: build_run rolled any file that was full before.)
            index.roll_if_due(offsets[-1])
        self.last_store_timestamp = stamps[-1]
        listeners = self.listeners
        if listeners:
            try:
                if len(listeners) == 1 and n >= _STARMAP_MIN_FACTS:
                    rows: Iterable[tuple[str, int, int, int, int]] = zip(topics, queue_ids,
                                                                         map(_PLUS_ONE, queue_offsets), codes,
                                                                         stamps)
                    # called row by row from a C-level loop
                    deque(starmap(listeners[0], compress(rows, queued) if queued is not None else rows), maxlen=0)
                else:
                    for fact in (compress(facts, queued) if queued is not None else facts):
                        for listener in listeners:
                            listener(fact[2], fact[3], fact[4] + 1, fact[7], fact[6])
            except Exception as exc:  # noqa: BLE001 - a listener's failure must not stop dispatch (the rest
                self._listener_failed(exc)  # of this run's records go unheard: listeners are wake-up hints)

    def _queue_rows(self, facts: list[tuple], topics: tuple[str, ...], queue_ids: tuple[int, ...],  # type: ignore[type-arg]
                    queued: list[bool] | None, one_queue: bool) -> None:
        """The consume-queue entries of a short run: the facts grouped by queue, each group packed into its
        queue's file with one call per file (``ConsumeQueue.put_run``), no numpy.  A run over several queues
        with few facts per queue (sends to a topic's queues in turn) goes fact by fact, grouping would cost
        more than it saves."""
        queues = self.queues
        if one_queue:
            groups: Iterable[tuple[tuple[str, int], list[tuple]]] = (((topics[0], queue_ids[0]), facts),)  # type: ignore[type-arg]
        elif len(facts) < _GROUP_MIN_FACTS:
            table = queues.queues
            for fact in (compress(facts, queued) if queued is not None else facts):
                cq = table.get((fact[2], fact[3]))
                if cq is None:
                    cq = queues.find_or_create(fact[2], fact[3])
                    table = queues.queues
                if not cq.put(fact[0], fact[1], fact[7], fact[4]):
                    self._gap(fact[2], fact[3], fact[4], cq.max_offset)
            return
        else:
            by_queue: dict[tuple[str, int], list[tuple]] = {}  # type: ignore[type-arg]
            rows = zip(facts, zip(topics, queue_ids))
            for fact, pair in (compress(rows, queued) if queued is not None else rows):
                members = by_queue.get(pair)
                if members is None:
                    by_queue[pair] = [fact]
                else:
                    members.append(fact)
            groups = by_queue.items()
        for (topic, queue_id), members in groups:
            cq = queues.queues.get((topic, queue_id))
            if cq is None:
                cq = queues.find_or_create(topic, queue_id)
            if len(members) < 4:
                bad = None
                for fact in members:
                    if not cq.put(fact[0], fact[1], fact[7], fact[4]) and bad is None:
                        bad = fact[4]
            else:
                bad = cq.put_run(members)
            if bad is not None:
                self._gap(topic, queue_id, bad, cq.max_offset)

    def _queue_columns(self, offsets: tuple[int, ...], sizes: tuple[int, ...], topics: tuple[str, ...],
                       queue_ids: tuple[int, ...], queue_offsets: tuple[int, ...], codes: tuple[int, ...],
                       queued: list[bool] | None, one_queue: bool) -> None:
        """The consume-queue entries of a long run, in numpy: the columns become arrays, the records are
        grouped by queue with one stable sort and each queue's entries written by
        ``ConsumeQueue.put_entries`` (a handful of C-level passes per record, a few dozen calls per run)."""
        import numpy as np

        n = len(offsets)
        offs = np.fromiter(offsets, dtype=np.int64, count=n)
        lens = np.fromiter(sizes, dtype=np.int64, count=n)
        tags = np.fromiter(codes, dtype=np.int64, count=n)
        qoffs = np.fromiter(queue_offsets, dtype=np.int64, count=n)
        queues = self.queues
        if one_queue:
            groups: list[tuple[tuple[str, int], np.ndarray | None]] = [((topics[0], queue_ids[0]), None)]
        else:
            pairs = list(zip(topics, queue_ids))
            number: dict[tuple[str, int], int] = {}
            for pair in dict.fromkeys(compress(pairs, queued) if queued is not None else pairs):
                number[pair] = len(number)
            group_of = np.fromiter(map(number.get, pairs, repeat(-1)), dtype=np.int64, count=n)
            if queued is not None:
                group_of[~np.fromiter(queued, dtype=bool, count=n)] = -1
            order = np.argsort(group_of, kind="stable")
            bounds = np.searchsorted(group_of[order], np.arange(len(number) + 1))
            groups = [(pair, order[bounds[g] : bounds[g + 1]]) for pair, g in number.items()]
        for (topic, queue_id), members in groups:
            cq = queues.queues.get((topic, queue_id))
            if cq is None:
                cq = queues.find_or_create(topic, queue_id)
            if members is None:
                bad = cq.put_entries(offs, lens, tags, qoffs)
            else:
                bad = cq.put_entries(offs[members], lens[members], tags[members], qoffs[members])
            if bad is not None:
                self._gap(topic, queue_id, bad, cq.max_offset)

    def _gap(self, topic: str, queue_id: int, expected: int, holds: int) -> None:
        """A record's QUEUEOFFSET is not the next entry of its queue (a segment missing in the middle of a
        crashed store): the queue refuses it and, stuck there, every later record of it.  Each is a gap, but
        only the queue's first (and every repeats.EVERY-th) is logged at ERROR, the others at DEBUG: an
        operator opening such a store reads one line per queue, not one per record."""
        self.error = f"consume queue {topic}/{queue_id} expected entry {expected} but holds {holds}"
        run = self._gaps.get((topic, queue_id))
        if run is None:
            run = self._gaps[(topic, queue_id)] = FailureRun()
        log.log(run.failed(logging.ERROR), "dispatch: %s (gap %d of this queue; only its first and every "
                "%dth are logged above DEBUG)", self.error, run.count, EVERY)

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
                    run = _take_run(facts, reput, end)
                    if not run:
                        break
                    last = run[-1]
                    try:
                        self.dispatch_facts(run)
                    except OSError as exc:
                        # nothing is skipped: the decode path dispatches these records again on the next try
                        if self.io_error is None:
                            log.error("dispatch: cannot write consume queue or index: %s", exc)
                        self.io_error = exc
                        return count
                    self.io_error = None
                    self.reput_offset = last[0] + last[1]
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
