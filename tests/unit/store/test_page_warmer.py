"""The page warmer keeps the page cache filled past the commitlog's write position, and touches nothing.

Residency is read from the kernel with mincore(2) on a mapping of the segment: for a file the caller may
write, it reports the file's pages in the page cache, whoever brought them there.  On tmpfs a read of an
unwritten page maps the shared zero page instead of adding one to the file, so those tests skip there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import os

import pytest

from rocketstore import Message, MessageStore
from rocketstore.errors import StoreConfigError
from rocketstore.store.config import StoreConfig
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import OS_PAGE_BYTES
from rocketstore.store.page_warmer import PageWarmer
from tests.integration.serve_process import wait_for

SEGMENT = 8 << 20
WINDOW = 1 << 20

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_mincore = _libc.mincore
_mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_syscall = _libc.syscall
_NR_CACHESTAT = 451  # the same number on every architecture (asm-generic unistd.h)


def resident_pages(path: str, start: int, stop: int) -> list[bool]:
    """Which pages of ``[start, stop)`` of *path* are in the page cache: mincore over a private mapping of
    the file that is never touched (so every answer comes from the file's page cache)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        mm = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    first = start // OS_PAGE_BYTES
    count = (stop + OS_PAGE_BYTES - 1) // OS_PAGE_BYTES - first
    vec = (ctypes.c_ubyte * count)()
    anchor = ctypes.c_char.from_buffer(mm)  # the mapping's address; no byte of it is read
    try:
        rc = _mincore(ctypes.addressof(anchor) + first * OS_PAGE_BYTES, count * OS_PAGE_BYTES, vec)
        err = ctypes.get_errno()
    finally:
        del anchor
        mm.close()
    if rc != 0:
        raise OSError(err, os.strerror(err))
    return [bool(b & 1) for b in vec]


def _on_tmpfs(path: str) -> bool:
    best = ""
    fstype = ""
    real = os.path.realpath(path)
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            mount = parts[1]
            if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
                best, fstype = mount, parts[2]
    return fstype == "tmpfs"


@pytest.fixture
def queue(tmp_path):
    if not os.path.exists("/proc/mounts") or _on_tmpfs(str(tmp_path)):
        pytest.skip("page-cache residency of unwritten pages is only seen on a disk file system")
    files = FileQueue(str(tmp_path / "commitlog"), SEGMENT, writable=True)
    files.create_next()
    yield files
    files.close()


def test_a_fresh_segment_is_not_in_the_page_cache_until_the_warmer_reads_it(queue):
    mf = queue.last()
    assert not any(resident_pages(mf.path, 0, WINDOW))
    warmer = PageWarmer(queue, WINDOW)
    assert warmer.warm_once()
    assert warmer.warmed_to == WINDOW
    assert all(resident_pages(mf.path, 0, WINDOW))
    # not the whole segment (the kernel's own read-ahead may take a little more than the window)
    assert not any(resident_pages(mf.path, SEGMENT - WINDOW, SEGMENT))


def test_it_reads_again_only_once_less_than_half_a_window_is_warm_ahead(queue):
    mf = queue.last()
    warmer = PageWarmer(queue, WINDOW)
    assert warmer.warm_once()
    mf.append(b"x" * (WINDOW // 2))
    assert not warmer.warm_once()  # still half a window ahead
    mf.append(b"x")
    assert warmer.warm_once()
    assert warmer.warmed_to == mf.wrote + WINDOW
    assert all(resident_pages(mf.path, mf.wrote, mf.wrote + WINDOW))


def test_it_stops_at_the_segment_end_and_starts_over_on_the_next_segment(queue):
    mf = queue.last()
    mf.append(b"y" * (SEGMENT - WINDOW // 4))
    warmer = PageWarmer(queue, WINDOW)
    assert warmer.warm_once()
    assert warmer.warmed_to == SEGMENT
    mf.append(b"y" * (WINDOW // 4))
    assert not warmer.warm_once()  # full: nothing past the end to read
    nxt = queue.create_next()
    assert warmer.warm_once()
    assert warmer.warmed_to == WINDOW
    assert all(resident_pages(nxt.path, 0, WINDOW))


def cache_stat(path: str) -> tuple[int, int]:
    """(pages in the page cache, dirty pages) of the whole file, from cachestat(2) (Linux 6.5+)."""
    class Range(ctypes.Structure):
        _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

    class Stat(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in
                    ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]

    fd = os.open(path, os.O_RDONLY)
    try:
        rng, st = Range(0, 0), Stat()  # len 0: to the end of the file
        rc = _syscall(_NR_CACHESTAT, fd, ctypes.byref(rng), ctypes.byref(st), 0)
        err = ctypes.get_errno()
    finally:
        os.close(fd)
    if rc != 0:
        if err in (errno.ENOSYS, errno.EPERM):
            pytest.skip(f"no cachestat(2) here: {os.strerror(err)}")
        raise OSError(err, os.strerror(err))
    return st.nr_cache, st.nr_dirty


def test_warming_changes_no_byte_and_dirties_no_page(queue):
    mf = queue.last()
    mf.append(b"record")
    mf.flush(0)
    assert cache_stat(mf.path)[1] == 0
    warmer = PageWarmer(queue, 4 * WINDOW)
    assert warmer.warm_once()
    cached, dirty = cache_stat(mf.path)
    assert cached >= 4 * WINDOW // OS_PAGE_BYTES
    assert dirty == 0
    with open(mf.path, "rb") as f:
        data = f.read(4 * WINDOW)
    assert data[:6] == b"record" and data[6:] == bytes(len(data) - 6)


def test_a_store_keeps_the_window_past_its_write_position_warm(tmp_path):
    if _on_tmpfs(str(tmp_path)):
        pytest.skip("page-cache residency of unwritten pages is only seen on a disk file system")
    cfg = StoreConfig(store_path_root_dir=str(tmp_path / "s"), mapped_file_size_commit_log=SEGMENT,
                      warm_ahead_bytes=WINDOW)
    store = MessageStore.open(str(tmp_path / "s"), cfg)
    try:
        warmer = store._threads.page_warmer
        assert warmer is not None
        for i in range(2000):
            assert store.put(Message.create("TopicWarm", b"z" * 1000, keys=f"k{i}")).ok
        mf = store._commitlog.files.last()
        wait_for(lambda: warmer.warmed_to >= mf.wrote + WINDOW // 2, 30, "the warmer to read ahead")
        assert all(resident_pages(mf.path, mf.wrote, warmer.warmed_to))
        thread = warmer._thread
        assert thread is not None and thread.is_alive()
    finally:
        store.close()
    assert not thread.is_alive()
    assert store._threads.page_warmer is warmer and warmer._thread is None


@pytest.mark.parametrize("changes", [{"warm_ahead_bytes": 0}, {"warm_mapped_file_enable": True}])
def test_no_warmer_when_switched_off_or_when_whole_segments_are_warmed(tmp_path, changes):
    cfg = StoreConfig(store_path_root_dir=str(tmp_path / "s"), mapped_file_size_commit_log=SEGMENT, **changes)
    store = MessageStore.open(str(tmp_path / "s"), cfg)
    try:
        assert store.put(Message.create("TopicWarm", b"z")).ok
        assert store._threads.page_warmer is None
    finally:
        store.close()


def test_read_only_stores_start_no_warmer(tmp_path):
    cfg = StoreConfig(store_path_root_dir=str(tmp_path / "s"), mapped_file_size_commit_log=SEGMENT)
    with MessageStore.open(str(tmp_path / "s"), cfg) as store:
        assert store.put(Message.create("TopicWarm", b"z")).ok
    with MessageStore.open(str(tmp_path / "s"), cfg, read_only=True) as store:
        assert store._threads.page_warmer is None


def test_the_window_comes_from_broker_conf_and_is_checked():
    assert StoreConfig.from_properties({"warmAheadBytes": "4194304"}).warm_ahead_bytes == 4 << 20
    assert StoreConfig().warm_ahead_bytes == 32 << 20
    with pytest.raises(StoreConfigError, match="warmAheadBytes"):
        StoreConfig(warm_ahead_bytes=-1)


def test_without_sendfile_the_prefetch_reads_with_preadv(queue, monkeypatch):
    from rocketstore.store import mapped_file

    def refuse(*_args):
        raise OSError(errno.EINVAL, "sendfile cannot read this file")

    monkeypatch.setattr(mapped_file.os, "sendfile", refuse)
    monkeypatch.setattr(mapped_file, "_sendfile_ok", True)
    mf = queue.last()
    size = 5 * WINDOW + 123  # more than one preadv call's 4 MiB, not a whole number of pages
    assert mf.prefetch(0, size) >= size
    assert mapped_file._sendfile_ok is False  # asked once, then not again
    assert all(resident_pages(mf.path, 0, size))
