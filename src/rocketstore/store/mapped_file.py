"""One fixed-size segment file, memory-mapped, with its wrote and flushed positions.

Two modes:
* ``writable``: a shared mapping of a fully allocated file.  New files get their blocks with
  ``posix_fallocate`` (or explicit zero writes where that is unsupported) *before* they are mapped, so a
  store write never lands in a sparse hole: a full disk shows up as an error when the segment is created,
  never as SIGBUS in the middle of a put.
* scratch (``writable=False``): a private copy-on-write mapping of an existing file, or anonymous memory for
  a new one.  Reads and writes work; nothing reaches the disk.  This is how a store is opened to inspect a
  read-only or live directory (dump, verify) without modifying it.  A sparse file's holes on tmpfs, where
  even a read fault allocates (SIGBUS when full), are mapped over with anonymous zeros (map_private_sparse).

Thread-safety: positions are plain ints updated by the single writer; readers only read below the wrote
position.  ``close()`` must not race with reads (the owner closes after its threads stop).
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import time
from typing import Any

from rocketstore.errors import StoreError
from rocketstore.files import make_directories, sync_directory

try:
    import fcntl
except ImportError:  # not a Unix: no FIEMAP either
    fcntl = None  # type: ignore[assignment]

__all__ = ["OS_PAGE_BYTES", "MappedFile", "make_directories", "map_private_sparse", "segment_name",
           "sync_directory"]

OS_PAGE_BYTES = 4096
#: MappedFile.prefetch without sendfile reads into one page, named 1024 times (IOV_MAX): 4 MiB a preadv
#: call (a shared buffer: concurrent callers overwrite each other's garbage)
_PREFETCH_IOV = [bytearray(OS_PAGE_BYTES)] * 1024
_sendfile_ok = hasattr(os, "sendfile")
_null_fd = -1

#: FS_IOC_FIEMAP (Linux): struct fiemap's header, then fiemap_extent records (logical, physical, length,
#: 2 reserved, flags, 3 reserved)
_FIEMAP = 0xC020660B
_FIEMAP_HEAD = struct.Struct("=QQIIII")
_FIEMAP_EXTENT = struct.Struct("=QQQQQIIII")
_FIEMAP_FLAG_SYNC = 0x1
_FIEMAP_EXTENT_LAST = 0x1
_FIEMAP_EXTENT_UNWRITTEN = 0x800
_FIEMAP_BATCH = 64
#: SEEK_DATA answers of more than this are refined with FIEMAP (see MappedFile.data_ranges)
_FIEMAP_OVER_BYTES = 256 << 10


def _written_extents(fd: int, start: int, stop: int) -> list[tuple[int, int]] | None:
    """The parts of ``[start, stop)`` on written extents, after writing back the file's dirty pages
    (FIEMAP_FLAG_SYNC): allocated-but-unwritten extents and holes read as zeros.  None when the file
    system cannot say (no FIEMAP: tmpfs, NFS; or the write-back failed)."""
    if fcntl is None:
        return None
    out: list[tuple[int, int]] = []
    pos = start
    flags = _FIEMAP_FLAG_SYNC
    buf = bytearray(_FIEMAP_HEAD.size + _FIEMAP_BATCH * _FIEMAP_EXTENT.size)
    while pos < stop:
        _FIEMAP_HEAD.pack_into(buf, 0, pos, stop - pos, flags, 0, _FIEMAP_BATCH, 0)
        try:
            fcntl.ioctl(fd, _FIEMAP, buf)
        except OSError:
            return None
        flags = 0  # written back once is enough
        mapped = _FIEMAP_HEAD.unpack_from(buf, 0)[3]
        if not mapped:
            break
        last = False
        for i in range(mapped):
            logical, _, length, _, _, fe_flags, _, _, _ = _FIEMAP_EXTENT.unpack_from(
                buf, _FIEMAP_HEAD.size + i * _FIEMAP_EXTENT.size)
            low, high = max(logical, start), min(logical + length, stop)
            if not fe_flags & _FIEMAP_EXTENT_UNWRITTEN and low < high:
                if out and out[-1][1] >= low:
                    out[-1] = (out[-1][0], max(out[-1][1], high))
                else:
                    out.append((low, high))
            pos = max(pos, logical + length)
            last = bool(fe_flags & _FIEMAP_EXTENT_LAST)
        if last or mapped < _FIEMAP_BATCH:
            break
    return out


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low < high:
            out.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _read_into_null(fd: int, start: int, stop: int) -> int:
    """sendfile ``[start, stop)`` of *fd* to /dev/null; the bytes it read."""
    global _null_fd
    if _null_fd < 0:
        _null_fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    done = 0
    while start + done < stop:
        n = os.sendfile(_null_fd, fd, start + done, stop - start - done)
        if n <= 0:
            break
        done += n
    return done


def segment_name(start_offset: int) -> str:
    return f"{start_offset:020d}"


def is_segment_name(name: str) -> bool:
    """Whether *name* is a segment file's, as :func:`segment_name` makes them: 20 decimal digits (ASCII
    ones: ``str.isdigit`` alone takes superscripts and other scripts' digits, which ``int`` then refuses or
    reads as an offset no segment has)."""
    return len(name) == 20 and name.isdigit() and name.isascii()


def _allocate(fd: int, size_bytes: int, written: int = 0) -> None:
    """Give the file its blocks up to *size_bytes*; where the file system cannot preallocate, zeros are
    written from *written* on (the bytes before it hold data of an existing file)."""
    try:
        os.posix_fallocate(fd, 0, size_bytes)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    zeros = bytes(1 << 20)
    while written < size_bytes:
        n = os.pwrite(fd, zeros[: min(len(zeros), size_bytes - written)], written)
        written += n


def _create_allocated(path: str, size_bytes: int, sync_dir: bool = True) -> int:
    """Create *path* with all its blocks, atomically: a crash never leaves a short or sparse segment
    under the real name (it is allocated under a temporary name, then renamed).  The directory is synced
    after the rename, once a segment: records a sync flush makes durable in the segment must not vanish
    with its directory entry at a power loss (the preallocating thread pays this for the commitlog).
    *sync_dir* False: the caller has the directory synced later, before anything relies on the entry (a
    consume queue's: by its next flush, see file_queue.DirSyncs)."""
    if os.path.exists(path):
        raise FileExistsError(errno.EEXIST, "segment exists already", path)
    tmp = path + ".allocating"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    renamed = False
    try:
        _allocate(fd, size_bytes)
        os.rename(tmp, path)
        renamed = True
        if sync_dir:
            sync_directory(os.path.dirname(path) or ".")
    except BaseException:
        os.close(fd)
        try:
            # (left under its real name, every later try to create the segment would meet it)
            os.unlink(path if renamed else tmp)
        except FileNotFoundError:
            pass
        raise
    return fd


#: a sparse file with more holes than this is read into anonymous memory instead of having each hole mapped
#: over (every one splits the mapping: vm.max_map_count, 65530 by default, counts the pieces)
_MAX_HOLE_MAPS = 512
#: statfs f_type of the file systems where a read fault of a hole allocates a page: tmpfs, and an overlay
#: (its upper layer may be a tmpfs)
_HOLE_READS_ALLOCATE = frozenset({0x01021994, 0x794C7630})
_libc: Any = None


def _c_library() -> Any:
    """The C library through ctypes (mmap and fstatfs), or False where there is none."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.fstatfs.argtypes = [ctypes.c_int, ctypes.c_void_p]
            _libc = libc
        except (ImportError, OSError, AttributeError):
            _libc = False
    return _libc


def _hole_reads_allocate(fd: int) -> bool:
    """Whether faulting a hole of *fd*'s file in through a mapping, even to read it, allocates a page
    (tmpfs; ext4, xfs and the like map a shared zero page); True when the file system cannot be told."""
    libc = _c_library()
    if not libc:
        return True
    import ctypes

    buf = ctypes.create_string_buffer(256)  # struct statfs (120 bytes on 64-bit Linux), f_type first
    if libc.fstatfs(fd, buf) != 0:
        return True
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF in _HOLE_READS_ALLOCATE


def _holes(fd: int, size_bytes: int) -> list[tuple[int, int]]:
    """The whole pages of ``[0, size_bytes)`` that are holes (SEEK_DATA / SEEK_HOLE)."""
    out: list[tuple[int, int]] = []
    pos = 0
    while pos < size_bytes:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            data = size_bytes  # holes up to the end of the file
        data = min(data, size_bytes)
        low = -(-pos // OS_PAGE_BYTES) * OS_PAGE_BYTES
        high = data // OS_PAGE_BYTES * OS_PAGE_BYTES
        if low < high:
            out.append((low, high))
        if data >= size_bytes:
            break
        pos = os.lseek(fd, data, os.SEEK_HOLE)
    return out


def _map_anonymous_over(mm: mmap.mmap, holes: list[tuple[int, int]]) -> bool:
    """Map anonymous zero pages over the *holes* of *mm* (MAP_FIXED); False where that cannot be done."""
    libc = _c_library()
    if not libc:
        return False
    import ctypes

    try:
        anchor = ctypes.c_char.from_buffer(mm)
    except (TypeError, ValueError):
        return False
    base = ctypes.addressof(anchor)
    del anchor  # (an exported buffer would stop mm.close())
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10  # MAP_FIXED (Linux)
    for low, high in holes:
        got = libc.mmap(base + low, high - low, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
        if got != base + low:
            # (MAP_FIXED replaces pages or fails leaving them as they were: the mapping stays whole)
            return False
    return True


def map_private_sparse(fd: int, size_bytes: int, max_hole_maps: int | None = None) -> mmap.mmap:
    """A private (scratch) mapping of a sparse file whose holes are never faulted in through the file.

    On tmpfs even a read fault of a hole allocates a page: it takes the file system's space (a read-only
    dump made a store's holes permanent blocks), and on a full one it is SIGBUS, which kills the process.
    Holes read as zeros, so there anonymous zero pages stand in for them; a read of one allocates nothing.
    A file of more than *max_hole_maps* holes (an index file's hash slots) is read into anonymous memory
    instead: ``pread`` of a hole allocates nothing either.  Holes are taken as they are at open: a writer
    filling one later (a live store) is not seen there, as records past the end recovery finds at open are
    not read anyway.  Elsewhere (ext4, xfs: a read of a hole maps the zero page) the file is mapped as
    it is."""
    holes = _holes(fd, size_bytes) if _hole_reads_allocate(fd) else []
    if not holes:
        return mmap.mmap(fd, size_bytes, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
    if len(holes) <= (_MAX_HOLE_MAPS if max_hole_maps is None else max_hole_maps):
        mm = mmap.mmap(fd, size_bytes, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            if _map_anonymous_over(mm, holes):
                return mm
        except BaseException:
            mm.close()
            raise
        mm.close()
    mm = mmap.mmap(-1, size_bytes)
    try:
        pos = 0
        for low, high in [*holes, (size_bytes, size_bytes)]:
            while pos < low:
                chunk = os.pread(fd, min(low - pos, 1 << 24), pos)
                if not chunk:
                    break
                mm[pos:pos + len(chunk)] = chunk
                pos += len(chunk)
            pos = max(pos, high)
    except BaseException:
        mm.close()
        raise
    return mm


def zero_tail(mm: mmap.mmap, pos: int, chunk_bytes: int = 1 << 20, *, stop: int | None = None) -> bool:
    """Zero *mm* from *pos* on (up to *stop*), writing only chunks that hold something (no page dirtied
    for nothing); whether any did."""
    size = len(mm) if stop is None else stop
    block = bytes(chunk_bytes)
    changed = False
    while pos < size:
        end = min(size, pos + chunk_bytes)
        zeros = block if end - pos == chunk_bytes else bytes(end - pos)
        if mm[pos:end] != zeros:  # memcmp: bytes.count(0) over a mostly empty tail ran ~7 ms per MiB
            mm[pos:end] = zeros
            changed = True
        pos = end
    return changed


def holds_only_zeros(path: str, chunk_bytes: int = 1 << 20) -> bool:
    """Whether the file at *path* holds nothing but zeros (an empty file does).  Only what the file system
    says may hold data is read (see :meth:`MappedFile.data_ranges`): a preallocated segment nothing was
    written to is mostly unwritten extents, read as zeros without reading them."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        block = bytes(chunk_bytes)
        for low, high in MappedFile._data_ranges(fd, 0, os.fstat(fd).st_size):
            while low < high:
                chunk = os.pread(fd, min(chunk_bytes, high - low), low)
                if not chunk:
                    break  # shorter than it was (truncated meanwhile)
                if chunk != (block if len(chunk) == chunk_bytes else bytes(len(chunk))):
                    return False
                low += len(chunk)
        return True
    finally:
        os.close(fd)


class MappedFile:
    """A segment ``[start_offset, start_offset + size_bytes)`` of a file queue."""

    __slots__ = (
        "_fd",
        "_keep_fd",
        "_mm",
        "_scratch_mtime_ms",
        "first_in_queue",
        "flushed",
        "path",
        "size_bytes",
        "start_offset",
        "writable",
        "wrote",
    )

    def __init__(self, path: str, start_offset: int, size_bytes: int, *, writable: bool, create: bool,
                 first_in_queue: bool = False, allow_short: bool = False, keep_fd: bool = True,
                 fill_holes: bool = True, sync_dir: bool = True) -> None:
        """*keep_fd* False (a writable file): close the descriptor once the file is mapped.  The mapping
        holds one of its own (Python's mmap dups it), so a kept one makes two a file: a store of many
        consume queues then runs out of descriptors at half the queues.  Flushes and data look-ups open
        the file for the call instead.  *fill_holes* False: an existing sparse file is mapped as it is (a
        queue's full, older files, which are only read: allocating every Java-written index file's holes
        would take ~400 MB of disk each).  *sync_dir* False (*create*): the new file's directory entry is
        not synced here (see _create_allocated)."""
        self.path = path
        self.start_offset = start_offset
        self.size_bytes = size_bytes
        self.writable = writable
        self.wrote = 0
        self.flushed = 0
        self.first_in_queue = first_in_queue
        self._scratch_mtime_ms: int | None = None
        self._fd = -1
        self._keep_fd = keep_fd
        if writable:
            if create:
                fd = _create_allocated(path, size_bytes, sync_dir)
            else:
                fd = os.open(path, os.O_RDWR)
            try:
                st = None if create else os.fstat(fd)
                if st is not None and st.st_size != size_bytes:
                    actual = st.st_size
                    if not (allow_short and actual < size_bytes):
                        raise StoreError(f"{path}: size {actual} differs from the configured {size_bytes} bytes")
                    # a torn tail: the file lost its end; give it back its blocks, zero-filled
                    _allocate(fd, size_bytes, actual)
                elif fill_holes and st is not None and st.st_blocks * 512 < size_bytes:
                    # a sparse file (a Java broker's segments are: it only sets their length; a copy made with
                    # cp --sparse, rsync -S): once the disk is full, touching a hole through the mapping is
                    # SIGBUS, which kills the process (on tmpfs even reading one, as recovery does).  Its
                    # blocks are allocated here, so a full disk fails this open (ENOSPC) instead
                    try:
                        _allocate(fd, size_bytes, size_bytes)
                    except OSError as exc:
                        raise OSError(exc.errno, f"{exc.strerror} (allocating the blocks of this sparse "
                                      "segment)", path) from exc
                self._mm = mmap.mmap(fd, size_bytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                if create:
                    # mapping the new file failed (ENOMEM: vm.max_map_count or the address space is used
                    # up); left under its real name it would never hold data and every later try to create
                    # the segment would meet it (FileExistsError) long after memory is back
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                raise
            if keep_fd:
                self._fd = fd
            else:
                os.close(fd)
        elif create:
            self._mm = mmap.mmap(-1, size_bytes)
            self._scratch_mtime_ms = int(time.time() * 1000)
        else:
            fd = os.open(path, os.O_RDONLY)
            try:
                st = os.fstat(fd)
                actual = st.st_size
                if actual == size_bytes and st.st_blocks * 512 < size_bytes:
                    self._mm = map_private_sparse(fd, size_bytes)
                elif actual == size_bytes:
                    self._mm = mmap.mmap(fd, size_bytes, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
                elif allow_short and actual < size_bytes:
                    self._mm = mmap.mmap(-1, size_bytes)
                    self._mm[:actual] = os.pread(fd, actual, 0)
                    self._scratch_mtime_ms = int(os.fstat(fd).st_mtime * 1000)
                else:
                    raise StoreError(f"{path}: size {actual} differs from the configured {size_bytes} bytes")
            finally:
                os.close(fd)

    # --- positions ----------------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self.start_offset + self.size_bytes

    @property
    def is_full(self) -> bool:
        return self.wrote >= self.size_bytes

    @property
    def remaining(self) -> int:
        return self.size_bytes - self.wrote

    @property
    def buffer(self) -> mmap.mmap:
        """The mapping itself, for the owner's hot paths (struct.pack_into / unpack_from / slicing)."""
        return self._mm

    # --- data -----------------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray) -> int:
        """Write at the wrote position and advance it; returns the position written at."""
        pos = self.wrote
        end = pos + len(data)
        if end > self.size_bytes:
            raise StoreError(f"{self.path}: append of {len(data)} bytes past the end at {pos}")
        self._mm[pos:end] = data
        self.wrote = end
        if self._scratch_mtime_ms is not None:
            self._scratch_mtime_ms = int(time.time() * 1000)
        return pos

    def write_at(self, pos: int, data: bytes | bytearray) -> None:
        self._mm[pos : pos + len(data)] = data

    def read(self, pos: int, size_bytes: int) -> bytes:
        return self._mm[pos : pos + size_bytes]

    def zero_from(self, pos: int) -> bool:
        """Zero the bytes from *pos* to the end (a truncated tail must read as 'no record'); whether any
        byte changed (see FileQueue.truncate_after: a flush does not look past the wrote position)."""
        changed = False
        for start, stop in self.data_ranges(pos, self.size_bytes):
            changed = zero_tail(self._mm, start, stop=stop) or changed
        return changed

    def sync(self) -> None:
        """Write back every dirty page of the file, wherever it lies (:meth:`flush` syncs only when
        something was written past the flushed position)."""
        if not self.writable:
            return
        if self._fd >= 0:
            os.fdatasync(self._fd)
        elif not self._keep_fd and not self._mm.closed:
            self._sync_by_path()

    def data_ranges(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The parts of ``[start, stop)`` that may hold non-zero bytes, in order.

        A preallocated segment is mostly unwritten extents, which read as zeros: asking the file system
        (SEEK_DATA / SEEK_HOLE, which count cached pages as data; then, where that says much, FIEMAP after
        writing back the file's dirty pages, for the extents still unwritten) spares reading, and faulting
        in, up to a GiB of zeros.  The whole range when the mapping is not the file's shared one (a
        private or scratch copy may differ from the file) or the file system cannot say."""
        if start >= stop:
            return []
        if not self.writable:
            return [(start, stop)]
        fd = self._fd
        opened = -1
        if fd < 0:
            if self._keep_fd or self._mm.closed:
                return [(start, stop)]
            try:
                fd = opened = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return [(start, stop)]
        try:
            return self._data_ranges(fd, start, stop)
        finally:
            if opened >= 0:
                os.close(opened)

    @staticmethod
    def _data_ranges(fd: int, start: int, stop: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        pos = start
        try:
            while pos < stop:
                try:
                    data = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # nothing but holes up to the end of the file
                        break
                    raise
                if data >= stop:
                    break
                hole = min(os.lseek(fd, data, os.SEEK_HOLE), stop)
                out.append((data, hole))
                pos = hole
        except (OSError, AttributeError):
            out = [(start, stop)]
        if sum(high - low for low, high in out) > _FIEMAP_OVER_BYTES:
            # SEEK_DATA counts every cached page as data, zeros read from an unwritten extent too: after a
            # kill -9 the page cache is warm (the writer's faults read ahead, up to whole segments), and
            # a crash-open's tail check then read every consume queue's whole segment.  Once the dirty
            # pages are written back, an unwritten extent holds zeros whatever the cache says.
            written = _written_extents(fd, start, stop)
            if written is not None:
                out = _intersect(out, written)
        return out

    def cover_holes(self) -> bool:
        """Map anonymous zero pages over the holes of a sparse file of the writable kind that is only read
        from now on (a full index file older than the newest), where reading a hole through the mapping
        allocates (tmpfs: on a full one SIGBUS, a key query killing the broker).  A write into a covered
        hole would not reach the file, hence only for a file nothing writes to any more.  True when it
        covered any."""
        if not self.writable or self._mm.closed:
            return False
        fd = self._fd
        opened = -1
        if fd < 0:
            try:
                fd = opened = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return False
        try:
            if os.fstat(fd).st_blocks * 512 >= self.size_bytes or not _hole_reads_allocate(fd):
                return False
            holes = _holes(fd, self.size_bytes)
            if 0 < len(holes) <= _MAX_HOLE_MAPS:
                _map_anonymous_over(self._mm, holes)
                return True
            return False
        finally:
            if opened >= 0:
                os.close(opened)

    def prefetch(self, start: int, stop: int) -> int:
        """Read ``[start, stop)`` of the file through the page cache, so that writes to come find their pages
        there; returns the bytes read (0 for a scratch mapping, which has no file to read).

        A fresh segment's blocks are allocated but unwritten: reading them puts zero-filled pages in the
        cache without touching the disk and without dirtying anything, and the writer's first store to
        such a page then only maps it, where it would otherwise allocate and zero it while holding the
        GIL.  The read is one ``sendfile`` to /dev/null (no copy to user space, the GIL released for the
        whole range), or ``preadv`` calls of 4 MiB into one throwaway page where sendfile cannot read
        this file."""
        fd = self._fd
        if fd < 0 or not self.writable or start >= stop:
            return 0
        global _sendfile_ok
        if _sendfile_ok:
            try:
                return _read_into_null(fd, start, stop)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
                    raise
                _sendfile_ok = False
        done = 0
        pos = start
        while pos < stop:
            pages = min(len(_PREFETCH_IOV), (stop - pos + OS_PAGE_BYTES - 1) // OS_PAGE_BYTES)
            n = os.preadv(fd, _PREFETCH_IOV[:pages], pos)
            if n <= 0:
                break
            done += n
            pos += n
        return done

    def warm(self) -> None:
        """Touch every page so the first writes do not fault (RocketMQ's warmMapedFileEnable)."""
        mm = self._mm
        for pos in range(0, self.size_bytes, OS_PAGE_BYTES):
            mm[pos] = mm[pos]

    def flush(self, least_pages: int = 0) -> int:
        """Make wrote bytes durable when enough pages are dirty (or the file is full); returns flushed."""
        wrote = self.wrote
        if wrote <= self.flushed:
            return self.flushed
        if least_pages > 0 and wrote < self.size_bytes \
                and wrote // OS_PAGE_BYTES - self.flushed // OS_PAGE_BYTES < least_pages:
            return self.flushed
        if self.writable:
            fd = self._fd
            if fd < 0:
                if self._keep_fd or self._mm.closed or not self._sync_by_path():
                    # closed meanwhile (retention deleted it): nothing left to make durable
                    return self.flushed
                self.flushed = wrote
                return wrote
            # A shared mapping's dirty pages are the page cache's: fdatasync writes them back and, unlike
            # msync, reports write errors for the whole file (measured faster here too, see ANCHORS.md).
            try:
                os.fdatasync(fd)
            except OSError as exc:
                if exc.errno == errno.EBADF and self._fd < 0:
                    return self.flushed  # closed between the check and the sync
                raise
        self.flushed = wrote
        return wrote

    def _sync_by_path(self) -> bool:
        """fdatasync through a descriptor opened for the call (a file that keeps none; msync would hold the
        GIL for the whole write-back); False when the file is gone, closed and deleted meanwhile."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if self._mm.closed:
                return False
            raise
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            # out of descriptors (RLIMIT_NOFILE): msync needs none; a flush must not fail for want of one
            try:
                self._mm.flush()
            except ValueError:  # closed meanwhile
                return False
            return True
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
        return True

    def last_modified_ms(self) -> int:
        if self._scratch_mtime_ms is not None:
            return self._scratch_mtime_ms
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except OSError:
            return 0

    def touch_modified(self) -> None:
        if not self.writable:
            self._scratch_mtime_ms = int(time.time() * 1000)

    def close(self) -> None:
        mm = getattr(self, "_mm", None)
        if mm is not None and not mm.closed:
            mm.close()
        fd = self._fd
        if fd >= 0:
            self._fd = -1  # first: a flush on another thread then sees the file closed, not a stale descriptor
            os.close(fd)

    def destroy(self) -> None:
        """Close and delete the file (scratch mode: forget it, the file on disk stays)."""
        self.close()
        if self.writable:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"MappedFile({self.path!r}, wrote={self.wrote}, flushed={self.flushed})"
