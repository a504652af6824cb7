"""StoreSnapshot: a read-only view of a cleanly closed store that trusts its consume queues.

``MessageStore.open(read_only=True)`` recovers: it walks the last three commitlog segments record by record
in Python (all of a 1 GiB store) and re-dispatches after a crash.  A store whose last run closed cleanly
(no ``abort`` file: RocketMQ and rocketstore remove it only once dispatch has caught up) has consume queues
that already point at every record, so a bulk reader needs none of that: this view maps the consume
queues in scratch mode and reads the commitlog with ``pread`` (nothing on disk changes), finds each
consume queue's valid prefix with numpy, and hands out consume-queue entries and raw commitlog spans.  It
never walks the commitlog.

What it trusts is checked where it is cheap: :meth:`tails_agree` reads the record each queue's last entry
points at (a copy cut short would fail here), and readers compare every record's own size and offset fields
with its entry (``rocketstore.spark.store_source`` does, vectorised).  A store with an ``abort`` file (live,
or crashed) must be opened through MessageStore, whose recovery rebuilds what the queues may lack.

Imports store pieces (consume queue, config, recovery's record check) and the record layout;
never the facade.
Thread-safety: none; one reader per snapshot object.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from bisect import bisect_right
from collections import Counter
from typing import Self

import numpy as np

from rocketstore.errors import StoreConfigError
from rocketstore.message.record import PHYSICAL_OFFSET_POS, SYS_FLAG_POS, store_timestamp_position
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import CQ_DTYPE, CQ_ENTRY_BYTES, ConsumeQueueTable
from rocketstore.store.mapped_file import is_segment_name, map_private_sparse
from rocketstore.store.recovery import validate_record

__all__ = ["SegmentFiles", "StoreSnapshot", "check_store_root", "closed_cleanly", "consume_queue_bytes_on_disk",
           "segment_bytes_on_disk"]

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")

#: what a store root holds: RocketMQ writes the checkpoint (and abort) when a broker starts, the directories
#: come with the first message
_STORE_ROOT_ENTRIES = frozenset({"commitlog", "consumequeue", "index", "checkpoint", "abort"})


def closed_cleanly(path: str) -> bool:
    """True when the store at *path* has no ``abort`` marker: its last run shut down cleanly."""
    return not os.path.exists(os.path.join(path, "abort"))


def check_store_root(path: str, shown: str | None = None) -> None:
    """StoreConfigError unless the directory *path* holds a store (named *shown* in the message).

    A read of a mistyped path (the commitlog directory, the broker's home) would otherwise see an empty store
    and answer "OK" or zero rows; a recovering write would put a new store there, which inside a commitlog
    directory stops RocketMQ 4.9.3 loading the real one (MappedFileQueue.doLoad refuses any file there that
    is not of the segment size).
    """
    names = set(os.listdir(path))
    if names & _STORE_ROOT_ENTRIES:
        return
    hint = ""
    if any(map(is_segment_name, names)):
        hint = " (it holds segment files: a commitlog or consume-queue directory, not the root above it)"
    raise StoreConfigError(f"{shown or path} is not a store root: it has no commitlog/, consumequeue/, index/ or "
                           f"checkpoint{hint}; give the directory storePathRootDir names")


def segment_bytes_on_disk(directory: str) -> int | None:
    """The segment size the files of *directory* (20-digit names) show, None without one: the most common
    file size, the largest on a tie.  The first file alone would let one segment cut short (an interrupted
    copy) set the size, and the size check would then blame every good segment instead of the cut one."""
    sizes = _segment_file_sizes(directory)
    return max(sizes, key=lambda size: (sizes[size], size)) if sizes else None


def _segment_file_sizes(directory: str) -> Counter[int]:
    """How many files of each size *directory* holds (20-digit names); a directory or file that retention
    or a queue drop deletes while it is read counts as not there."""
    sizes: Counter[int] = Counter()
    try:
        names = list(filter(is_segment_name, os.listdir(directory)))
    except (FileNotFoundError, NotADirectoryError):
        return sizes
    for name in names:
        try:
            st = os.stat(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            sizes[st.st_size] += 1
    return sizes


def consume_queue_bytes_on_disk(consume_queue_root: str, max_queues: int = 64) -> int | None:
    """The consume-queue file size the store under *consume_queue_root* shows: the most common file size
    (the largest on a tie) over the files of its first *max_queues* queues with a file (topic, then queue id,
    in name order); None without one.  One queue alone would let its one file cut short (a queue of a few
    messages has a single file) set the size, and opening would then blame every good queue instead."""
    try:
        topics = sorted(os.listdir(consume_queue_root))
    except (FileNotFoundError, NotADirectoryError):
        return None
    sizes: Counter[int] = Counter()
    queues = 0
    for topic in topics:
        topic_dir = os.path.join(consume_queue_root, topic)
        try:
            queue_names = sorted(os.listdir(topic_dir))
        except (FileNotFoundError, NotADirectoryError):  # a file, or a topic dropped since the listing
            continue
        for queue in queue_names:
            found = _segment_file_sizes(os.path.join(topic_dir, queue)) if queue.isdigit() else None
            if found:
                sizes.update(found)
                queues += 1
                if queues >= max_queues:
                    return max(sizes, key=lambda size: (sizes[size], size))
    return max(sizes, key=lambda size: (sizes[size], size)) if sizes else None


class SegmentFiles:
    """The commitlog segments: ``read`` copies with ``pread`` (small reads, planning); ``view`` hands out
    a zero-copy numpy view of a shared read-only mapping, so a bulk reader touches each byte once (the
    copy was ~7% of a worker's CPU).  Views stay valid until :meth:`close`, which leaves a mapping that
    still has views to be unmapped when the last one goes."""

    def __init__(self, directory: str, segment_bytes: int) -> None:
        names = sorted(filter(is_segment_name, os.listdir(directory))) \
            if os.path.isdir(directory) else []
        self.segment_bytes = segment_bytes
        self.starts = [int(n) for n in names]
        self.paths = [os.path.join(directory, n) for n in names]
        self._fds: dict[int, int] = {}
        self._maps: dict[int, mmap.mmap] = {}

    @property
    def min_offset(self) -> int:
        return self.starts[0] if self.starts else 0

    def read(self, offset: int, size_bytes: int) -> bytes | None:
        i = bisect_right(self.starts, offset) - 1
        if i < 0 or size_bytes <= 0:
            return None
        pos = offset - self.starts[i]
        if pos + size_bytes > self.segment_bytes:
            return None
        fd = self._fds.get(i)
        if fd is None:
            try:
                fd = self._fds[i] = os.open(self.paths[i], os.O_RDONLY)
            except FileNotFoundError:
                return None  # deleted since the listing (retention on a live store): its records are gone
        data = os.pread(fd, size_bytes, pos)
        return data if len(data) == size_bytes else None  # a short (cut) file: those bytes are not there

    def damage(self, offset: int, size_bytes: int) -> tuple[str, int, str] | None:
        """(path, position in the file, why) when bytes :meth:`read` could not give are missing from a
        segment that is still there (a file cut short, or a span past the segment's end); None when the
        segment holding *offset* is gone."""
        i = bisect_right(self.starts, offset) - 1
        if i < 0 or offset >= self.starts[i] + self.segment_bytes:
            return None
        try:
            length = os.path.getsize(self.paths[i])
        except FileNotFoundError:
            return None  # deleted since planning (retention on a live store)
        pos = offset - self.starts[i]
        if pos + size_bytes > self.segment_bytes:
            return self.paths[i], pos, f"{size_bytes} bytes of records run past the segment's end"
        if pos + size_bytes > length:
            return self.paths[i], pos, f"the file is cut short: {length} of {self.segment_bytes} bytes"
        return None

    def view(self, offset: int, size_bytes: int) -> np.ndarray | None:
        i = bisect_right(self.starts, offset) - 1
        if i < 0 or size_bytes <= 0:
            return None
        pos = offset - self.starts[i]
        mm = self._maps.get(i)
        if mm is None:
            try:
                f = open(self.paths[i], "rb")  # noqa: SIM115 - closed by the with below
            except FileNotFoundError:
                return None  # deleted since the listing: the caller's read then says which records are gone
            with f:
                st = os.fstat(f.fileno())
                length = st.st_size
                if length == 0:
                    return None
                if st.st_blocks * 512 < length:
                    # a sparse segment (a Java broker's, a cp --sparse copy): on tmpfs a fault of a hole
                    # allocates, SIGBUS on a full one; its holes are mapped as anonymous zeros instead
                    mm = self._maps[i] = map_private_sparse(f.fileno(), length)
                else:
                    mm = self._maps[i] = mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ)
        if pos + size_bytes > len(mm):
            return None
        return np.frombuffer(mm, dtype=np.uint8, count=size_bytes, offset=pos)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}
        for mm in self._maps.values():
            try:
                mm.close()
            except BufferError:
                pass  # a batch still holds a view: the mapping goes when the view does
        self._maps = {}


class StoreSnapshot:
    """Consume queues and commitlog of a cleanly closed store, read-only.  Use :meth:`open`."""

    def __init__(self, config: StoreConfig, *, check_queues: bool) -> None:
        self.config = config
        self.commit_log = SegmentFiles(config.commit_log_dir, config.mapped_file_size_commit_log)
        self.queues = ConsumeQueueTable(config.consume_queue_dir, config.consume_queue_file_bytes, writable=False)
        try:
            self.queues.load()
            if check_queues:
                min_offset = self.commit_log.min_offset
                for cq in self.queues:
                    cq.recover()
                    cq.correct_min_offset(min_offset)
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(cls, path: str, config: StoreConfig | None = None, *, check_queues: bool = True) -> StoreSnapshot:
        """Map the store at *path*.  ``check_queues`` finds each queue's valid prefix and min offset (what
        planning needs); a reader given ranges planned from such a view can skip it."""
        config = (config or StoreConfig()).replace(store_path_root_dir=os.fspath(path))
        return cls(config, check_queues=check_queues)

    # --- what MessageStore answers too (the planner's questions) ---------------------------------------------

    def topics(self) -> dict[str, list[int]]:
        return self.queues.topics()

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    @property
    def min_commit_log_offset(self) -> int:
        return self.commit_log.min_offset

    def _store_time_of(self, commit_log_offset: int, size: int) -> int:
        data = self.read_span(commit_log_offset, min(size, 256) if size > 0 else 0)
        if data is None or len(data) < 64:
            return -1
        sys_flag = int.from_bytes(data[SYS_FLAG_POS : SYS_FLAG_POS + 4], "big", signed=True)
        pos = store_timestamp_position(sys_flag)
        return int.from_bytes(data[pos : pos + 8], "big", signed=True)

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        cq = self.queues.get(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp_ms, self.commit_log.min_offset, self._store_time_of)

    def store_time(self, topic: str, queue_id: int, queue_offset: int) -> int:
        cq = self.queues.get(topic, queue_id)
        entry = cq.entry(queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self._store_time_of(entry[0], entry[1])

    # --- bulk reads ------------------------------------------------------------------------------------------

    def entries(self, topic: str, queue_id: int, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(queue offsets, consume-queue entries) of ``[start, end)`` that are on disk, across segments."""
        cq = self.queues.get(topic, queue_id)
        if cq is None or start >= end:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=CQ_DTYPE)
        offsets: list[np.ndarray] = []
        parts: list[np.ndarray] = []
        at = start
        while at < end:
            found = cq.entries(at, end - at)
            if found is None:  # a segment that is gone: go on with the next one
                per_file = cq.segment_bytes // CQ_ENTRY_BYTES
                at = (at // per_file + 1) * per_file
                if at * CQ_ENTRY_BYTES >= cq.files.max_offset:
                    break
                continue
            arr, _ = found
            if not len(arr):
                break
            offsets.append(np.arange(at, at + len(arr), dtype=np.int64))
            parts.append(arr)
            at += len(arr)
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=CQ_DTYPE)
        return np.concatenate(offsets), np.concatenate(parts)

    def read_span(self, commit_log_offset: int, size_bytes: int) -> bytes | None:
        """A copy of *size_bytes* at *commit_log_offset* when they lie inside one segment, else None."""
        return self.commit_log.read(commit_log_offset, size_bytes)

    def span_damage(self, commit_log_offset: int, size_bytes: int) -> tuple[str, int, str] | None:
        """Why :meth:`read_span` gave None, as (segment path, position, reason), when the segment is damaged
        rather than deleted; None for a deleted segment, whose records a reader skips as MessageStore.get
        does."""
        return self.commit_log.damage(commit_log_offset, size_bytes)

    def span_view(self, commit_log_offset: int, size_bytes: int) -> np.ndarray | None:
        """Like :meth:`read_span` but zero-copy: a read-only view valid until :meth:`close`."""
        return self.commit_log.view(commit_log_offset, size_bytes)

    def tails_agree(self) -> bool:
        """Every queue's last entry points at a whole, self-consistent message record (recovery's check,
        torn-write test included) of the size and commitlog offset the entry says."""
        for cq in self.queues:
            last = cq.max_offset - 1
            if last < cq.min_offset:
                continue
            entry = cq.entry(last)
            if entry is None:
                return False
            offset, size, _ = entry
            # with the 8 bytes after it (a segment always has them: the end-of-file blank's room): a record
            # ending in a zero byte is torn only when no record head follows it (recovery's rule), and that
            # head's size must fit in what is left of the segment
            record = self.read_span(offset, size + 8) or self.read_span(offset, size)
            if record is None or _INT.unpack_from(record)[0] != size:
                return False
            room = self.commit_log.segment_bytes - offset % self.commit_log.segment_bytes
            limit = room if len(record) > size else size
            if validate_record(record, 0, limit, False)[:2] != ("MESSAGE", size):
                return False
            if _LONG.unpack_from(record, PHYSICAL_OFFSET_POS)[0] != offset:
                return False
        return True

    def close(self) -> None:
        self.commit_log.close()
        self.queues.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
