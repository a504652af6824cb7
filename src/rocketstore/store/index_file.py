"""Index files: a hash table from ``topic#key`` to commitlog offsets, with chained entries.

Layout (big-endian)::

    +0                      HEADER   40 bytes: beginTimestamp long, endTimestamp long, beginPhyOffset long,
                                              endPhyOffset long, hashSlotCount int, indexCount int
    +40                     SLOTS    slot_count x int: newest entry number of the slot (0 = empty)
    +40 + slot_count*4      ENTRIES  entry_count x 20 bytes:
                                        +0 keyHash int, +4 commitlog offset long,
                                        +12 timeDiff int (seconds since beginTimestamp), +16 previous entry int

Entry number 0 is never used (indexCount starts at 1), so a file holds at most entry_count - 1 keys.
Files are named after their creation time (local time, ``yyyyMMddHHmmssSSS``) and roll when full.

Thread-safety: one dispatcher writes; queries read concurrently.  A query may miss a key being added at
that moment, never see a torn entry (the slot is published after the entry is written).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
import time
from bisect import bisect_left
from collections.abc import Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING

from rocketstore.errors import StoreConfigError
from rocketstore.message.hashing import index_key_hash_for_topic, index_key_hash_with_prefix, index_key_prefix
from rocketstore.message.record import SysFlag
from rocketstore.store.mapped_file import MappedFile, make_directories, sync_directory

if TYPE_CHECKING:
    import numpy as np

__all__ = ["INDEX_ENTRY", "INDEX_HEADER", "IndexFile", "IndexService"]

log = logging.getLogger(__name__)

INDEX_HEADER = struct.Struct(">qqqqii")
INDEX_ENTRY = struct.Struct(">iqii")
_SLOT = struct.Struct(">i")
_HEADER_BYTES = 40
_MAX_INT = 0x7FFFFFFF
#: below this, Java's long ``storeTimestamp - beginTimestamp`` wraps to a large positive timeDiff (clamped to
#: Integer.MAX_VALUE), as the vectorised paths' int64 arithmetic does; Python's ints would not wrap
_LONG_MIN = -(2**63)
#: a run with fewer keys than this (counted as one per record, two when records carry a UNIQ_KEY) is
#: indexed key by key (``IndexFile.put_hashes``): the vectorised path costs ~40 numpy calls per run, which
#: pays off only past ~50 keys (measured, 100 B records: at 32 records with UNIQ_KEY + KEYS numpy was ~15%
#: faster, with KEYS alone ~20% slower)
_BULK_MIN_KEYS = 56


def _negative_time_diff(diff: int) -> int:
    """The timeDiff of an entry stored before its file's begin timestamp: 0, as Java's truncating division
    and clamp give, unless the long subtraction overflowed into a positive value: that value's seconds,
    clamped (Integer.MAX_VALUE but for a begin timestamp near Long.MAX_VALUE, where the wrapped difference
    is small, as numpy's int64 gives it on the vectorised paths)."""
    return min(_MAX_INT, (diff + 2**64) // 1000) if diff < _LONG_MIN else 0


class IndexFile:
    def __init__(self, path: str, slot_count: int, entry_count: int, *, writable: bool, create: bool,
                 prev_end_phy_offset: int = 0, prev_end_timestamp: int = 0, fill_holes: bool = True) -> None:
        self.path = path
        self.slot_count = slot_count
        self.entry_count = entry_count
        size = _HEADER_BYTES + slot_count * 4 + entry_count * 20
        self.file = MappedFile(path, 0, size, writable=writable, create=create, fill_holes=fill_holes)
        # Slots and entries are touched at random: without this, the first fault into each untouched stretch
        # of a fresh file costs ~2-3 ms (read-around fills a window), ~10 µs with it (the header, the
        # first slot and the first entry of a new file alone cost ~7 ms).
        advise = getattr(self.file.buffer, "madvise", None)
        if advise is not None:
            advise(mmap.MADV_RANDOM)
        self._entries_at = _HEADER_BYTES + slot_count * 4
        #: a full older file whose holes were covered (see below): never written again, not even undone
        self.frozen = False
        if create:
            self.begin_timestamp = self.end_timestamp = 0
            self.begin_phy_offset = self.end_phy_offset = 0
            self.hash_slot_count = 0
            self.index_count = 1
            if prev_end_phy_offset > 0:
                self.begin_phy_offset = self.end_phy_offset = prev_end_phy_offset
            if prev_end_timestamp > 0:
                self.begin_timestamp = self.end_timestamp = prev_end_timestamp
            self._write_header()
        else:
            (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
             self.hash_slot_count, self.index_count) = INDEX_HEADER.unpack_from(self.file.buffer, 0)
            if self.index_count <= 0:
                self.index_count = 1
            if writable and not fill_holes and self.is_full:
                # an older file, full: only read from now on (a sparse one, a Java broker's: its untouched
                # hash slots are holes, which a key query reads).  A covered page is private memory, so a
                # write to it would never reach the file: nothing writes a full file (put_key and the bulk
                # writer refuse one, index_count never goes down: IndexService.truncate_past
                # undoes no entry of a frozen file), and that must stay so
                self.frozen = self.file.cover_holes()

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.entry_count

    def _write_header(self) -> None:
        INDEX_HEADER.pack_into(self.file.buffer, 0, self.begin_timestamp, self.end_timestamp,
                               self.begin_phy_offset, self.end_phy_offset, self.hash_slot_count,
                               self.index_count)

    def put_key(self, key_hash: int, commit_log_offset: int, store_timestamp: int, *, header: bool = True) -> bool:
        """Append one entry (RocketMQ's putKey); False when the file is full.  ``header=False`` leaves the
        header bytes (and the modification time) for the caller to write once after a run of keys."""
        if self.index_count >= self.entry_count:
            return False
        buf = self.file.buffer
        slot_pos = _HEADER_BYTES + (key_hash % self.slot_count) * 4
        slot_value = _SLOT.unpack_from(buf, slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            # clamped to [0, Integer.MAX_VALUE]: a negative difference is 0 unless Java's long wrapped it
            diff = store_timestamp - self.begin_timestamp
            time_diff = _negative_time_diff(diff) if diff < 0 else min(_MAX_INT, diff // 1000)
        INDEX_ENTRY.pack_into(buf, self._entries_at + self.index_count * 20, key_hash, commit_log_offset,
                              time_diff, slot_value)
        _SLOT.pack_into(buf, slot_pos, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = commit_log_offset
            self.begin_timestamp = store_timestamp
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = commit_log_offset
        self.end_timestamp = store_timestamp
        if header:
            self._write_header()
            self.file.touch_modified()
        return True

    def put_hashes(self, hashes: Sequence[int], offsets: Sequence[int], stamps: Sequence[int]) -> int:
        """``put_key`` for each (hash, commitlog offset, store time), in order, as plain ints: the same
        bytes, with the file's state kept in locals and the header written once; returns how many went in
        (fewer than given when the file fills).  For the few keys of a short dispatch run, where numpy's
        per-call cost (``index_bulk.put_keys``) would outweigh the work."""
        n = min(len(hashes), self.entry_count - self.index_count)
        if n <= 0:
            return 0
        i = 0
        if self.index_count <= 1:  # the first entry also sets the file's begin timestamp and offset
            self.put_key(hashes[0], offsets[0], stamps[0], header=False)
            i = 1
        buf = self.file.buffer
        ic = self.index_count
        slot_count = self.slot_count
        at = self._entries_at + ic * 20
        begin = self.begin_timestamp
        read_slot = _SLOT.unpack_from
        write_slot = _SLOT.pack_into
        write_entry = INDEX_ENTRY.pack_into
        new_slots = 0
        for k in range(i, n):
            h = hashes[k]
            slot_pos = _HEADER_BYTES + (h % slot_count) * 4
            prev = read_slot(buf, slot_pos)[0]
            if prev <= 0 or prev > ic:
                prev = 0
                new_slots += 1
            if begin <= 0:
                time_diff = 0
            else:
                time_diff = stamps[k] - begin
                time_diff = _negative_time_diff(time_diff) if time_diff < 0 else min(_MAX_INT, time_diff // 1000)
            write_entry(buf, at, h, offsets[k], time_diff, prev)
            # the count before the slot that publishes the entry: a concurrent query takes a slot past the
            # count for a stale one and found none of the keys in that slot's chain
            self.index_count = ic + 1
            write_slot(buf, slot_pos, ic)  # after the entry: a concurrent query never sees a torn one
            ic += 1
            at += 20
        self.hash_slot_count += new_slots
        self.index_count = ic
        self.end_phy_offset = offsets[n - 1]
        self.end_timestamp = stamps[n - 1]
        self._write_header()
        self.file.touch_modified()
        return n

    def is_time_matched(self, begin_ms: int, end_ms: int) -> bool:
        return ((begin_ms < self.begin_timestamp and end_ms > self.end_timestamp)
                or self.begin_timestamp <= begin_ms <= self.end_timestamp
                or self.begin_timestamp <= end_ms <= self.end_timestamp)

    def select(self, key_hash: int, max_count: int, begin_ms: int, end_ms: int, out: list[int]) -> None:
        """Append to *out* the offsets in this key's chain with an equal hash and a time in range."""
        buf = self.file.buffer
        slot_value = _SLOT.unpack_from(buf, _HEADER_BYTES + (key_hash % self.slot_count) * 4)[0]
        count = self.index_count
        # entry numbers past the file (a damaged header's count) are as invalid as those past the count
        if slot_value <= 0 or slot_value > count or slot_value >= self.entry_count or count <= 1:
            return
        current = slot_value
        while len(out) < max_count:
            hash_read, offset_read, time_diff, prev = INDEX_ENTRY.unpack_from(buf, self._entries_at + current * 20)
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            if hash_read == key_hash and begin_ms <= time_read <= end_ms:
                out.append(offset_read)
            # an entry always links to an earlier one (the slot's value before it was written): a link that
            # does not go back is damage, and following it could loop for ever
            if prev <= 0 or prev >= current or time_read < begin_ms:
                break
            current = prev

    def drop_entries_from(self, commit_log_offset: int) -> bool:
        """Undo the last entries, those pointing at or past *commit_log_offset* (records a crash took), newest
        first: each slot gets back the entry it held before (the entry's link), and the count goes back.
        Slots are synced before the header that shrinks the count, so a power loss between leaves entries
        that the next recovery undoes again, never a count that drops entries while slots still point past
        it.  True when there were any."""
        buf = self.file.buffer
        top = min(self.index_count, self.entry_count)
        first = top
        at = self._entries_at
        while first > 1 and INDEX_ENTRY.unpack_from(buf, at + (first - 1) * 20)[1] >= commit_log_offset:
            first -= 1
        if first == top:
            return False
        for e in range(top - 1, first - 1, -1):
            key_hash, _offset, _diff, prev = INDEX_ENTRY.unpack_from(buf, at + e * 20)
            if prev <= 0:  # the slot was empty (or held a stale value) when the entry went in
                prev = 0
                self.hash_slot_count = max(0, self.hash_slot_count - 1)
            elif prev >= e:  # (a link that does not go back: damage, as select reads it)
                prev = 0
            _SLOT.pack_into(buf, _HEADER_BYTES + (key_hash % self.slot_count) * 4, prev)
        self.file.sync()
        self.index_count = first
        return True

    def flush(self) -> None:
        self._write_header()
        self.file.wrote = self.file.size_bytes
        self.file.flush(0)

    def close(self) -> None:
        self.file.close()

    def destroy(self) -> None:
        self.file.destroy()


def _index_file_name(now_ms: int) -> str:
    t = time.localtime(now_ms / 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{now_ms % 1000:03d}"


class IndexService:
    """The index files of a store, newest last: building entries from dispatch and answering queries."""

    def __init__(self, directory: str, slot_count: int, entry_count: int, *, writable: bool) -> None:
        self.directory = directory
        self.slot_count = slot_count
        self.entry_count = entry_count
        self.writable = writable
        self.files: list[IndexFile] = []
        self.lock = threading.Lock()
        #: called with the end timestamp of a file that just filled (the checkpoint records it)
        self.on_file_full: list = []

    def load(self, last_exit_ok: bool, checkpoint_index_timestamp: int, *, strict: bool = True,
             quiet: bool = False) -> bool:
        """Map the index files (after a crash, deleting those newer than the checkpoint's index time, as
        IndexService.load does).  A file whose size the geometry does not give is an error; with
        ``strict=False`` (messageIndexEnable=false: only queries and retention use the files) the index is
        left empty instead and False returned, its files untouched, with a WARNING (at DEBUG when ``quiet``:
        an opener that never queries the index)."""
        if not os.path.isdir(self.directory):
            return True
        expected = _HEADER_BYTES + self.slot_count * 4 + self.entry_count * 20
        destroyed = False
        listing = sorted(os.listdir(self.directory))
        # the newest file is the one written to: only its holes get blocks at open (see MappedFile)
        newest = next((n for n in reversed(listing) if n.isdigit()), None)
        for name in listing:
            path = os.path.join(self.directory, name)
            if name.endswith(".allocating") and self.writable:
                os.unlink(path)  # a crash interrupted its allocation: it never held data
                continue
            if not name.isdigit() or not os.path.isfile(path):
                continue
            try:
                size = os.path.getsize(path)
            except FileNotFoundError:
                continue  # deleted since the listing (a live store's retention, seen by a read-only open)
            if size != expected:
                if size == 0:
                    continue  # (a crash before a Java broker mapped it): it holds no entry
                if not strict:
                    log.log(logging.DEBUG if quiet else logging.WARNING,
                            "index file %s has %d bytes, not the %d the configured geometry gives: with "
                            "messageIndexEnable=false the index is left unread (no key queries, not expired)",
                            path, size, expected)
                    self.close()
                    return False
                # skipped, its keys would answer nothing and retention would never delete it
                raise StoreConfigError(
                    f"index file {path} has {size} bytes, but maxHashSlotNum={self.slot_count} and "
                    f"maxIndexNum={self.entry_count} make index files of {expected} bytes "
                    f"(40 + slots x 4 + entries x 20): configure the geometry this store was written with")
            try:
                f = IndexFile(path, self.slot_count, self.entry_count, writable=self.writable, create=False,
                              fill_holes=name == newest)
            except FileNotFoundError:
                continue  # deleted since the listing, as above
            if not last_exit_ok and f.end_timestamp > checkpoint_index_timestamp:
                f.destroy()
                destroyed = True
                continue
            if f.index_count <= 1 and f.end_phy_offset == 0 and f.end_timestamp == 0 and self.files:
                # a file of zeros (a crash between its creation and its header's first write): it holds no
                # entry, and begins where the one before it ends, as its creation would have written (with
                # endPhyOffset 0, abnormal recovery's re-dispatch indexed every record it walked again)
                prev = self.files[-1]
                f.begin_phy_offset = f.end_phy_offset = prev.end_phy_offset
                f.begin_timestamp = f.end_timestamp = prev.end_timestamp
            self.files.append(f)
        if destroyed:
            sync_directory(self.directory)  # brought back, it would outlive the checkpoint that outgrows it
        return True

    def _last_writable(self) -> IndexFile:
        prev_phy = prev_ts = 0
        prev: IndexFile | None = None
        if self.files:
            last = self.files[-1]
            if not last.is_full:
                return last
            prev = last
            prev_phy, prev_ts = last.end_phy_offset, last.end_timestamp
        if self.writable:
            make_directories(self.directory)
        now = int(time.time() * 1000)
        names = {f.name for f in self.files}
        while _index_file_name(now) in names or os.path.exists(os.path.join(self.directory, _index_file_name(now))):
            now += 1
        f = IndexFile(os.path.join(self.directory, _index_file_name(now)), self.slot_count, self.entry_count,
                      writable=self.writable, create=True, prev_end_phy_offset=prev_phy,
                      prev_end_timestamp=prev_ts)
        with self.lock:
            self.files = self.files + [f]
        if prev is not None:
            try:
                prev.flush()
            except (ValueError, TypeError):  # retention deleted it meanwhile: nothing of it to keep
                return f
            for hook in self.on_file_full:
                hook(prev.end_timestamp)
        return f

    def newest_if_full(self) -> IndexFile | None:
        """The newest index file when it is full, else None."""
        files = self.files
        return files[-1] if files and files[-1].is_full else None

    def roll_if_due(self, last_offset: int | None = None, full_before: IndexFile | None = None) -> None:
        """The roll RocketMQ's buildIndex makes for every record, keys or not (it gets the newest file before
        anything else): with no file, the first is created; a full newest file rolls (flushed, the checkpoint
        told its end time), unless the record at commitlog *last_offset*, the last of the records just
        indexed, filled it (and it was not already full before them: *full_before*).  Called once a
        dispatch run or recovery chunk, and for a single record that adds no key."""
        files = self.files
        if files:
            last = files[-1]
            if not last.is_full or (last.end_phy_offset == last_offset and last is not full_before):
                return
        self._last_writable()

    def build(self, topic: str, commit_log_offset: int, store_timestamp: int, sys_flag: int,
              uniq_key: str | None, keys: str | None) -> None:
        """Index a dispatched record: its UNIQ_KEY, then each space-separated KEYS token."""
        f = self._last_writable()
        if commit_log_offset < f.end_phy_offset:
            return  # already indexed (re-dispatch after recovery)
        if sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_ROLLBACK_TYPE:
            return
        if uniq_key is not None:
            f = self._put(f, index_key_hash_for_topic(topic, uniq_key), commit_log_offset, store_timestamp)
        if keys:
            for key in keys.split(" "):
                if key:
                    f = self._put(f, index_key_hash_for_topic(topic, key), commit_log_offset, store_timestamp)

    def build_one(self, topic: str, commit_log_offset: int, store_timestamp: int, uniq_key: str | None,
                  keys: str | None) -> None:
        """``build_run`` for one record (not a rollback), in as few Python steps as it takes: a send that
        arrives on its own is dispatched on its own."""
        files = self.files
        f = files[-1] if files else None
        if f is None or f.index_count >= f.entry_count:
            f = self._last_writable()
        if commit_log_offset < f.end_phy_offset:
            return  # already indexed (re-dispatch after recovery)
        prefix = index_key_prefix(topic)
        hash_of = index_key_hash_with_prefix
        if keys and " " not in keys:
            hashes = [hash_of(prefix, keys)] if uniq_key is None else [hash_of(prefix, uniq_key), hash_of(prefix, keys)]
        else:
            hashes = [] if uniq_key is None else [hash_of(prefix, uniq_key)]
            if keys:
                hashes += [hash_of(prefix, key) for key in keys.split(" ") if key]
            if not hashes:
                return
        count = len(hashes)
        done = f.put_hashes(hashes, [commit_log_offset] * count, [store_timestamp] * count)
        while done < count:
            f = self._last_writable()
            done += f.put_hashes(hashes[done:], [commit_log_offset] * (count - done),
                                 [store_timestamp] * (count - done))

    def build_run(self, topics: Sequence[str], offsets: Sequence[int], stamps: Sequence[int],
                  uniqs: Sequence[str | None], keys: Sequence[str | None]) -> None:
        """``build`` for a run of records given as columns, in commitlog order, none of them a rollback:
        topic, commitlog offset, store time, UNIQ_KEY (indexed when not None) and KEYS (each non-empty
        space-separated token indexed).  The entries (UNIQ_KEY then the tokens, record by record) are
        listed without a Python step per record in the common shapes (at most one token per KEYS), hashed
        in one vectorised pass and appended with ``put_keys``; files roll exactly as ``build`` rolls them."""
        if not offsets:
            return
        files = self.files
        f = files[-1] if files else None
        if f is None or f.index_count >= f.entry_count:
            f = self._last_writable()
        # offsets ascend: the records already indexed (re-dispatch after recovery) are a prefix
        skip = bisect_left(offsets, f.end_phy_offset)
        if skip:
            if skip == len(offsets):
                return
            topics, offsets, stamps, uniqs, keys = (topics[skip:], offsets[skip:], stamps[skip:], uniqs[skip:],
                                                    keys[skip:])
        n = len(offsets)
        if (n if uniqs[0] is None else 2 * n) < _BULK_MIN_KEYS:
            self._build_few(f, topics, offsets, stamps, uniqs, keys)
            return
        import numpy as np

        from rocketstore.store.index_bulk import joined_key_hashes

        first_topic = topics[0]
        prefixes: np.ndarray | int
        if topics.count(first_topic) == n:
            prefixes = index_key_prefix(first_topic)
        else:
            prefixes = np.fromiter(map(index_key_prefix, topics), dtype=np.uint64, count=n)
        # A record's entries are its UNIQ_KEY (when not None), then its KEYS tokens.  Each column is joined
        # into one NUL-separated string and hashed whole (a None makes the join fail: that is how a column
        # with gaps is noticed without a Python step per record in the common case), then the two columns'
        # hashes are interleaved record by record and the absent ones dropped.
        has_uniq: list[bool] | None = None  # None: every record has one
        try:
            uniq_text: str | None = "\x00".join(uniqs)  # type: ignore[arg-type]
        except TypeError:
            # (count(None) is a pointer comparison for each None, a slower one for each string)
            if uniqs[0] is None and uniqs.count(None) == n:
                uniq_text = None
            else:
                has_uniq = [u is not None for u in uniqs]
                uniqs = [u if u is not None else "" for u in uniqs]
                uniq_text = "\x00".join(uniqs)  # type: ignore[arg-type]
        try:
            key_text: str | None = "\x00".join(keys)  # type: ignore[arg-type]
        except TypeError:
            if keys[0] is None and keys.count(None) == n:
                key_text = None
            else:
                keys = [k or "" for k in keys]
                key_text = "\x00".join(keys)  # type: ignore[arg-type]
        owners: np.ndarray | None = None  # None: entry i belongs to record i
        if key_text is not None and " " in key_text:
            # some KEYS hold several tokens: list the entries one by one
            names, owner_list = self._tokens(uniqs if has_uniq is None else
                                             [u if h else None for u, h in zip(uniqs, has_uniq)],
                                             keys)  # type: ignore[arg-type]
            if not names:
                return
            owners = np.asarray(owner_list, dtype=np.intp)
            hashes = joined_key_hashes(prefixes if isinstance(prefixes, int) else prefixes[owners],
                                       "\x00".join(names), names)
        else:
            has_key: np.ndarray | None = None  # None: every record has a (one-token) KEYS
            if key_text is not None and (key_text[:1] == "\x00" or key_text[-1:] == "\x00" or "\x00\x00" in key_text
                                         or not key_text):
                has_key = np.fromiter(map(bool, keys), dtype=bool, count=n)  # empty KEYS: no entry
                if not has_key.any():
                    key_text = None
            if uniq_text is None and key_text is None:
                return
            if key_text is None:
                hashes = joined_key_hashes(prefixes, uniq_text, uniqs)  # type: ignore[arg-type]
                keep = None if has_uniq is None else np.asarray(has_uniq, dtype=bool)
                step = 1
            elif uniq_text is None:
                hashes = joined_key_hashes(prefixes, key_text, keys)  # type: ignore[arg-type]
                keep = has_key
                step = 1
            else:
                hashes = np.empty(2 * n, dtype=np.int64)
                hashes[0::2] = joined_key_hashes(prefixes, uniq_text, uniqs)  # type: ignore[arg-type]
                hashes[1::2] = joined_key_hashes(prefixes, key_text, keys)  # type: ignore[arg-type]
                keep = None
                if has_uniq is not None or has_key is not None:
                    keep = np.ones(2 * n, dtype=bool)
                    if has_uniq is not None:
                        keep[0::2] = has_uniq
                    if has_key is not None:
                        keep[1::2] = has_key
                step = 2
            if keep is not None:
                hashes = hashes[keep]
                owners = np.flatnonzero(keep)
                if step == 2:
                    owners >>= 1
            elif step == 2:
                owners = np.repeat(np.arange(n, dtype=np.intp), 2)
        offs = np.fromiter(offsets, dtype=np.int64, count=n)
        tss = np.fromiter(stamps, dtype=np.int64, count=n)
        if owners is not None:
            offs = offs[owners]
            tss = tss[owners]
        self.put_hashed(hashes, offs, tss, f)

    def _build_few(self, f: IndexFile, topics: Sequence[str], offsets: Sequence[int], stamps: Sequence[int],
                   uniqs: Sequence[str | None], keys: Sequence[str | None]) -> None:
        """``build_run`` for a few keys, without numpy (whose fixed cost would outweigh the work): the keys
        are hashed one by one and appended in one loop (``IndexFile.put_hashes``).  The common shapes (one
        topic, one KEYS token per record, UNIQ_KEY on every record or on none) are listed with C-level
        passes; any other run record by record."""
        n = len(offsets)
        topic = topics[0]
        listed = False
        if topics.count(topic) == n:
            try:
                joined = "".join(keys)  # type: ignore[arg-type]  # (a None fails the join)
            except TypeError:
                joined = " "
            if " " not in joined and all(keys):
                none = uniqs.count(None)
                if none == n:
                    names, offs, tss = keys, offsets, stamps
                    listed = True
                elif none == 0:
                    names = tuple(chain.from_iterable(zip(uniqs, keys)))  # type: ignore[arg-type]
                    offs = tuple(chain.from_iterable(zip(offsets, offsets)))
                    tss = tuple(chain.from_iterable(zip(stamps, stamps)))
                    listed = True
        if listed:
            hashes = list(map(index_key_hash_with_prefix,  # type: ignore[arg-type]
                              repeat(index_key_prefix(topic), len(names)), names))
        else:
            hashes, offs, tss = self._few_entries(topics, offsets, stamps, uniqs, keys)
        total = len(hashes)
        if not total:
            return
        done = f.put_hashes(hashes, offs, tss)
        while done < total:
            f = self._last_writable()
            done += f.put_hashes(hashes[done:], offs[done:], tss[done:])

    @staticmethod
    def _few_entries(topics: Sequence[str], offsets: Sequence[int], stamps: Sequence[int],
                     uniqs: Sequence[str | None], keys: Sequence[str | None]) -> tuple[list[int], list[int], list[int]]:
        """(key hashes, commitlog offsets, store times) of a run's entries, record by record: UNIQ_KEY, then
        each non-empty KEYS token."""
        hashes: list[int] = []
        offs: list[int] = []
        tss: list[int] = []
        topic = topics[0]
        prefix = index_key_prefix(topic)
        hash_of = index_key_hash_with_prefix
        for record_topic, offset, ts, uniq, text in zip(topics, offsets, stamps, uniqs, keys):
            if record_topic != topic:
                topic = record_topic
                prefix = index_key_prefix(topic)
            if uniq is not None:
                hashes.append(hash_of(prefix, uniq))
                offs.append(offset)
                tss.append(ts)
            if text:
                for key in text.split(" ") if " " in text else (text,):
                    if key:
                        hashes.append(hash_of(prefix, key))
                        offs.append(offset)
                        tss.append(ts)
        return hashes, offs, tss

    def put_hashed(self, hashes: np.ndarray, offsets: np.ndarray, stamps: np.ndarray,
                   f: IndexFile | None = None) -> None:
        """Append entries whose key hashes are already computed (numpy arrays of equal length, in
        commitlog order), rolling to a new index file whenever one fills, as ``build`` rolls."""
        from rocketstore.store.index_bulk import put_keys

        if f is None:
            f = self._last_writable()
        done = 0
        total = len(hashes)
        while done < total:
            done += put_keys(f, hashes[done:], offsets[done:], stamps[done:])
            if done < total:
                f = self._last_writable()

    @staticmethod
    def _tokens(uniqs: Sequence[str | None], texts: Sequence[str]) -> tuple[list[str], list[int]]:
        """The keys to index, in order, and the record each belongs to: UNIQ_KEY, then KEYS' tokens."""
        names: list[str] = []
        owners: list[int] = []
        for i, (uniq, text) in enumerate(zip(uniqs, texts)):
            if uniq is not None:
                names.append(uniq)
                owners.append(i)
            if text:
                for key in text.split(" "):
                    if key:
                        names.append(key)
                        owners.append(i)
        return names, owners

    def _put(self, f: IndexFile, key_hash: int, commit_log_offset: int, store_timestamp: int) -> IndexFile:
        while not f.put_key(key_hash, commit_log_offset, store_timestamp):
            f = self._last_writable()
        return f

    def query(self, topic: str, key: str, max_count: int, begin_ms: int, end_ms: int) -> tuple[list[int], int, int]:
        """(offsets, last update timestamp, last update commitlog offset), newest file first."""
        offsets: list[int] = []
        last_ts = last_phy = 0
        files = self.files
        key_hash = index_key_hash_for_topic(topic, key)
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin_ms, end_ms):
                try:
                    f.select(key_hash, max_count, begin_ms, end_ms, offsets)
                except ValueError:  # its mapping was closed meanwhile: retention deleted the file
                    continue
            if f.begin_timestamp < begin_ms or len(offsets) >= max_count:
                break
        return offsets, last_ts, last_phy

    def delete_expired(self, commit_log_min_offset: int) -> int:
        """Delete files (never the newest) whose last entry points below the commitlog min.  The list is
        read and replaced under the lock: a file the dispatcher adds meanwhile is kept."""
        with self.lock:
            files = self.files
            gone = [f for f in files[:-1] if f.end_phy_offset < commit_log_min_offset]
            if gone:
                self.files = [f for f in files if f not in gone]
        for f in gone:
            f.destroy()
        if gone and self.writable:
            sync_directory(self.directory)  # as FileQueue.delete_first: a deleted file must not come back
        return len(gone)

    def truncate_past(self, commit_log_offset: int) -> None:
        """After the commitlog lost its tail: drop files whose entries begin past it, undo the entries past it
        in those left, and pull their end offset (and an empty one's begin) back to it.  Building skips
        records below the newest file's end (already indexed): left past the cut, it would skip the new
        records written where the lost ones were (4.9.3 keeps it there, and leaves those records unindexed
        until the commitlog grows past it, and the lost records' entries in place)."""
        keep = [f for f in self.files if not (f.begin_phy_offset >= commit_log_offset and f.index_count > 1)]
        gone = [f for f in self.files if f not in keep]
        for f in gone:
            f.destroy()
        self.files = keep
        for f in keep:
            # (the end is the start of the last record indexed: a cut at it took that record too)
            if f.end_phy_offset >= commit_log_offset:
                # the entries of the lost records go too (a record written again at such an offset, with the
                # same key, would come back twice; one at another offset would leave a dangling entry); a
                # read-only open undoes them in its private mapping only (MappedFile.sync writes nothing).  A
                # frozen file keeps them (a write into a covered hole would never reach the file) and stays
                # full: building rolls a new file past it
                dropped = not f.frozen and f.drop_entries_from(commit_log_offset)
                if not dropped and f.end_phy_offset == commit_log_offset:
                    continue
                f.end_phy_offset = commit_log_offset
                f.begin_phy_offset = min(f.begin_phy_offset, commit_log_offset)
                f._write_header()
                # durable, a stale end read back at the next recovery would skip records again; not
                # IndexFile.flush, which counts the whole file flushed: its later entries would never sync
                f.file.sync()
        if gone and self.writable:
            # once a recovery: brought back by a power loss, a file would answer key queries with offsets
            # past the cut, which new records come to hold
            sync_directory(self.directory)

    def flush(self) -> None:
        for f in self.files:
            f.flush()

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []
