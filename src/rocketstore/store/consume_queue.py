"""Consume queues: per topic and queue id, a file queue of 20-byte entries pointing into the commitlog.

Entry layout (big-endian), entry n at byte n * 20 of the concatenated segments::

    +0  COMMITLOG OFFSET  long
    +8  SIZE              int     record TOTALSIZE; 0x7FFFFFFF in "pre-blank" fill entries
    +12 TAGSCODE          long    Java String.hashCode of TAGS (or delivery time in SCHEDULE_TOPIC_XXXX)

Owns entry placement with RocketMQ's idempotency rules (a re-dispatched record is skipped), recovery of the
valid prefix, truncation past a commitlog offset, min-offset correction and the time search.  Reads go
through numpy so a scan of many entries costs one call, not one Python step per entry.

Thread-safety: one dispatcher writes; readers read entries below the wrote position.  A queue dropped from
the table (:meth:`ConsumeQueueTable.drop`, under the dispatcher's lock) is destroyed while a reader may still
hold it: its reads then find nothing, as for a queue that never had entries there.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from operator import itemgetter

import numpy as np

from rocketstore.store.file_queue import DirSyncs, FileQueue
from rocketstore.store.mapped_file import MappedFile, sync_directory

__all__ = ["CQ_DTYPE", "CQ_ENTRY", "CQ_ENTRY_BYTES", "PRE_BLANK_SIZE", "ConsumeQueue", "ConsumeQueueTable"]

CQ_ENTRY = struct.Struct(">qiq")
CQ_ENTRY_BYTES = 20
CQ_DTYPE = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags_code", ">i8")])
PRE_BLANK_SIZE = 0x7FFFFFFF
_PRE_BLANK = CQ_ENTRY.pack(0, PRE_BLANK_SIZE, 0)


#: (commit_log_offset, size, tags_code) of a dispatch fact, and its queue offset
_ENTRY_FIELDS = itemgetter(0, 1, 7)
_QUEUE_OFFSET = itemgetter(4)
_ENTRIES_STRUCTS: dict[int, struct.Struct] = {}
#: recovery reads a segment's entries in chunks from one page's worth up to 1.2 MB (see _valid_prefix)
_RECOVER_FIRST_CHUNK_ENTRIES = 4096 // CQ_ENTRY_BYTES
_RECOVER_MAX_CHUNK_ENTRIES = 1 << 16


def _fact_end(fact: tuple) -> int:  # type: ignore[type-arg]
    return fact[0] + fact[1]  # type: ignore[no-any-return]


def _entries_struct(count: int) -> struct.Struct:
    """The layout of *count* consecutive entries, so a run of them is packed into the file with one call
    (cached: run lengths repeat)."""
    layout = _ENTRIES_STRUCTS.get(count)
    if layout is None:
        layout = struct.Struct(">" + "qiq" * count)
        if len(_ENTRIES_STRUCTS) < 1024:
            _ENTRIES_STRUCTS[count] = layout
    return layout


def _valid_prefix(mf: MappedFile) -> tuple[int, np.void | None]:
    """How many entries of *mf* lead up to its first invalid one (commitlog offset < 0 or size <= 0), and
    the last of them (None if none).

    Read in chunks that start at one page and double: a queue's segment is mostly unwritten, and reading
    (so faulting in) all of it took every queue's full segment size of memory at open, 6 MB a queue by
    default (3 GB for 500 queues), where RocketMQ stops at the first empty entry too."""
    size = mf.size_bytes
    chunk_entries = _RECOVER_FIRST_CHUNK_ENTRIES
    pos = 0
    last: np.void | None = None
    while pos < size:
        arr = np.frombuffer(mf.read(pos, min(chunk_entries * CQ_ENTRY_BYTES, size - pos)), dtype=CQ_DTYPE)
        bad = np.flatnonzero((arr["offset"] < 0) | (arr["size"] <= 0))
        count = int(bad[0]) if len(bad) else len(arr)
        if count:
            last = arr[count - 1]
        if count < len(arr):
            return pos // CQ_ENTRY_BYTES + count, last
        pos += len(arr) * CQ_ENTRY_BYTES
        chunk_entries = min(chunk_entries * 2, _RECOVER_MAX_CHUNK_ENTRIES)
    return size // CQ_ENTRY_BYTES, last


class ConsumeQueue:
    def __init__(self, topic: str, queue_id: int, directory: str, segment_bytes: int, *, writable: bool,
                 dir_syncs: DirSyncs | None = None) -> None:
        self.topic = topic
        self.queue_id = queue_id
        # one descriptor a segment (the mapping's own), not two: stores hold thousands of queues.  With
        # *dir_syncs* (the table's), a new segment's directories are synced by the next flush, not by the
        # dispatcher as it makes them (see DirSyncs)
        self.files = FileQueue(directory, segment_bytes, writable=writable, keep_fd=False, dir_syncs=dir_syncs)
        self.segment_bytes = segment_bytes
        #: commitlog offset + size of the newest entry (RocketMQ's maxPhysicOffset)
        self.max_physic_offset = -1
        #: byte position of the first entry whose record still exists
        self.min_logic_offset = 0

    # --- offsets ---------------------------------------------------------------------------------------

    @property
    def max_offset(self) -> int:
        return self.files.max_offset // CQ_ENTRY_BYTES

    @property
    def min_offset(self) -> int:
        return self.min_logic_offset // CQ_ENTRY_BYTES

    # --- writing -----------------------------------------------------------------------------------------

    def put(self, commit_log_offset: int, size: int, tags_code: int, queue_offset: int) -> bool:
        """Append the entry for *queue_offset*; an already-built entry is skipped.  False on a gap."""
        if commit_log_offset + size <= self.max_physic_offset:
            return True
        expect = queue_offset * CQ_ENTRY_BYTES
        mf = self.files.last()
        if mf is not None and mf.wrote < mf.size_bytes and mf.start_offset + mf.wrote == expect and queue_offset:
            # the common case, inlined: the next entry of a file with room
            CQ_ENTRY.pack_into(mf.buffer, mf.wrote, commit_log_offset, size, tags_code)
            mf.wrote += CQ_ENTRY_BYTES
            self.max_physic_offset = commit_log_offset + size
            return True
        mf = self.files.last_writable(expect)
        if mf.first_in_queue and queue_offset != 0 and mf.wrote == 0:
            self.min_logic_offset = expect
            until = expect % self.segment_bytes
            if until:
                mf.append(_PRE_BLANK * (until // CQ_ENTRY_BYTES))
            mf.flushed = mf.wrote
        current = mf.start_offset + mf.wrote
        if expect < current:
            return True  # built already (RocketMQ checks this for every entry but the first; so do we, for all)
        if queue_offset != 0 and expect != current and not self._fill_first_segment(mf, expect):
            # RocketMQ logs "[BUG]" and appends anyway, misplacing every later entry; we refuse.
            return False
        # the entry first, then the mark that says it is built: a KeyboardInterrupt between the two (flush()
        # dispatches on the caller's thread) left the mark without the entry, the record skipped as built
        # already and the queue's next record refused as a gap
        mf.append(CQ_ENTRY.pack(commit_log_offset, size, tags_code))
        self.max_physic_offset = commit_log_offset + size
        return True

    def _fill_first_segment(self, mf: MappedFile, expect: int) -> bool:
        """Pre-blank fill from the written end of *mf* up to byte position *expect*, when *mf* is the queue's
        first segment, holds *expect*, and all it holds is fill (or nothing); whether it did.

        The fill of a queue's first segment is written with its first entry, but a crash or a power loss after
        the segment's creation can leave it empty, or with part of its fill: reopened, it no longer counts as
        the first (``first_in_queue`` lives in memory), and every re-dispatched entry was a gap: the queue's
        messages lost, its next put back at the segment's start."""
        start = mf.start_offset
        if self.files.first() is not mf or not start + mf.wrote < expect < start + self.segment_bytes:
            return False
        held = np.frombuffer(mf.read(0, mf.wrote), dtype=CQ_DTYPE)
        if len(held) and ((held["size"] != PRE_BLANK_SIZE).any() or (held["offset"] != 0).any()):
            return False
        mf.append(_PRE_BLANK * ((expect - start - mf.wrote) // CQ_ENTRY_BYTES))
        self.min_logic_offset = expect
        return True

    def put_run(self, facts: Sequence[tuple]) -> int | None:  # type: ignore[type-arg]
        """``put`` for each dispatch fact (commit_log_offset, size, _, _, queue_offset, _, _, tags_code, ...)
        of this queue, in commitlog order; returns the queue offset of the first gap, or None.

        The bytes are those of ``put`` called fact by fact: the already-built prefix is skipped with one
        search, then each stretch of consecutive queue offsets that continues the newest file is packed into
        it with one call (as much of the stretch as fits); every other entry (the first of a new file,
        pre-blank fill, a gap, an entry built already) goes through ``put``."""
        n = len(facts)
        i = 0
        if facts[0][0] + facts[0][1] <= self.max_physic_offset:
            i = bisect_right(facts, self.max_physic_offset, key=_fact_end)  # built already (record ends ascend)
        bad: int | None = None
        while i < n:
            fact = facts[i]
            first = fact[4]
            mf = self.files.last()
            if first and mf is not None and mf.start_offset + mf.wrote == first * CQ_ENTRY_BYTES:
                count = min(n - i, (mf.size_bytes - mf.wrote) // CQ_ENTRY_BYTES)
                stretch = facts[i : i + count] if i or count < n else facts
                if count > 1:
                    numbers = list(map(_QUEUE_OFFSET, stretch))
                    if numbers[-1] - first != count - 1 or numbers != list(range(first, first + count)):
                        # the stretch ends at the first queue offset that does not follow on
                        count = next(k for k, number in enumerate(numbers, first) if number != k) - first
                        stretch = stretch[:count]
                if count:
                    pos = mf.wrote
                    _entries_struct(count).pack_into(mf.buffer, pos,
                                                     *chain.from_iterable(map(_ENTRY_FIELDS, stretch)))
                    mf.wrote = pos + count * CQ_ENTRY_BYTES
                    last = stretch[-1]
                    self.max_physic_offset = last[0] + last[1]
                    i += count
                    continue
            if not self.put(fact[0], fact[1], fact[7], first) and bad is None:
                bad = first
            i += 1
        return bad

    def put_entries(self, commit_log_offsets: np.ndarray, sizes: np.ndarray, tags_codes: np.ndarray,
                    queue_offsets: np.ndarray) -> int | None:
        """``put`` for each entry of these int64 columns (in commitlog order, so their record ends ascend);
        returns the queue offset of the first gap, or None.

        The bytes are those of ``put`` called entry by entry: the already-built prefix is skipped with one
        search, then each stretch of consecutive queue offsets that continues the newest file and fits
        in it is written as one block (``put``'s own fast path, for a whole stretch); every other entry
        (the first of a new file, pre-blank fill, a gap, an entry built already) goes through ``put``."""
        n = len(commit_log_offsets)
        ends = commit_log_offsets + sizes
        i = int(np.searchsorted(ends, self.max_physic_offset, side="right"))  # built already
        bad: int | None = None
        while i < n:
            first = int(queue_offsets[i])
            mf = self.files.last()
            if first and mf is not None and mf.start_offset + mf.wrote == first * CQ_ENTRY_BYTES:
                count = min(n - i, (mf.size_bytes - mf.wrote) // CQ_ENTRY_BYTES)
                if count > 1:
                    stretch = queue_offsets[i : i + count] - first
                    breaks = np.flatnonzero(stretch != np.arange(count))
                    if len(breaks):
                        count = int(breaks[0])
                if count > 1:
                    block = np.empty(count, dtype=CQ_DTYPE)
                    block["offset"] = commit_log_offsets[i : i + count]
                    block["size"] = sizes[i : i + count]
                    block["tags_code"] = tags_codes[i : i + count]
                    pos = mf.wrote
                    mf.buffer[pos : pos + count * CQ_ENTRY_BYTES] = block.view(np.uint8)  # type: ignore[call-overload]
                    mf.wrote = pos + count * CQ_ENTRY_BYTES
                    i += count
                    self.max_physic_offset = int(ends[i - 1])
                    continue
            if not self.put(int(commit_log_offsets[i]), int(sizes[i]), int(tags_codes[i]), first) and bad is None:
                bad = first
            i += 1
        return bad

    # --- reading --------------------------------------------------------------------------------------------

    def entries(self, queue_offset: int, max_count: int) -> tuple[np.ndarray, int] | None:
        """Up to *max_count* entries from *queue_offset*, never crossing a segment; None if unavailable.

        Returns (entries, file_end_queue_offset) where the second value is where the next segment starts.
        """
        pos = queue_offset * CQ_ENTRY_BYTES
        mf = self.files.find(pos)
        if mf is None:
            return None
        rel = pos - mf.start_offset
        if rel >= mf.wrote:
            return None
        n = min(max_count, (mf.wrote - rel) // CQ_ENTRY_BYTES)
        try:
            raw = mf.read(rel, n * CQ_ENTRY_BYTES)
        except ValueError:  # its mapping was closed meanwhile: the queue was dropped
            return None
        return np.frombuffer(raw, dtype=CQ_DTYPE), (mf.start_offset + self.segment_bytes) // CQ_ENTRY_BYTES

    def entry(self, queue_offset: int) -> tuple[int, int, int] | None:
        pos = queue_offset * CQ_ENTRY_BYTES
        mf = self.files.find(pos)
        if mf is None:
            return None
        rel = pos - mf.start_offset
        if rel + CQ_ENTRY_BYTES > mf.wrote:
            return None
        try:
            return CQ_ENTRY.unpack_from(mf.buffer, rel)
        except ValueError:  # its mapping was closed meanwhile: the queue was dropped
            return None

    def last_record_end(self) -> int:
        """Commitlog offset just past the record of the newest entry of the newest segment (RocketMQ's
        getLastOffset); -1 when that segment holds no entry yet or its last entry is pre-blank fill."""
        mf = self.files.last()
        if mf is None or mf.wrote < CQ_ENTRY_BYTES:
            return -1
        offset, size, _ = CQ_ENTRY.unpack_from(mf.buffer, mf.wrote - CQ_ENTRY_BYTES)
        if offset < 0 or size <= 0 or size == PRE_BLANK_SIZE:
            return -1
        return int(offset) + int(size)

    def all_entries(self) -> np.ndarray:
        """Every written entry (pre-blank fill included), for dumps and checks."""
        parts = [np.frombuffer(f.read(0, f.wrote), dtype=CQ_DTYPE) for f in self.files if f.wrote]
        if not parts:
            return np.zeros(0, dtype=CQ_DTYPE)
        return np.concatenate(parts)

    @property
    def first_queue_offset_on_disk(self) -> int:
        return self.files.min_offset // CQ_ENTRY_BYTES

    # --- recovery and clean-up ----------------------------------------------------------------------------

    def load(self, allow_short_tail: bool = True) -> None:
        # a short last segment (a crash while it was created by an older version, or a copy cut short) is
        # treated as a torn tail, as for the commitlog (unless the caller says the last run closed cleanly)
        self.files.load(allow_short_tail=allow_short_tail)

    def recover(self, *, clean_exit: bool = False) -> None:
        """Keep the valid prefix (offset >= 0 and size > 0), starting from the third-last segment.

        The bytes past it are zeroed (a crash can leave entries there that a later scan would take for
        valid ones), unless *clean_exit* says the last run closed cleanly: the writer appends in order and
        every open after a crash zeroes the tail, so it is zero already.  Checking it reads, so faults in,
        the rest of the segment: 6 MB a queue by default, every queue, on every open."""
        files = self.files.files
        if not files:
            return
        index = max(0, len(files) - 3)
        process = files[index].start_offset
        valid_in_file = 0
        while True:
            mf = files[index]
            count, last = _valid_prefix(mf)
            # pre-blank fill (head of a queue's first file) points at no record: RocketMQ counts it and
            # makes maxPhysicOffset 0x7FFFFFFF, so a queue whose valid prefix ends in fill (its real
            # entries cut by a recovery) skipped as "built already" every record below 2 GiB re-dispatched
            if last is not None and int(last["size"]) != PRE_BLANK_SIZE:
                self.max_physic_offset = int(last["offset"]) + int(last["size"])
            valid_in_file = count * CQ_ENTRY_BYTES
            process = mf.start_offset
            if valid_in_file == mf.size_bytes and index + 1 < len(files):
                index += 1
                continue
            break
        end = process + valid_in_file
        self.files.set_positions(end)
        self.files.truncate_after(end, zero_tail=not clean_exit)
        if not clean_exit:
            # after a crash the entries kept may be in the page cache only (the crashed run never synced
            # them): left counted as flushed, a queue that gets nothing new was never synced, the clean close
            # removed the abort marker, and a power loss then left a gap the next open trusts (entries past
            # it lost for good, though their records are in the commitlog).  The next flush syncs them.
            for mf in self.files.files[max(0, len(files) - 3):]:
                mf.flushed = 0

    def truncate_dirty(self, commit_log_offset: int) -> None:
        """Drop every entry that points at or past *commit_log_offset* (pre-blank fill entries stay)."""
        self.max_physic_offset = commit_log_offset
        while True:
            mf = self.files.last()
            if mf is None:
                return
            arr = np.frombuffer(mf.read(0, mf.wrote), dtype=CQ_DTYPE)
            bad = np.flatnonzero((arr["offset"] >= commit_log_offset) & (arr["size"] != PRE_BLANK_SIZE))
            if len(arr) == 0 or (len(bad) and bad[0] == 0):
                self.files.delete_last()
                continue
            cut = int(bad[0]) if len(bad) else len(arr)
            real = np.flatnonzero(arr["size"][:cut] != PRE_BLANK_SIZE)
            if len(real):
                last = arr[int(real[-1])]
                self.max_physic_offset = int(last["offset"]) + int(last["size"])
            if cut < len(arr):  # nothing to cut: the bytes past the wrote position are zero already
                self.files.truncate_after(mf.start_offset + cut * CQ_ENTRY_BYTES)
            return

    def correct_min_offset(self, commit_log_min_offset: int) -> None:
        """Move the min offset to the first real entry whose record is still in the commitlog.

        RocketMQ looks only at the first segment and counts pre-blank fill entries (commitlog offset 0) as
        present, which can point the min offset at fill entries after a restart; we skip them.

        With none found, the min offset goes to the end of what was read, not to the queue's end read
        after: the dispatcher may have added an entry meanwhile (it takes no lock the clean-up holds), and
        that one is a new record's, which consumers must not be sent past.
        """
        files = self.files.files
        if not files:
            return
        scanned_end = files[0].start_offset
        for mf in files:
            wrote = mf.wrote
            scanned_end = mf.start_offset + wrote
            if not wrote:
                continue
            arr = np.frombuffer(mf.read(0, wrote), dtype=CQ_DTYPE)
            ok = np.flatnonzero((arr["offset"] >= commit_log_min_offset) & (arr["size"] > 0)
                                & (arr["size"] != PRE_BLANK_SIZE))
            if len(ok):
                self.min_logic_offset = mf.start_offset + int(ok[0]) * CQ_ENTRY_BYTES
                return
        self.min_logic_offset = scanned_end

    def delete_expired(self, commit_log_min_offset: int) -> int:
        """Delete leading segments (never the last) whose last entry points below the commitlog min."""
        count = 0
        files = self.files.files
        for mf in files[:-1]:
            if mf.wrote < CQ_ENTRY_BYTES:
                break
            last_offset = CQ_ENTRY.unpack_from(mf.buffer, mf.wrote - CQ_ENTRY_BYTES)[0]
            if last_offset < commit_log_min_offset:
                count += 1
            else:
                break
        if count:
            self.files.delete_first(count)
        return count

    # --- time search --------------------------------------------------------------------------------------

    def offset_by_time(self, timestamp_ms: int, commit_log_min_offset: int,
                       store_time_of: Callable[[int, int], int]) -> int:
        """RocketMQ's getOffsetInQueueByTime, including its choice of segment by file modification time;
        never below the queue's min offset (0 while the queue has no segment)."""
        found = 0
        for _ in range(3):
            try:
                found = self._offset_by_time(timestamp_ms, commit_log_min_offset, store_time_of)
                break
            except ValueError:  # a segment's mapping was closed meanwhile (retention, a dropped queue): again
                continue
        # a queue whose every record retention removed has its min at its end (4.9.3 leaves it at 0), and a
        # search racing retention may find no store time: 0 sent a group below the min (OFFSET_MOVED)
        return max(found, self.min_logic_offset // CQ_ENTRY_BYTES) if self.files.files else 0

    def _offset_by_time(self, timestamp_ms: int, commit_log_min_offset: int,
                        store_time_of: Callable[[int, int], int]) -> int:
        files = self.files.files
        if not files:
            return 0
        mf = files[-1]
        # a leading file wholly below the queue's min (retention has not deleted it yet: the pass after an
        # open) is skipped, as 4.9.3 answers once it is gone; searched, it answered 0, below the min
        live_from = self.min_logic_offset - self.segment_bytes
        for f in files:
            if f.start_offset > live_from and f.last_modified_ms() >= timestamp_ms:
                mf = f
                break
        low = self.min_logic_offset - mf.start_offset if self.min_logic_offset > mf.start_offset else 0
        high = mf.wrote - CQ_ENTRY_BYTES
        target = left = right = -1
        left_value = right_value = -1
        buf = mf.buffer
        while high >= low:
            mid = (low + high) // (2 * CQ_ENTRY_BYTES) * CQ_ENTRY_BYTES
            phy, size, _ = CQ_ENTRY.unpack_from(buf, mid)
            if phy < commit_log_min_offset:
                low = mid + CQ_ENTRY_BYTES
                left = mid
                continue
            store_time = store_time_of(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp_ms:
                target = mid
                break
            if store_time > timestamp_ms:
                high = mid - CQ_ENTRY_BYTES
                right = mid
                right_value = store_time
            else:
                low = mid + CQ_ENTRY_BYTES
                left = mid
                left_value = store_time
        if target != -1:
            offset = target
        elif left_value == -1:
            offset = right
        elif right_value == -1:
            offset = left
        else:
            offset = right if abs(timestamp_ms - left_value) > abs(timestamp_ms - right_value) else left
        return int((mf.start_offset + offset) / CQ_ENTRY_BYTES)  # Java long division truncates toward zero

    # --- durability ------------------------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        return self.files.flush(least_pages)

    def close(self) -> None:
        self.files.close()

    def destroy(self) -> None:
        self.files.destroy_all()


class ConsumeQueueTable:
    """All consume queues of a store, created on demand, loaded from ``consumequeue/<topic>/<queueId>``."""

    def __init__(self, root: str, segment_bytes: int, *, writable: bool) -> None:
        self.root = root
        self.segment_bytes = segment_bytes
        self.writable = writable
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        #: the directories new segments and queues changed, synced by the next flush of any queue (one sync
        #: a directory for a burst of new queues, none on the dispatch thread), before the checkpoint is
        #: written: 4.9.3 syncs none
        self.dir_syncs = DirSyncs() if writable else None

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        key = (topic, queue_id)
        cq = self.queues.get(key)
        if cq is None:
            # a queue id that is an int but no plain int (True, a numpy integer) names its directory as a
            # number: str(True) would make consumequeue/<topic>/True, which no load finds again
            queue_id = int(queue_id)
            key = (topic, queue_id)
            cq = ConsumeQueue(topic, queue_id, os.path.join(self.root, topic, str(queue_id)), self.segment_bytes,
                              writable=self.writable, dir_syncs=self.dir_syncs)
            queues = dict(self.queues)
            queues[key] = cq
            self.queues = queues
        return cq

    def load(self, allow_short_tail: bool = True) -> None:
        """Load every queue; *allow_short_tail*: a queue's short last segment is a torn tail (see
        ConsumeQueue.load), not a segment size that disagrees with the configured one."""
        if not os.path.isdir(self.root):
            return
        for topic in sorted(os.listdir(self.root)):
            topic_dir = os.path.join(self.root, topic)
            if not os.path.isdir(topic_dir):
                continue
            try:
                qdirs = sorted(os.listdir(topic_dir))
            except (FileNotFoundError, NotADirectoryError):
                continue  # dropped since the listing (a live store's queue clean-up, seen by a read-only open)
            for qdir in qdirs:
                try:
                    queue_id = int(qdir)
                except ValueError:
                    continue  # RocketMQ skips non-numeric queue directories too
                cq = self.find_or_create(topic, queue_id)
                cq.load(allow_short_tail)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self.queues.values()))

    def drop(self, keys: Iterable[tuple[str, int]]) -> list[ConsumeQueue]:
        """Forget the queues of *keys* and delete their files and directories (a topic directory left
        empty goes too).  The caller makes sure nothing writes or flushes them meanwhile; a later entry for
        one of them starts a new queue."""
        doomed = [cq for key in keys if (cq := self.queues.get(key)) is not None]
        if not doomed:
            return []
        queues = dict(self.queues)
        for cq in doomed:
            del queues[(cq.topic, cq.queue_id)]
        self.queues = queues  # readers see the old table or the new one, never half of a change
        for cq in doomed:
            cq.destroy()
        if self.writable:
            # the removals are synced (once a directory, not a queue): a dropped queue a power loss brings
            # back is served again, its entries pointing at commitlog offsets other messages may hold by then
            removed_topic = False
            for topic in sorted({cq.topic for cq in doomed}):
                topic_dir = os.path.join(self.root, topic)
                try:
                    os.rmdir(topic_dir)
                    removed_topic = True
                except OSError:
                    if os.path.isdir(topic_dir):  # other queues of the topic are still there
                        sync_directory(topic_dir)
            if removed_topic:
                sync_directory(self.root)
        return doomed

    def topics(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic, queue_id in sorted(self.queues):
            out.setdefault(topic, []).append(queue_id)
        return out

    def max_physic_offset(self) -> int:
        return max((cq.max_physic_offset for cq in self.queues.values()), default=-1)

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()
