"""Retention: delete expired commitlog segments, then the consume-queue and index files they orphan.

RocketMQ's rules: deletion is attempted when the local hour is in ``deleteWhen``, when disk use passes
``diskMaxUsedSpaceRatio``, or on request.  Segments (never the last) are eligible from the oldest while
their age passes ``fileReservedTime`` hours, or all of them when disk use passes the force ratio (0.85);
at most 10 per run.  Disk use is the commitlog's disk, then (when that one asks for nothing) the consume
queues' disk, which differs when ``storePathCommitLog`` puts the commitlog elsewhere.  Above 0.90 (the
commitlog's disk) the store also refuses writes (disk full) until space comes back.

Unlike RocketMQ, a segment holding records the dispatcher has not reached yet is never deleted: those
records would never get their consume-queue entries, and the queue would wait at the gap (RocketMQ writes
later entries at the wrong place instead).

Age is not taken from the wall clock alone: a file counts as old only if it is old by its mtime AND by
the monotonic clock since it was first seen (plus the age it already had then), so a wall clock that
jumps forward never deletes data early.

Imports store pieces, never the facade.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketstore.message.java_numbers import parse_java_int
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.index_file import IndexService

__all__ = ["DISK_FULL_RATIO", "FORCE_CLEAN_RATIO", "CleanReport", "Cleaner", "delete_when_hours", "disk_usage_ratio"]

log = logging.getLogger(__name__)

FORCE_CLEAN_RATIO = 0.85
DISK_FULL_RATIO = 0.90
_MAX_FILES_PER_RUN = 10


def disk_usage_ratio(path: str) -> float:
    """Used / (used + available) of the file system holding *path*, rounded up to whole percent; -1 if unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    used = total - st.f_bfree * st.f_frsize
    if used + avail <= 0:
        return -1.0
    return math.ceil(used * 100 / (used + avail)) / 100


def delete_when_hours(delete_when: str) -> tuple[set[int], list[str]]:
    """The hours of ``deleteWhen`` ("04;16"), and the parts that name no hour of the day.  Each part is read
    as 4.9.3's Integer.parseInt reads it (a sign, any Unicode decimal digits; surrounding blanks stripped
    here); trailing empty parts are dropped, as Java's String.split drops them ("04;" is 04).  A part that is
    no number, or a number outside 0 .. 23, never matches the clock (str.isdigit also passed "²", which
    int() then refused: the store did not open, and a config update raised half-way)."""
    parts = delete_when.split(";")
    if ";" in delete_when:  # (Java: "" is one empty part; ";" none)
        while parts and parts[-1] == "":
            parts.pop()
    hours: set[int] = set()
    bad: list[str] = []
    for part in parts:
        try:
            hour = parse_java_int(part.strip())
        except ValueError:
            bad.append(part)
            continue
        if 0 <= hour <= 23:
            hours.add(hour)
        else:
            bad.append(part)
    return hours, bad


@dataclass(frozen=True, slots=True)
class CleanReport:
    reason: str | None
    commit_log_files_deleted: int
    consume_queue_files_deleted: int
    index_files_deleted: int
    disk_usage_ratio: float
    disk_full: bool


class Cleaner:
    def __init__(self, commitlog: CommitLog, queues: ConsumeQueueTable, index: IndexService | None, *,
                 file_reserved_time_h: int, delete_when: str, disk_max_used_space_ratio: int,
                 clean_file_forcibly_enable: bool, usage: Callable[[str], float] = disk_usage_ratio,
                 dispatched_offset: Callable[[], int] | None = None) -> None:
        self.commitlog = commitlog
        self.queues = queues
        self.index = index
        self.set_policy(file_reserved_time_h=file_reserved_time_h, delete_when=delete_when,
                        disk_max_used_space_ratio=disk_max_used_space_ratio,
                        clean_file_forcibly_enable=clean_file_forcibly_enable)
        self.usage = usage
        #: how far the dispatcher has read the commitlog (None: no dispatcher to wait for)
        self.dispatched_offset = dispatched_offset
        self.disk_full = False
        self._seen: dict[str, tuple[float, int]] = {}  # path -> (monotonic when first seen, age then in ms)
        # 0, not the commitlog's min: queue and index files a crash left pointing before it (retention had
        # deleted segments, not yet their files) go at the first pass, as 4.9.3's lastPhysicalMinOffset
        self._last_min_offset = 0
        #: a pass for space deleted nothing and that was logged: logged again once a pass deletes or the disk
        #: is back under the ratio
        self._space_warned = False

    def set_policy(self, *, file_reserved_time_h: int, delete_when: str, disk_max_used_space_ratio: int,
                   clean_file_forcibly_enable: bool) -> None:
        """The retention settings the next pass uses (4.9.3 reads them from its config at every pass, so an
        UPDATE_BROKER_CONFIG of fileReservedTime, deleteWhen, diskMaxUsedSpaceRatio or
        cleanFileForciblyEnable acts at once)."""
        self.reserved_ms = file_reserved_time_h * 3_600_000
        self.delete_hours = delete_when_hours(delete_when)[0]
        clamped = min(95, max(10, disk_max_used_space_ratio))
        if clamped != disk_max_used_space_ratio:  # 4.9.3's getter clamps it without a word
            log.warning("diskMaxUsedSpaceRatio=%d acts as %d: it is taken within 10 .. 95, as in 4.9.3",
                        disk_max_used_space_ratio, clamped)
        self.max_used_ratio = clamped / 100
        self.forcibly = clean_file_forcibly_enable

    def _age_ms(self, path: str, mtime_ms: int, now_ms: int) -> int:
        wall_age = now_ms - mtime_ms
        seen = self._seen.get(path)
        if seen is None:
            self._seen[path] = seen = (time.monotonic(), max(0, wall_age))
        mono_age = int((time.monotonic() - seen[0]) * 1000) + seen[1]
        return min(wall_age, mono_age)

    def _logic_usage(self) -> float:
        root = self.queues.root
        return self.usage(root if os.path.isdir(root) else os.path.dirname(root))

    def check_disk(self) -> float:
        directory = self.commitlog.files.directory
        ratio = self.usage(directory)
        full = ratio > DISK_FULL_RATIO
        if full != self.disk_full:  # a line when it turns full, one when it is not any more (as 4.9.3)
            if full:
                log.error("the commitlog's disk is %.1f%% used (%s), over %.0f%%: writes are refused until "
                          "space is freed", ratio * 100, directory, DISK_FULL_RATIO * 100)
            else:
                log.info("the commitlog's disk is %.1f%% used (%s): writes are taken again", ratio * 100,
                         directory)
        self.disk_full = full
        return ratio

    def run(self, *, force: bool = False, now_ms: int | None = None, local_hour: int | None = None) -> CleanReport:
        """One clean-up pass (RocketMQ runs one every cleanResourceInterval)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        hour = time.localtime(now / 1000).tm_hour if local_hour is None else local_hour
        ratio = self.check_disk()
        space = ratio < 0 or ratio > self.max_used_ratio
        # an unknown usage (-1) asks for a pass, as 4.9.3's does, but only by age: it says nothing of a full disk
        clean_now = self.forcibly and ratio > FORCE_CLEAN_RATIO
        used = ratio
        if not space:
            # then the consume queues' disk (another one when storePathCommitLog is set), as 4.9.3's
            # isSpaceToDelete looks at it when the commitlog's disk asked for nothing
            logic = self._logic_usage()
            space = logic < 0 or logic > self.max_used_ratio
            clean_now = clean_now or (self.forcibly and logic > FORCE_CLEAN_RATIO)
            used = max(ratio, logic)
        reason = None
        if force:
            reason = "manual"
        elif space:
            reason = "disk space"
        elif hour in self.delete_hours:
            reason = "time"
        deleted = 0
        if reason is not None:
            files = self.commitlog.files.files
            dispatched = self.dispatched_offset() if self.dispatched_offset is not None else None
            count = young = 0
            for mf in files[:-1]:
                if count >= _MAX_FILES_PER_RUN:
                    break
                if dispatched is not None and mf.start_offset + mf.size_bytes > dispatched:
                    break  # records not dispatched yet: they would never reach their consume queues
                expired = self._age_ms(mf.path, mf.last_modified_ms(), now) >= self.reserved_ms
                if expired or clean_now:
                    count += 1
                    young += not expired
                else:
                    break
            if count:
                deleted = len(self.commitlog.files.delete_first(count))
                if young:
                    # messages lost before their time: 4.9.3 warns at every such pass too
                    log.warning("retention: deleted %d commitlog segment(s), %d of them younger than "
                                "fileReservedTime (%d h): the disk is %.1f%% used, over %.0f%% "
                                "(cleanFileForciblyEnable)", deleted, young, self.reserved_ms // 3_600_000,
                                used * 100, FORCE_CLEAN_RATIO * 100)
                else:
                    log.info("retention: deleted %d commitlog segment(s) (%s)", deleted, reason)
        if reason == "disk space" and not deleted and used > self.max_used_ratio:  # (not an unknown usage)
            if not self._space_warned:  # 4.9.3 warns at every such pass ("... but delete file failed")
                self._space_warned = True
                log.warning("the disk is %.1f%% used, over diskMaxUsedSpaceRatio (%.0f%%), but no commitlog "
                            "segment could be deleted (one is deleted once older than fileReservedTime, %d h, "
                            "and its records dispatched; younger ones only over %.0f%% with "
                            "cleanFileForciblyEnable, now %s)", used * 100, self.max_used_ratio * 100,
                            self.reserved_ms // 3_600_000, FORCE_CLEAN_RATIO * 100,
                            "true" if self.forcibly else "false")
        elif deleted or not space:
            self._space_warned = False
        cq_deleted = idx_deleted = 0
        min_offset = self.commitlog.min_offset
        if min_offset > self._last_min_offset:
            for cq in self.queues:
                cq_deleted += cq.delete_expired(min_offset)
                cq.correct_min_offset(min_offset)
            if self.index is not None:
                idx_deleted = self.index.delete_expired(min_offset)
            self._last_min_offset = min_offset
        return CleanReport(reason, deleted, cq_deleted, idx_deleted, ratio, self.disk_full)
