"""A small real file system for disk-full tests: a tmpfs mounted for the test (needs root; the test is
skipped otherwise) and a scratch file that fills it, deleted to free the space again."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig

PAGE = 4096


@contextmanager
def small_fs(tmp_path: Path, size: str, kind: str = "tmpfs") -> Iterator[Path]:
    """A file system of *size* (mount's notation: "1m", "256k") under *tmp_path*, unmounted afterwards: a
    tmpfs, or with *kind* "ext4" an ext4 image loop-mounted (closer to a real disk: directories take blocks,
    a journal; its image is *size* plus 3 MiB for ext4's own structures, no blocks reserved for root)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip(f"cannot mount a small {kind} here (needs root)")
    if kind == "ext4":
        image = tmp_path / "small.img"
        kib = int(size[:-1]) * (1024 if size.endswith("m") else 1) + 3 * 1024
        with open(image, "wb") as fh:
            fh.truncate(kib * 1024)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], capture_output=True, check=False)
        args = ["mount", "-o", "loop", str(image), str(mnt)]
        if made.returncode != 0:
            pytest.skip(f"cannot make an ext4 image here: {made.stderr!r}")
    else:
        args = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)]
    mounted = subprocess.run(args, capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small {kind} here: {mounted.stderr!r}")
    try:
        yield mnt
    finally:
        # (a loop device mount -o loop set up is detached by the unmount)
        subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


def free_bytes(mnt: Path) -> int:
    st = os.statvfs(mnt)
    return st.f_bavail * st.f_frsize


def fill(mnt: Path, leave_bytes: int = 0) -> Path:
    """Write ``<mnt>/scratch`` until at most *leave_bytes* are free (whole pages); returns its path."""
    scratch = mnt / "scratch"
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        block = bytes(64 * 1024)
        while (free := free_bytes(mnt)) > leave_bytes:
            try:
                os.write(fd, block[: max(PAGE, min(len(block), free - leave_bytes))])
            except OSError:
                break
    finally:
        os.close(fd)
    return scratch


def sparsify(path: Path) -> None:
    """Rewrite *path* with a hole for every page of zeros: what a 4.9.3 broker leaves (the length set, only
    the pages written that hold something) and what ``cp --sparse=always`` makes of a copy."""
    data = path.read_bytes()
    tmp = path.with_name(path.name + ".sparse")
    with open(tmp, "wb") as fh:
        fh.truncate(len(data))
        for pos in range(0, len(data), PAGE):
            page = data[pos:pos + PAGE]
            if page.count(0) != len(page):
                fh.seek(pos)
                fh.write(page)
    os.replace(tmp, path)


def sparse_test_config(root: Path, max_hash_slot_num: int = 512, max_index_num: int = 2048) -> StoreConfig:
    """The small store the sparse-read tests build on a tmpfs: 1 MiB commitlog segments, no preallocation,
    and a disk ratio high enough that a nearly full tmpfs does not refuse the puts."""
    return StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20,
                       mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=max_hash_slot_num,
                       max_index_num=max_index_num, preallocate_commit_log=False, disk_max_used_space_ratio=95)


def put_with_a_zero_page_record(root: Path) -> int:
    """Write twelve messages to a new store at *root*; record 5 holds whole pages of zeros, a hole inside
    the data once the copy is sparse.  Returns the commitlog's end."""
    with MessageStore.open(root, sparse_test_config(root)) as store:
        for i in range(12):
            body = b"z" + bytes(3 * 4096) + b"z" if i == 5 else b"v" * 100
            assert store.put(Message.create("T", body, keys=f"k{i}")).ok
        assert store.wait_dispatched(10)
        return store.max_commit_log_offset
