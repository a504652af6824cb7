"""Rebuild consume queues, index files and the checkpoint of a store from its commitlog alone.

The dispatcher (dispatch.py) turns records into consume-queue and index entries one at a time.  Every
record carries its topic, queue id and queue offset, so the facts can be gathered in any order, in parallel
(rebuild_scan.py, one commitlog byte range at a time; spark/rebuild.py runs the ranges on executors), and
the files written in one vectorised pass here.  The bytes are those the dispatcher writes when it
dispatches the same commitlog from scratch (index file names aside: they carry creation times):

* consume queues: per (topic, queue id) the entries at their queue offsets in files of
  ``consume_queue_file_bytes``; a queue whose first record has offset n > 0 starts in the file holding n,
  filled before n with RocketMQ's pre-blank entries; a gap or repeated queue offset is treated exactly as
  ``ConsumeQueue.put`` does (repeats skipped, nothing after a gap);
* index: in commitlog order, ``max_index_num - 1`` keys per file, slots holding the newest entry number
  of their hash, each entry chained to the previous one of its slot, timeDiff in seconds from the file's
  begin timestamp (a rolled file's first entry measured from the previous file's end, as IndexFile does);
  one more empty file when the dispatcher would have rolled for a record that added no key;
* checkpoint: physic and logics timestamps = store time of the last record, index timestamp = end time
  of the newest index file (every file is flushed before the checkpoint is written).

The commitlog's end is recovery's: the first invalid record (CRC checked when ``check_crc_on_recover``)
in the last segment holding data, or the end of the last segment.  An invalid record in an earlier
segment is damage: a CorruptFileError with its offset, or with ``skip_bad`` the rest of that segment is
skipped and reported.  Nothing here imports pyspark; the scan function is passed in.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from rocketstore.errors import CorruptFileError, StoreConfigError, StoreError, StoreLockedError
from rocketstore.message.record import SysFlag
from rocketstore.store.checkpoint import CHECKPOINT_BYTES, CHECKPOINT_LAYOUT
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import CQ_DTYPE, CQ_ENTRY_BYTES, PRE_BLANK_SIZE
from rocketstore.store.index_file import INDEX_ENTRY, INDEX_HEADER
from rocketstore.store.mapped_file import (
    MappedFile,
    is_segment_name,
    make_directories,
    segment_name,
    sync_directory,
)
from rocketstore.store.rebuild_scan import RangeFacts, ScanRange, TagsRule, scan_range
from rocketstore.store.recovery import used_bytes_after

__all__ = ["DEFAULT_RANGE_BYTES", "RebuildPlan", "RebuildReport", "plan_rebuild", "rebuild_store", "scan_serial"]

DEFAULT_RANGE_BYTES = 64 << 20
#: planned past a segment's last non-zero byte: a valid record may end in zeros (empty properties: a zero
#: length), and the chain's stop, the first zero byte after the records, falls inside the plan
_PAST_DATA = 8
_INDEX_ENTRY_DTYPE = np.dtype([("key_hash", ">i4"), ("offset", ">i8"), ("time_diff", ">i4"), ("prev", ">i4")])
assert _INDEX_ENTRY_DTYPE.itemsize == INDEX_ENTRY.size
_MAX_INT = 0x7FFFFFFF
_HEADER_BYTES = INDEX_HEADER.size

Progress = Callable[[int], None]
ScanFn = Callable[[Sequence[ScanRange]], Iterable[RangeFacts]]


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """The commitlog ranges to scan and what the scan needs (picklable: executors receive it)."""

    store_dir: str
    config: StoreConfig
    ranges: tuple[ScanRange, ...]
    rule: TagsRule
    commit_log_bytes: int

    @property
    def check_crc(self) -> bool:
        return self.config.check_crc_on_recover


@dataclass
class RebuildReport:
    output_dir: str
    in_place: bool
    commit_log_min_offset: int
    valid_end: int
    stop_reason: str | None
    record_count: int = 0
    queue_count: int = 0
    cq_entry_count: int = 0
    index_file_count: int = 0
    index_key_count: int = 0
    skipped: list[tuple[int, int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checkpoint: tuple[int, int, int] = (0, 0, 0)
    abort_file_present: bool = False
    seconds: float = 0.0
    #: of which the scan (the parallel part), and the CPU time its tasks took in all
    scan_seconds: float = 0.0
    scan_cpu_seconds: float = 0.0


# --- planning ----------------------------------------------------------------------------------------


def plan_rebuild(store_dir: str, config: StoreConfig, range_bytes: int = DEFAULT_RANGE_BYTES) -> RebuildPlan:
    """Cut every commitlog segment, up to its last non-zero byte, into ranges of about *range_bytes*.

    A segment is preallocated whole (1 GiB by default) and zero past its records: no record starts in its
    zero tail (a record's magic is not zero), so the plan stops there, and ``_segments`` looks at the byte
    where the chain ends, past the plan if need be, for the stop recovery would see.  An unused segment
    keeps a range of its first bytes, so it is still seen as such."""
    directory = config.commit_log_dir
    seg = config.mapped_file_size_commit_log
    if not os.path.isdir(directory):
        raise StoreConfigError(f"{directory} does not exist: not a store directory")
    names = sorted(filter(is_segment_name, os.listdir(directory)))
    ranges: list[ScanRange] = []
    total = 0
    step = max(4096, min(range_bytes, seg))
    for i, name in enumerate(names):
        path = os.path.join(directory, name)
        size = os.path.getsize(path)
        if size != seg and not (i == len(names) - 1 and size < seg):
            raise StoreConfigError(f"{path} has {size} bytes; every segment must have {seg} "
                                   f"(mappedFileSizeCommitLog): check the configured segment size")
        base = int(name)
        if base % seg:
            raise StoreConfigError(f"{path}: segment start {base} is not a multiple of the segment size {seg}")
        # a few bytes past the data, so that the task whose chain arrives there sees the stop (an unused
        # segment: its head); a short (torn) last file is planned whole, the scan reads it up to its end
        end = min(seg, _data_end(path, base, seg) + _PAST_DATA) if size == seg else seg
        total += min(end, size)
        for begin in range(0, end, step):
            ranges.append(ScanRange(path, base, seg, begin, min(end, begin + step)))
    rule = TagsRule(tuple(sorted(config.delay_levels_ms().items())))
    return RebuildPlan(os.path.abspath(store_dir), config, tuple(ranges), rule, total)


def _data_end(path: str, base: int, seg: int) -> int:
    """Where the segment's non-zero bytes end, found as recovery measures a tail (holes and unwritten extents
    skipped, the rest scanned backwards); the whole segment when the file cannot be mapped for that."""
    try:
        # writable, so that the file system is asked where data lies; nothing is written (a sparse segment
        # keeps its holes: this only reads where data lies, and the store read may be on a full disk)
        mf = MappedFile(path, base, seg, writable=True, create=False, keep_fd=False, fill_holes=False)
    except (OSError, StoreError):
        return seg
    try:
        return used_bytes_after(mf, 0)
    finally:
        mf.close()


def scan_serial(plan: RebuildPlan, progress: Progress | None = None) -> ScanFn:
    """A scan function that scans the ranges one after another in this process (tests, small stores)."""

    def scan(ranges: Sequence[ScanRange]) -> Iterable[RangeFacts]:
        out = []
        for r in ranges:
            out.append(scan_range(r, plan.check_crc, plan.rule))
            if progress is not None:
                progress(r.end - r.begin)
        return out

    return scan


# --- assembling the scanned ranges ---------------------------------------------------------------------


@dataclass
class _Segment:
    base: int
    path: str
    parts: list[RangeFacts]
    stop: str  # "blank" or "invalid"
    stop_pos: int
    reason: str
    holds_data: bool


def _segments(plan: RebuildPlan, facts: list[RangeFacts]) -> list[_Segment]:
    """Chain each segment's ranges: a range whose start is not where the previous chain arrived is
    scanned again from there (a false start, or a record spanning a whole range)."""
    by_base: dict[int, list[RangeFacts]] = {}
    for f in facts:
        by_base.setdefault(f.scan.base, []).append(f)
    out = []
    for base in sorted(by_base):
        ranges = sorted(by_base[base], key=lambda f: f.scan.begin)
        parts: list[RangeFacts] = []
        expected = 0
        stop, stop_pos, reason = "invalid", 0, "end of segment"
        holds_data = not ranges[0].head_is_empty
        for f in ranges:
            if expected >= f.scan.end:
                continue
            if f.first_pos != expected:
                f = scan_range(ScanRange(f.scan.path, f.scan.base, f.scan.segment_bytes, expected, f.scan.end),
                               plan.check_crc, plan.rule, start=expected)
            parts.append(f)
            if f.stop == "next":
                expected = f.next_pos
                stop_pos = expected
                continue
            stop, stop_pos, reason = f.stop, f.next_pos, f.reason
            break
        else:
            stop, stop_pos, reason = _stop_past_plan(plan, ranges[-1].scan, expected, parts)
        out.append(_Segment(base, ranges[0].scan.path, parts, stop, stop_pos, reason, holds_data))
    return out


def _stop_past_plan(plan: RebuildPlan, last: ScanRange, expected: int,
                    parts: list[RangeFacts]) -> tuple[str, int, str]:
    """Where a chain that left the segment's last planned range stops: past the plan (which ends shortly
    after the segment's data), scanned here from where the chain arrived, its facts added to *parts*."""
    if expected >= last.segment_bytes:
        return "invalid", expected, "end of segment"  # the chain ran to the segment's last byte
    tail = scan_range(ScanRange(last.path, last.base, last.segment_bytes, expected, last.segment_bytes),
                      plan.check_crc, plan.rule, start=expected)
    parts.append(tail)
    if tail.stop == "next":
        return "invalid", tail.next_pos, "end of segment"
    return tail.stop, tail.next_pos, tail.reason


@dataclass
class _Facts:
    """Every dispatched record of the valid commitlog, concatenated in commitlog order."""

    offset: np.ndarray
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    topic: np.ndarray
    sys_flag: np.ndarray
    store_timestamp: np.ndarray
    tags_code: np.ndarray
    dispatched: np.ndarray
    key_record: np.ndarray
    key_hash: np.ndarray
    topics: list[str]


def _concat(parts: list[RangeFacts]) -> _Facts:
    topics: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("offset", "size", "queue_id", "queue_offset", "topic",
                                                          "sys_flag", "store_timestamp", "tags_code",
                                                          "dispatched", "key_record", "key_hash")}
    n = 0
    for f in parts:
        remap = np.array([topics.setdefault(t, len(topics)) for t in f.topics] + [-1], dtype=np.int32)
        cols["offset"].append(f.position.astype(np.int64) + f.scan.base)
        cols["size"].append(f.size)
        cols["queue_id"].append(f.queue_id)
        cols["queue_offset"].append(f.queue_offset)
        cols["topic"].append(remap[f.topic])
        cols["sys_flag"].append(f.sys_flag)
        cols["store_timestamp"].append(f.store_timestamp)
        cols["tags_code"].append(f.tags_code)
        cols["dispatched"].append(f.dispatched)
        cols["key_record"].append(f.key_record + n)
        cols["key_hash"].append(f.key_hash)
        n += f.record_count
    dtypes = {"offset": np.int64, "size": np.int64, "queue_id": np.int64, "queue_offset": np.int64,
              "topic": np.int64, "sys_flag": np.int64, "store_timestamp": np.int64, "tags_code": np.int64,
              "dispatched": bool, "key_record": np.int64, "key_hash": np.int64}
    arrays = {k: (np.concatenate(v).astype(dtypes[k], copy=False) if v else np.zeros(0, dtypes[k]))
              for k, v in cols.items()}
    return _Facts(topics=list(topics), **arrays)


# --- consume queues ----------------------------------------------------------------------------------------


def _safe_topic_dir(topic: str, offset: int, path: str) -> str:
    if not topic or topic in (".", "..") or "/" in topic or "\x00" in topic or os.sep in topic:
        raise CorruptFileError(path, offset, f"topic {topic!r} cannot name a consume-queue directory")
    return topic


def _accepted_run(queue_offsets: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Which entries ``ConsumeQueue.put`` would place, in order, on a fresh queue; and the first refused
    queue offset (a gap) or None."""
    if len(queue_offsets) == 0 or bool(np.all(np.diff(queue_offsets) == 1)):
        return np.ones(len(queue_offsets), dtype=bool), None
    keep = np.zeros(len(queue_offsets), dtype=bool)
    current = int(queue_offsets[0])
    gap = None
    for i, q in enumerate(queue_offsets.tolist()):
        if q == current:
            keep[i] = True
            current += 1
        elif q > current and gap is None:
            gap = q
    return keep, gap


def _allocate_and_write(path: str, size_bytes: int, pieces: list[tuple[int, bytes | memoryview]]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            os.posix_fallocate(fd, 0, size_bytes)
        except OSError as exc:
            # only where the file system cannot preallocate: a full disk (ENOSPC) fails the rebuild, where
            # a sparse file made anyway would be the store's to fill later (SIGBUS through its mapping)
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            os.ftruncate(fd, size_bytes)
        for pos, data in pieces:
            view = memoryview(data)
            while len(view):
                n = os.pwrite(fd, view, pos)
                view = view[n:]
                pos += n
        os.fdatasync(fd)
    finally:
        os.close(fd)


def _write_consume_queues(root: str, facts: _Facts, file_bytes: int, path_hint: str,
                          warnings: list[str]) -> tuple[int, int]:
    tx = facts.sys_flag & SysFlag.TRANSACTION_MASK
    queued = facts.dispatched & ((tx == 0) | (tx == SysFlag.TRANSACTION_COMMIT_TYPE))
    idx = np.flatnonzero(queued)
    if len(idx) == 0:
        return 0, 0
    key = (facts.topic[idx] << 32) | (facts.queue_id[idx] & 0xFFFFFFFF)
    order = np.argsort(key, kind="stable")
    idx = idx[order]
    key = key[order]
    bounds = np.flatnonzero(np.diff(key)) + 1
    per_file = file_bytes // CQ_ENTRY_BYTES
    queues = entries = 0
    for group in np.split(idx, bounds):
        topic = facts.topics[int(facts.topic[group[0]])]
        queue_id = int(facts.queue_id[group[0]])
        _safe_topic_dir(topic, int(facts.offset[group[0]]), path_hint)
        q = facts.queue_offset[group]
        keep, gap = _accepted_run(q)
        if gap is not None:
            warnings.append(f"consume queue {topic}/{queue_id}: queue offset {gap} breaks the run; "
                            f"later entries are not built (as the dispatcher refuses them)")
        group, q = group[keep], q[keep]
        first = int(q[0])
        rec = np.zeros(len(group), dtype=CQ_DTYPE)
        rec["offset"] = facts.offset[group]
        rec["size"] = facts.size[group]
        rec["tags_code"] = facts.tags_code[group]
        directory = os.path.join(root, topic, str(queue_id))
        os.makedirs(directory, exist_ok=True)
        fill = first % per_file if first else 0
        first_file = first - fill
        pos = 0
        start_q = first_file
        while pos < len(group):
            take = min(len(group) - pos, per_file - (first + pos - start_q))
            chunk = rec[pos : pos + take].tobytes()
            pieces: list[tuple[int, bytes | memoryview]] = []
            at = (first + pos - start_q) * CQ_ENTRY_BYTES
            if start_q == first_file and fill:
                blank = np.zeros(fill, dtype=CQ_DTYPE)
                blank["size"] = PRE_BLANK_SIZE
                pieces.append((0, blank.tobytes()))
            pieces.append((at, chunk))
            _allocate_and_write(os.path.join(directory, segment_name(start_q * CQ_ENTRY_BYTES)), file_bytes,
                                pieces)
            pos += take
            start_q += per_file
        queues += 1
        entries += len(group)
    return queues, entries


# --- index ---------------------------------------------------------------------------------------------------


def _index_name(now_ms: int) -> str:
    t = time.localtime(now_ms / 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{now_ms % 1000:03d}"


def _write_index(directory: str, facts: _Facts, slot_count: int, entry_count: int) -> tuple[int, int]:
    """Index files as IndexService.build writes them; returns (file count, end timestamp of the last)."""
    keep = facts.dispatched[facts.key_record]
    key_rec = facts.key_record[keep]
    hashes = facts.key_hash[keep]
    offsets = facts.offset[key_rec]
    stamps = facts.store_timestamp[key_rec]
    calls = np.flatnonzero(facts.dispatched)  # the dispatcher hands every record to the index, keys or not
    n = len(hashes)
    cap = entry_count - 1
    if len(calls) == 0:
        return 0, 0
    file_count = -(-n // cap) if n else 0
    # IndexService rolls when a record is handed to a full file, even if it adds no key (and the first record
    # creates the first file)
    last_keyed = int(key_rec[-1]) if n else -1
    if (n == 0 or n % cap == 0) and int(calls[-1]) > last_keyed:
        file_count += 1
    os.makedirs(directory, exist_ok=True)
    size = _HEADER_BYTES + slot_count * 4 + entry_count * 20
    now = int(time.time() * 1000)
    prev_end_ts = prev_end_phy = 0
    last_end_ts = 0
    for j in range(file_count):
        a, b = j * cap, min(n, (j + 1) * cap)
        m = b - a
        begin_ts = max(0, prev_end_ts)
        begin_phy = max(0, prev_end_phy)
        pieces: list[tuple[int, bytes | memoryview]] = []
        if m > 0:
            h = hashes[a:b]
            ts = stamps[a:b]
            slot = h % slot_count
            # by slot, then entry number: sorting the packed (unique) keys themselves is twice as fast as an
            # argsort, and the low half of each gives back its position
            packed = np.sort((slot << 32) | np.arange(m, dtype=np.int64))
            order = packed & 0xFFFFFFFF
            ss = packed >> 32
            first = np.ones(m, dtype=bool)
            first[1:] = ss[1:] != ss[:-1]
            prev_sorted = np.zeros(m, dtype=np.int64)
            sorted_no = order + 1  # entry numbers in slot order
            prev_sorted[1:] = sorted_no[:-1]
            prev_sorted[first] = 0
            prev = np.empty(m, dtype=np.int64)
            prev[order] = prev_sorted
            base = np.full(m, int(ts[0]), dtype=np.int64)
            base[0] = begin_ts  # the first entry is measured before the file takes its begin timestamp
            diff = ts - base
            time_diff = np.where(base <= 0, 0, np.where(diff < 0, 0, np.minimum(diff // 1000, _MAX_INT)))
            rec = np.empty(m, dtype=_INDEX_ENTRY_DTYPE)
            rec["key_hash"] = h
            rec["offset"] = offsets[a:b]
            rec["time_diff"] = time_diff
            rec["prev"] = prev
            last_of_slot = np.ones(m, dtype=bool)
            last_of_slot[:-1] = first[1:]
            slots = np.zeros(slot_count, dtype=">i4")
            slots[ss[last_of_slot]] = sorted_no[last_of_slot]
            header = INDEX_HEADER.pack(int(ts[0]), int(ts[-1]), int(offsets[a]), int(offsets[b - 1]),
                                       int(np.count_nonzero(first)), m + 1)
            pieces = [(0, header), (_HEADER_BYTES, slots.view(np.uint8).data),
                      (_HEADER_BYTES + slot_count * 4 + 20, rec.view(np.uint8).data)]
            prev_end_ts, prev_end_phy = int(ts[-1]), int(offsets[b - 1])
        else:
            pieces = [(0, INDEX_HEADER.pack(begin_ts, begin_ts, begin_phy, begin_phy, 0, 1))]
        last_end_ts = prev_end_ts
        _allocate_and_write(os.path.join(directory, _index_name(now + j)), size, pieces)
    return file_count, last_end_ts


# --- the whole rebuild -----------------------------------------------------------------------------------------


def _lock_store(root: str) -> int:
    """Take the store's lock (byte 0 of ``lock``, the lock MessageStore and a Java broker take)."""
    path = os.path.join(root, "lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        setlk = getattr(fcntl, "F_OFD_SETLK", None)
        if setlk is None:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        else:
            fcntl.fcntl(fd, setlk, struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
    except OSError as exc:
        os.close(fd)
        raise StoreLockedError(root) from exc
    return fd


def _assemble(plan: RebuildPlan, facts: list[RangeFacts], skip_bad: bool,
              report: RebuildReport) -> list[RangeFacts]:
    segments = _segments(plan, facts)
    keep: list[RangeFacts] = []
    for i, seg in enumerate(segments):
        keep.extend(seg.parts)
        end = seg.base + seg.stop_pos
        if seg.stop == "blank":
            report.valid_end = seg.base + plan.config.mapped_file_size_commit_log
            continue
        if any(s.holds_data for s in segments[i + 1 :]):
            reason = seg.reason or "invalid record"
            if not skip_bad:
                raise CorruptFileError(seg.path, end, f"damaged record at commitlog offset {end}: {reason} "
                                                      f"(--skip-bad skips the rest of its segment)")
            nxt = segments[i + 1].base
            report.skipped.append((end, nxt, reason))
            report.valid_end = nxt
            continue
        report.valid_end = end
        report.stop_reason = None if seg.reason == "no record magic" else seg.reason
        break
    return keep


def rebuild_store(plan: RebuildPlan, scan: ScanFn, *, output_dir: str | None = None, in_place: bool = False,
                  skip_bad: bool = False) -> RebuildReport:
    """Scan *plan*'s ranges with *scan* and write consumequeue/, index/ and checkpoint.

    Into *output_dir* (which must be absent or empty), or with *in_place* into the store itself, which
    must not be open (its lock is taken for the whole rebuild; StoreLockedError otherwise).  The old
    directories are replaced only once the new ones are complete and durable.
    """
    t0 = time.perf_counter()
    cfg = plan.config
    root = plan.store_dir
    if in_place == (output_dir is not None):
        raise StoreConfigError("give either an output directory or in_place")
    lock_fd = _lock_store(root) if in_place else -1
    try:
        if in_place:
            target = os.path.join(root, f".rebuild-{os.getpid()}")
            shutil.rmtree(target, ignore_errors=True)
        else:
            assert output_dir is not None  # checked above: exactly one of the two is given
            target = os.path.abspath(output_dir)
            if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
                raise StoreConfigError(f"{target} exists and is not an empty directory")
        first = plan.ranges[0].base if plan.ranges else 0
        report = RebuildReport(target if not in_place else root, in_place, first, first, None)
        report.abort_file_present = os.path.exists(os.path.join(root, "abort"))
        t_scan = time.perf_counter()
        results = list(scan(plan.ranges))
        report.scan_seconds = time.perf_counter() - t_scan
        report.scan_cpu_seconds = sum(f.cpu_seconds for f in results)
        parts = _assemble(plan, results, skip_bad, report)
        facts = _concat(parts)
        if report.skipped or len(parts) < len(results):
            inside = facts.offset < report.valid_end
            if not inside.all():  # records after the valid end (never: a range stops at the first invalid one)
                raise StoreError("internal: records past the valid end")
        for offset, reason in (u for f in parts for u in f.undecodable):
            report.warnings.append(f"record at commitlog offset {offset} is not dispatched: {reason}")
        make_directories(target)  # (its entry synced into its parent: an output_dir outlasts a power loss)
        report.record_count = len(facts.offset)
        index_ts = 0
        # the index on a second thread, beside the consume queues: both are mostly numpy sorts and file
        # writes that release the GIL (and neither reads what the other writes)
        with ThreadPoolExecutor(1, thread_name_prefix="rocketstore-rebuild-index") as pool:
            index = pool.submit(_write_index, os.path.join(target, "index"), facts, cfg.max_hash_slot_num,
                                cfg.max_index_num) if cfg.message_index_enable else None
            report.queue_count, report.cq_entry_count = _write_consume_queues(
                os.path.join(target, "consumequeue"), facts, cfg.consume_queue_file_bytes,
                plan.ranges[0].path if plan.ranges else root, report.warnings)
            if index is not None:
                report.index_file_count, index_ts = index.result()
                report.index_key_count = int(np.count_nonzero(facts.dispatched[facts.key_record]))
        dispatched_ts = facts.store_timestamp[facts.dispatched]
        last_ts = int(dispatched_ts[-1]) if len(dispatched_ts) else 0
        report.checkpoint = (last_ts, last_ts, index_ts)
        page = bytearray(CHECKPOINT_BYTES)
        CHECKPOINT_LAYOUT.pack_into(page, 0, *report.checkpoint)
        for sub in ("consumequeue", "index"):
            d = os.path.join(target, sub)
            if os.path.isdir(d):
                for dirpath, _, _ in os.walk(d):
                    sync_directory(dirpath)
        if in_place:
            _install(root, target, bytes(page))
        else:
            _allocate_and_write(os.path.join(target, "checkpoint"), CHECKPOINT_BYTES, [(0, bytes(page))])
            sync_directory(target)
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)
    report.seconds = time.perf_counter() - t0
    return report


def _install(root: str, staged: str, checkpoint_page: bytes) -> None:
    """Swap the staged consumequeue/ and index/ in, then the checkpoint; old copies are removed last."""
    for name in ("consumequeue", "index"):
        live = os.path.join(root, name)
        old = os.path.join(root, f".rebuild-old-{name}")
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(live):
            os.rename(live, old)
        new = os.path.join(staged, name)
        if os.path.isdir(new):
            os.rename(new, live)
    tmp = os.path.join(staged, "checkpoint")
    _allocate_and_write(tmp, CHECKPOINT_BYTES, [(0, checkpoint_page)])
    os.replace(tmp, os.path.join(root, "checkpoint"))
    sync_directory(root)
    for name in ("consumequeue", "index"):
        shutil.rmtree(os.path.join(root, f".rebuild-old-{name}"), ignore_errors=True)
    shutil.rmtree(staged, ignore_errors=True)
    # the removals synced too: brought back by a power loss, the old copies (as big as the new ones) and
    # the staging directory, which no open reads and only another in-place rebuild of this process id
    # would remove, would hold their disk space for good
    sync_directory(root)
