"""An ordered run of equal-size segments named by their 20-digit start offset.

Owns the directory: loading (every file must have the configured size), finding the segment of an offset,
creating the next one (optionally prepared ahead by a background thread, so a put never waits for
fallocate + mmap), truncating a dirty tail, deleting segments from the head, and flushing.

Thread-safety: one writer creates and truncates; readers may look up segments concurrently (the list is
replaced, never mutated in place, so a reader sees an old or a new list, both consistent).  Clean-up may
delete head segments while the writer adds one at the tail: each change of the list is made under
``_list_lock`` from the list as it is then, so neither undoes the other's.
"""

from __future__ import annotations

import errno
import os
import threading
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from rocketstore.errors import StoreConfigError
from rocketstore.store.mapped_file import (
    MappedFile,
    holds_only_zeros,
    is_segment_name,
    make_directories,
    segment_name,
    sync_directory,
)

__all__ = ["DirSyncs", "FileQueue", "sync_directory"]


class DirSyncs:
    """Directories that got a new entry (a segment, a subdirectory) and are synced by the next flush, not as
    the entry is made: shared by the file queues of a table (a store's consume queues).

    A new consume queue made three directory syncs on the dispatch thread (its topic's entry, its queue
    directory's, its first segment's), ~4 ms each on a virtual disk: most of what auto-creating a topic
    cost (4.9.3 syncs none: its new queue file is only mkdirs and a mapping).  A flush syncs each directory
    once, however many entries it got meanwhile (a burst of new topics: the root once), before any data it
    makes durable counts as durable: the checkpoint, which names what a recovery may trust, is written after
    the queues' flush, so a segment whose entries it names keeps its directory entry through a power loss.

    Thread-safety: a change is made under ``_lock`` with its directory added first, and a flush takes the
    set under the same lock, so its sync of a directory follows every change recorded in it (a directory
    added by a change it missed waits for the next flush).  Flushes sync one at a time (``_sync_lock``): one
    that finds nothing left returns only after the syncs another had started."""

    def __init__(self) -> None:
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()

    @contextmanager
    def changing(self, directory: str) -> Iterator[None]:
        """Around a change of *directory*'s entries: the next :meth:`sync` syncs it."""
        with self._lock:
            self._pending.add(directory)  # first: an interrupt after the change still leaves it to sync
            yield

    def make_directories(self, path: str) -> None:
        """``os.makedirs(path, exist_ok=True)``, the parent of each directory made left to :meth:`sync`."""
        if os.path.isdir(path):
            return
        parent = os.path.dirname(os.path.abspath(path))
        self.make_directories(parent)
        with self.changing(parent):
            try:
                os.mkdir(path)
            except FileExistsError:
                if not os.path.isdir(path):
                    raise

    def sync(self) -> None:
        """Sync every directory changed since the last sync; one that fails stays for the next."""
        if not self._pending and not self._sync_lock.locked():
            return  # (empty while another syncs: its flush took them, and this one waits for it below)
        with self._sync_lock:
            with self._lock:
                left, self._pending = sorted(self._pending), set()
            try:
                while left:
                    try:
                        sync_directory(left[-1])
                    except (FileNotFoundError, NotADirectoryError):
                        pass  # removed since (a dropped queue): whoever removed it synced its parent
                    except OSError as exc:
                        if exc.errno not in (errno.EMFILE, errno.ENFILE):
                            raise
                        # out of descriptors (RLIMIT_NOFILE): sync(2) needs none and makes every one durable
                        # (rare; raised, it fenced the store, as a data sync's EMFILE no longer does)
                        os.sync()
                        left = []
                        break
                    left.pop()
            except BaseException:
                with self._lock:
                    self._pending.update(left)
                raise


class FileQueue:
    def __init__(self, directory: str, segment_bytes: int, *, writable: bool, preallocate: bool = False,
                 warm: bool = False, keep_fd: bool = True, dir_syncs: DirSyncs | None = None) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.writable = writable
        self.preallocate = preallocate and writable
        self.warm = warm
        #: whether each segment keeps its file descriptor open (see MappedFile)
        self.keep_fd = keep_fd
        #: set: new segments and directories are synced by the next flush, not as they are made (DirSyncs)
        self.dir_syncs = dir_syncs if writable else None
        self._files: list[MappedFile] = []
        self._starts: list[int] = []
        #: (files, starts) set together: a look-up reads one consistent pair
        self._lookup: tuple[list[MappedFile], list[int]] = ([], [])
        #: held for each read-modify-write of the list (the writer appending, clean-up deleting the head)
        self._list_lock = threading.Lock()
        self._ahead: dict[int, MappedFile | BaseException] = {}
        self._ahead_lock = threading.Lock()
        self._ahead_thread: threading.Thread | None = None

    # --- loading ------------------------------------------------------------------------------------

    def load(self, allow_short_tail: bool = False) -> None:
        """Map every segment in the directory; a file of the wrong size is an error, except that with
        *allow_short_tail* the last one may be short (a torn tail: it is zero-filled back to size)."""
        if not os.path.isdir(self.directory):
            return
        if self.writable:
            for name in os.listdir(self.directory):
                if name.endswith(".allocating"):  # a crash interrupted its allocation: it never held data
                    os.unlink(os.path.join(self.directory, name))
        files: list[MappedFile] = []
        names = [n for n in sorted(os.listdir(self.directory))
                 if is_segment_name(n) and os.path.isfile(os.path.join(self.directory, n))]
        for i, name in enumerate(names):
            path = os.path.join(self.directory, name)
            try:
                size = os.path.getsize(path)
                short_ok = allow_short_tail and i == len(names) - 1 and size < self.segment_bytes
                if size != self.segment_bytes and not short_ok:
                    for f in files:
                        f.close()
                    raise StoreConfigError(f"{path} has {size} bytes; every segment here must have "
                                           f"{self.segment_bytes} (check the configured segment size)")
                # only the last file is written to: its holes (a Java-written file is sparse) get their
                # blocks at open (see MappedFile), the full ones before it stay as they are
                mf = MappedFile(path, int(name), self.segment_bytes, writable=self.writable, create=False,
                                allow_short=short_ok, keep_fd=self.keep_fd, fill_holes=i == len(names) - 1)
            except FileNotFoundError:
                # deleted since the listing: a live store's retention (a read-only open of it) deletes from
                # the head in order, so the segments mapped before this one are gone too; keeping them would
                # leave a hole in the queue
                for f in files:
                    f.close()
                files = []
                continue
            except BaseException:
                # the mapping failed (ENOMEM: vm.max_map_count, the address space), or anything else: the
                # segments mapped so far are in no list the store closes, and would stay mapped, with their
                # descriptors, for as long as anything holds the error
                for f in files:
                    f.close()
                raise
            mf.wrote = mf.flushed = self.segment_bytes
            files.append(mf)
        self._set(files)

    def _set(self, files: list[MappedFile]) -> None:
        starts = [f.start_offset for f in files]
        self._lookup = (files, starts)
        self._files = files
        self._starts = starts

    # --- look-ups -------------------------------------------------------------------------------------

    @property
    def files(self) -> list[MappedFile]:
        return self._files

    def __iter__(self) -> Iterator[MappedFile]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def first(self) -> MappedFile | None:
        files = self._files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self._files
        return files[-1] if files else None

    def find(self, offset: int) -> MappedFile | None:
        """The segment holding *offset*, or None."""
        files, starts = self._lookup
        i = bisect_right(starts, offset) - 1
        if i < 0 or i >= len(files):
            return None
        f = files[i]
        if offset >= f.start_offset + self.segment_bytes:
            return None
        return f

    @property
    def min_offset(self) -> int:
        f = self.first()
        return f.start_offset if f is not None else 0

    @property
    def max_offset(self) -> int:
        """End of written data (start of the last segment + its wrote position)."""
        f = self.last()
        return f.start_offset + f.wrote if f is not None else 0

    @property
    def flushed_offset(self) -> int:
        files = self._files
        for f in reversed(files):
            if f.flushed > 0 or f is files[0]:
                return f.start_offset + f.flushed
        return 0

    # --- growth -----------------------------------------------------------------------------------------

    def _path(self, start: int) -> str:
        return os.path.join(self.directory, segment_name(start))

    def _make(self, start: int, first_in_queue: bool) -> MappedFile:
        deferred = self.dir_syncs
        if deferred is not None:
            deferred.make_directories(self.directory)
        elif self.writable:
            make_directories(self.directory)
        path = self._path(start)
        made: MappedFile | None = None
        try:
            with deferred.changing(self.directory) if deferred is not None else nullcontext():
                made = mf = MappedFile(path, start, self.segment_bytes, writable=self.writable, create=True,
                                       first_in_queue=first_in_queue, keep_fd=self.keep_fd,
                                       sync_dir=deferred is None)
            if self.warm:
                mf.warm()
        except FileExistsError:
            raise  # not made by this call: left as it is
        except BaseException:
            # made by this call, then interrupted (a KeyboardInterrupt as the constructor returned) or its
            # warming failed: left under its real name, unlisted, every later try to create the segment met
            # it (FileExistsError), the commitlog refusing puts or dispatch stopping until the next open
            if made is not None:
                made.close()  # (its mapping and descriptor, else kept for as long as anything holds the error)
            if self.writable:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            raise
        return mf

    def _prepare_ahead(self, start: int) -> None:
        try:
            mf: MappedFile | BaseException = self._make(start, False)
        # anything, even an interrupt, is the writer's to see when it needs this segment
        except BaseException as exc:  # noqa: BLE001
            mf = exc
        with self._ahead_lock:
            self._ahead[start] = mf

    def _take_ahead(self, start: int) -> MappedFile | None:
        thread = self._ahead_thread
        if thread is not None and thread.is_alive():
            thread.join()
        with self._ahead_lock:
            got = self._ahead.pop(start, None)
        if isinstance(got, BaseException):
            return None
        return got

    def create_next(self, start_hint: int = 0) -> MappedFile:
        """Append a new empty segment after the last one (or at the aligned *start_hint* if empty)."""
        last = self.last()
        mf: MappedFile | None
        if last is None:
            start = start_hint - start_hint % self.segment_bytes
            mf = self._make(start, True)
        else:
            start = last.start_offset + self.segment_bytes
            mf = self._take_ahead(start) if self.preallocate else None
            if mf is None:
                try:
                    mf = self._make(start, False)
                except FileExistsError:
                    if not self.preallocate:
                        raise
                    # the segment made ahead for this start, lost as it was handed over (a KeyboardInterrupt
                    # on this thread as it was taken from the table): unlisted, nothing was written to it.
                    # (Left there, puts were refused with CREATE_MAPEDFILE_FAILED until the next open.)  A
                    # file with data in it came from elsewhere: it is left for the next open to take in (not
                    # renamed aside: 4.9.3 refuses to load a store whose commitlog holds another name)
                    path = self._path(start)
                    if not holds_only_zeros(path):
                        raise FileExistsError(errno.EEXIST, "an unlisted segment file holding data is in "
                                              "the way (left as it is: opening the store takes it in)", path)
                    os.unlink(path)
                    mf = self._make(start, False)
        try:
            with self._list_lock:
                self._set(self._files + [mf])
        except BaseException:
            if mf not in self._files:  # (interrupted before it was listed: nobody else may write to it)
                mf.destroy()
            raise
        if self.preallocate:
            nxt = start + self.segment_bytes
            self._ahead_thread = threading.Thread(target=self._prepare_ahead, args=(nxt,),
                                                  name="rocketstore-preallocate", daemon=True)
            self._ahead_thread.start()
        return mf

    def last_writable(self, start_hint: int = 0) -> MappedFile:
        """The last segment if it has room, else a new one."""
        last = self.last()
        if last is None or last.is_full:
            return self.create_next(start_hint)
        return last

    # --- shrinking ---------------------------------------------------------------------------------------

    def truncate_after(self, offset: int, *, zero_tail: bool = True) -> None:
        """Forget everything at and after *offset*: later segments deleted, the holding one zeroed from
        there (unless the caller knows those bytes are zero: *zero_tail* False)."""
        keep: list[MappedFile] = []
        deleted = False
        for f in self._files:
            if f.start_offset + self.segment_bytes <= offset:
                keep.append(f)
            elif f.start_offset <= offset:
                pos = offset - f.start_offset
                zeroed = zero_tail and f.zero_from(pos)
                f.wrote = pos
                f.flushed = min(f.flushed, pos)
                if zeroed and f.flushed >= pos:
                    # the zeroed bytes lie past the wrote position, where no flush looks (a queue that gets
                    # nothing new is never flushed again): a power loss after a clean close would bring the
                    # cut records back for an open that trusts the tail.  (Below it, the next flush's sync
                    # covers the whole file.)
                    f.sync()
                keep.append(f)
            else:
                f.destroy()
                deleted = True
        self._set(keep)
        if deleted and self.writable:
            # a deleted segment a power loss brings back holds what was cut: after a full segment, recovery
            # (and a clean exit's open) would take its records or entries for valid ones
            sync_directory(self.directory)

    def set_positions(self, offset: int) -> None:
        """After recovery: every segment before *offset* counts as full and flushed."""
        for f in self._files:
            if f.start_offset + self.segment_bytes <= offset:
                f.wrote = f.flushed = self.segment_bytes
            elif f.start_offset <= offset:
                f.wrote = f.flushed = offset - f.start_offset

    def delete_first(self, count: int) -> list[MappedFile]:
        """Remove the first *count* segments (never the last one)."""
        with self._list_lock:
            files = self._files
            count = min(count, len(files) - 1)
            if count <= 0:
                return []
            gone = files[:count]
            self._set(files[count:])
        for f in gone:
            f.destroy()
        if self.writable:
            # once a clean-up: a deleted segment a power loss brings back sits stale at the head of the
            # queue (older than what the checkpoint and the other queues moved on to)
            sync_directory(self.directory)
        return gone

    def delete_last(self) -> None:
        files = self._files
        if files:
            self._set(files[:-1])
            files[-1].destroy()
            if self.writable:
                sync_directory(self.directory)  # as truncate_after's deletions

    def destroy_all(self) -> None:
        for f in self._files:
            f.destroy()
        self._set([])
        if self.writable and os.path.isdir(self.directory):
            try:
                os.rmdir(self.directory)
            except OSError:
                sync_directory(self.directory)  # kept (something else is in it): its deletions last
            # (else the caller syncs the parent, once for all the directories it removes)

    # --- durability ---------------------------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        """Flush segments with unflushed data; True when everything written is durable afterwards.

        Only the tail is looked at: segments fill and are flushed in order, and a full segment is flushed
        whatever *least_pages* says, so the segments before a full, flushed one are full and flushed too
        (a sync of a long queue no longer walks every segment).  Directories left to it (``dir_syncs``) are
        synced first."""
        if self.dir_syncs is not None:
            self.dir_syncs.sync()
        files = self._files
        first = len(files)
        size = self.segment_bytes
        while first > 0 and files[first - 1].flushed < size:
            first -= 1
        done = True
        for i in range(first, len(files)):
            f = files[i]
            if f.flushed < f.wrote:
                f.flush(least_pages)
                if f.flushed < f.wrote:
                    done = False
        return done

    def close(self, drop_unused_tail: bool = False) -> None:
        thread = self._ahead_thread
        if thread is not None:
            thread.join()
        with self._ahead_lock:
            for mf in self._ahead.values():
                if isinstance(mf, MappedFile):
                    mf.destroy()
            self._ahead.clear()
        files = self._files
        if drop_unused_tail:
            while len(files) > 1 and files[-1].wrote == 0:
                files[-1].destroy()
                files = files[:-1]
        for f in files:
            f.close()
        self._set([])
