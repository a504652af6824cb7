"""Segment files with holes, and preallocation that fails.

A Java broker only sets its segments' length (4.9.3's MappedFile maps a RandomAccessFile after setLength), so
their unwritten parts are holes; so are copies made with ``cp --sparse`` or ``rsync -S``.  Once the disk is
full, touching a hole through a shared mapping is SIGBUS, which kills the process (on tmpfs even a read does,
as recovery's walk over the last commitlog segment).  Opening such a store must give the files their blocks,
so that a full disk fails the open with ENOSPC instead.  The full-disk run itself is in
tests/durability/test_hunt25_enospc_sparse_full_disk.py (needs root for its tmpfs); here the allocation is
checked on whatever file system holds tmp_path, and preallocation failures are made with monkeypatch.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig
from rocketstore.store import mapped_file, rebuild
from rocketstore.store.mapped_file import MappedFile
from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial

SEGMENT = 1 << 20


def _config(root: Path) -> StoreConfig:
    return StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=SEGMENT,
                       mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=512, max_index_num=2048,
                       preallocate_commit_log=False)


def _sparsify(path: Path) -> None:
    """Rewrite *path* as a Java broker leaves it: the length set, only the non-zero pages written."""
    data = path.read_bytes()
    tmp = path.with_name(path.name + ".sparse")
    with open(tmp, "wb") as fh:
        fh.truncate(len(data))
        for pos in range(0, len(data), 4096):
            page = data[pos:pos + 4096]
            if page.count(0) != len(page):
                fh.seek(pos)
                fh.write(page)
    os.replace(tmp, path)


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_opening_a_store_of_sparse_segments_gives_them_their_blocks(tmp_path: Path) -> None:
    root = tmp_path / "store"
    cfg = _config(root)
    with MessageStore.open(root, cfg) as store:
        for i in range(5):
            assert store.put(Message.create("T", b"v" * 100, keys=f"k{i}")).ok
        assert store.wait_dispatched(10)
    files = [root / "commitlog" / "00000000000000000000",
             root / "consumequeue" / "T" / "0" / "00000000000000000000",
             next((root / "index").iterdir())]
    for f in files:
        _sparsify(f)
    if _allocated(files[0]) >= SEGMENT:
        pytest.skip("this file system makes no sparse files")
    with MessageStore.open(root, cfg) as store:
        for f in files:
            # (without it, a full disk makes the next put, dispatch or recovery read a SIGBUS)
            assert _allocated(f) >= os.path.getsize(f), f
        for i in range(5, 10):
            assert store.put(Message.create("T", b"w" * 100, keys=f"k{i}")).ok
        assert store.wait_dispatched(10)
        for q in range(10):
            got = store.get("T", 0, q, 1)
            assert got.status is GetMessageStatus.FOUND
            assert got.messages[0].keys == f"k{q}"
        assert len(store.query("T", "k3").messages) == 1


def test_a_sparse_segment_that_cannot_get_its_blocks_fails_the_open_with_enospc(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "00000000000000000000"
    with open(path, "wb") as fh:
        fh.write(b"data")
        fh.truncate(SEGMENT)
    if _allocated(path) >= SEGMENT:
        pytest.skip("this file system makes no sparse files")

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mapped_file.os, "posix_fallocate", full)
    with pytest.raises(OSError) as caught:
        MappedFile(str(path), 0, SEGMENT, writable=True, create=False)
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(path)


def test_a_torn_tail_zero_filled_without_fallocate_keeps_the_data_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file system (or a C library: musl) without posix_fallocate: the torn segment's missing end is written
    # as zeros, after the data it kept, not over it
    path = tmp_path / "00000000000000000000"
    data = bytes(range(256)) * 64
    path.write_bytes(data)

    def unsupported(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(mapped_file.os, "posix_fallocate", unsupported)
    mf = MappedFile(str(path), 0, SEGMENT, writable=True, create=False, allow_short=True)
    try:
        assert mf.read(0, len(data)) == data
        assert mf.read(len(data), 4096) == bytes(4096)
    finally:
        mf.close()
    assert os.path.getsize(path) == SEGMENT


def test_a_rebuild_on_a_full_disk_fails_rather_than_write_sparse_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    cfg = _config(root)
    with MessageStore.open(root, cfg) as store:
        for i in range(5):
            assert store.put(Message.create("T", b"v" * 100, keys=f"k{i}")).ok

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rebuild.os, "posix_fallocate", full)
    plan = plan_rebuild(str(root), cfg)
    with pytest.raises(OSError) as caught:
        rebuild_store(plan, scan_serial(plan), output_dir=str(tmp_path / "out"))
    assert caught.value.errno == errno.ENOSPC


def test_only_the_last_file_of_a_queue_gets_its_holes_filled(tmp_path: Path) -> None:
    """A queue's older files are full and only read: their holes (a Java-written index file is ~420 MB,
    mostly holes) are left alone, or the first open of a 4.9.3 store would take gigabytes more disk (found
    in the session's second review).  Only the file written to next is given its blocks."""
    root = tmp_path / "store"
    cfg = _config(root)
    body = b"v" * 60_000
    with MessageStore.open(root, cfg) as store:
        for i in range(40):  # ~2.4 MB: three 1 MiB commitlog segments
            assert store.put(Message.create("T", body, keys=f"k{i}")).ok
        assert store.wait_dispatched(10)
    segments = sorted((root / "commitlog").iterdir())
    assert len(segments) >= 3
    for f in segments:
        _sparsify(f)
    if _allocated(segments[0]) >= SEGMENT and _allocated(segments[-1]) >= SEGMENT:
        pytest.skip("this file system makes no sparse files")
    older = [f for f in segments[:-1] if _allocated(f) < SEGMENT]
    assert older, "the older segments have no zero pages to leave as holes"
    with MessageStore.open(root, cfg) as store:
        assert _allocated(segments[-1]) >= SEGMENT
        for f in older:
            assert _allocated(f) < SEGMENT, f
        got = store.get("T", 0, 0, 40)
        assert [m.keys for m in got.messages][:3] == ["k0", "k1", "k2"]
