"""Opening a store: the open path's directories and typed errors, and the facade's loading and recovery.

The helpers make the store's directories (each synced into its parent), size the machine's memory (the
in-memory read limit), and turn an open that ran out of file descriptors or memory mappings into a typed
error naming the limit.  :class:`StoreOpening` is the facade's (message_store.py) base class holding what
its constructor runs once the lock is held: load the files, recover, catch dispatch up, build the cleaner.

Must not import: message_store (the facade), reads, background; broker, remoting.
Thread-safety: runs once, in the constructor, before the store is shared.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from rocketstore.errors import OutOfMappingsError, StoreConfigError, TooManyOpenFilesError
from rocketstore.files import make_directories
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.cleanup import Cleaner
from rocketstore.store.commitlog import CommitLog
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import ConsumeQueueTable
from rocketstore.store.dispatch import Dispatcher
from rocketstore.store.index_file import IndexService
from rocketstore.store.recovery import RecoveryReport, recover
from rocketstore.store.store_parts import StoreParts

__all__ = ["StoreOpening"]


def _make_store_dir(key: str, path: str) -> None:
    """``os.makedirs(path, exist_ok=True)``, each directory it makes synced into its parent (a new store's
    root lost at a power loss takes its synced records with it); a file where the directory (or one above
    it) should be is a StoreConfigError naming the setting, as a read-only open says it, not a bare
    FileExistsError."""
    if not path:  # (os.makedirs("") is a FileNotFoundError naming no file)
        raise StoreConfigError(f"{key} is empty")
    try:
        make_directories(path)
    except (FileExistsError, NotADirectoryError) as exc:
        raise StoreConfigError(f"{key} {path} is not a directory ({exc.strerror})") from exc


def _total_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


def _hot_memory_bytes(config: StoreConfig) -> int:
    """How much of the commitlog behind a read position counts as in memory: accessMessageInMemoryMaxRatio
    percent of the machine's physical memory, as 4.9.3's getMessage reckons it."""
    return int(_total_memory_bytes() * config.access_message_in_memory_max_ratio / 100)


def _out_of_descriptors(exc: BaseException, root: str) -> TooManyOpenFilesError | None:
    """The typed error for an open that failed for want of file descriptors (else None)."""
    if not isinstance(exc, OSError) or isinstance(exc, TooManyOpenFilesError) \
            or exc.errno not in (errno.EMFILE, errno.ENFILE):
        return None
    if exc.errno == errno.ENFILE:
        return TooManyOpenFilesError(root, exc.errno, None, "the system is out of file descriptors (ENFILE, "
                                     "fs.file-max); every segment file of the store holds one while it is open")
    limit: int | None = None
    try:
        import resource  # noqa: PLC0415 - Unix only, and only here

        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        pass
    shown = "unlimited" if limit is None or limit < 0 else str(limit)
    return TooManyOpenFilesError(root, exc.errno, limit, f"out of file descriptors at the process's limit "
                                 f"(RLIMIT_NOFILE {shown}, EMFILE): every commitlog, consume-queue and index file "
                                 "of the store holds one while it is open; raise the limit (ulimit -n, "
                                 "LimitNOFILE=)")


def _out_of_mappings(exc: BaseException, root: str) -> OutOfMappingsError | None:
    """The typed error for an open whose memory mapping failed (ENOMEM; else None)."""
    if not isinstance(exc, OSError) or isinstance(exc, OutOfMappingsError) or exc.errno != errno.ENOMEM:
        return None
    maps: int | None = None
    max_maps: int | None = None
    address_limit: int | None = None
    try:
        with open("/proc/self/maps", "rb") as listing:
            maps = sum(1 for _ in listing)
        with open("/proc/sys/vm/max_map_count", "rb") as sysctl:
            max_maps = int(sysctl.read())
    except (OSError, ValueError):
        pass
    try:
        import resource  # Unix only, and only here

        address_limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        pass
    counted = f"{maps} of vm.max_map_count {max_maps}" if maps is not None and max_maps is not None \
        else "vm.max_map_count"
    shown = "unlimited" if address_limit is None or address_limit < 0 else f"{address_limit} bytes"
    return OutOfMappingsError(root, exc.errno, "cannot memory-map its files (ENOMEM): every commitlog, "
                              f"consume-queue and index file of the store is one mapping, and the process has "
                              f"used up its mappings ({counted}; sysctl vm.max_map_count=) or its address "
                              f"space (RLIMIT_AS {shown}; ulimit -v)")


def _typed_open_error(exc: BaseException, root: str) -> OSError | None:
    """The typed error for an open that failed for want of descriptors or mappings (else None)."""
    return _out_of_descriptors(exc, root) or _out_of_mappings(exc, root)


class StoreOpening(StoreParts):
    """MessageStore's loading and recovery (its constructor calls :meth:`_open_files`)."""

    @property
    def _abort_path(self) -> str:
        return os.path.join(self.config.store_path_root_dir, "abort")

    def _open_files(self, progress: Callable[[int], None] | None) -> None:
        cfg = self.config
        w = self._writable
        root = cfg.store_path_root_dir
        # a read-only open creates nothing: a path that is no directory (a typo) is an error, not an empty store
        if os.path.exists(root) and not os.path.isdir(root):
            raise StoreConfigError(f"{root} is not a directory")
        if not w and not os.path.isdir(root):
            raise StoreConfigError(f"no store at {root}: the directory does not exist")
        self.last_exit_ok = not os.path.exists(self._abort_path)
        self._commitlog = CommitLog(cfg.commit_log_dir, cfg.mapped_file_size_commit_log, writable=w,
                                    preallocate=cfg.preallocate_commit_log, warm=cfg.warm_mapped_file_enable)
        self._queues = ConsumeQueueTable(cfg.consume_queue_dir, cfg.consume_queue_file_bytes, writable=w)
        self._checkpoint = Checkpoint(os.path.join(root, "checkpoint"), writable=w)
        # loaded, queried and expired even with messageIndexEnable=false (as 4.9.3's IndexService): only
        # building entries depends on it (the dispatcher gets no index then)
        self._index: IndexService | None = IndexService(cfg.index_dir, cfg.max_hash_slot_num, cfg.max_index_num,
                                                        writable=w)
        self._index.on_file_full.append(self._on_index_file_full)
        try:
            # every segment a clean shutdown leaves has its full size (segments are created whole): a short
            # last one then says the configured size is not the store's (a torn tail only after a crash)
            self._commitlog.files.load(allow_short_tail=not self.last_exit_ok)
            self._queues.load(allow_short_tail=not self.last_exit_ok)
            self._index.load(self.last_exit_ok, self._checkpoint.index_msg_timestamp,
                             strict=cfg.message_index_enable, quiet=not self._index_wanted)
            self._dispatcher = Dispatcher(self._commitlog, self._queues,
                                          self._index if cfg.message_index_enable else None, self._delay_levels)
            self.recovery: RecoveryReport = recover(
                self._commitlog, self._queues, self._dispatcher, self._checkpoint,
                abnormal=not self.last_exit_ok, check_crc=cfg.check_crc_on_recover,
                # the index's time bounds the start only when there is an index (4.9.3: both settings)
                index_safe=cfg.message_index_safe and cfg.message_index_enable, progress=progress)
            self._rebuild_queue_offsets()
            self._dispatcher.reput_offset = max(self._queues.max_physic_offset(), self._commitlog.min_offset)
            stopped_at = self.recovery.redispatch_stopped_at
            if stopped_at is not None:  # a full disk: the dispatcher builds the rest once it can write
                self._dispatcher.reput_offset = max(min(self._dispatcher.reput_offset, stopped_at),
                                                    self._commitlog.min_offset)
            self._dispatcher.dispatch_available()
            self._rebuild_queue_offsets()
            self._cleaner = Cleaner(self._commitlog, self._queues, self._index,
                                    file_reserved_time_h=cfg.file_reserved_time_h, delete_when=cfg.delete_when,
                                    disk_max_used_space_ratio=cfg.disk_max_used_space_ratio,
                                    clean_file_forcibly_enable=cfg.clean_file_forcibly_enable,
                                    dispatched_offset=self._dispatched_offset)
            self._commitlog.segment_guard = self._segment_guard
            self._commitlog.lock_wait_s = cfg.os_page_cache_busy_timeout_ms / 1000
        except BaseException as exc:
            try:
                self._close_files(clean=False)
            except Exception as cleanup_exc:  # noqa: BLE001 - the open's own error is the one to report
                exc.add_note(f"(closing the half-open store also failed: {cleanup_exc!r})")
            raise

    def _rebuild_queue_offsets(self) -> None:
        min_offset = self._commitlog.min_offset
        table: dict[tuple[str, int], int] = {}
        for cq in self._queues:
            table[(cq.topic, cq.queue_id)] = cq.max_offset
            cq.correct_min_offset(min_offset)
        # records recovery could not dispatch (a full disk) hold queue offsets their queues do not show yet
        for key, end in (self.recovery.undispatched_queue_ends or {}).items():
            if table.get(key, 0) < end:
                table[key] = end
        self._commitlog.queue_offsets = table

    def _dispatched_offset(self) -> int:
        return self._dispatcher.reput_offset

    def _on_index_file_full(self, end_timestamp: int) -> None:
        self._checkpoint.index_msg_timestamp = end_timestamp
        self._checkpoint.flush()
