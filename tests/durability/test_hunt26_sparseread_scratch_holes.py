"""A scratch (read-only) MappedFile of a sparse file on tmpfs: reading its holes through the mapping gave each
one a page of the file system (tmpfs allocates on a read fault; on a full one that is SIGBUS, see
test_hunt26_sparseread_full_tmpfs.py).  Holes are now anonymous zero pages (or, for a file of many holes,
the data is read into anonymous memory): the bytes read are the file's, its blocks stay as they were, and
writes to the scratch copy never reach it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import rocketstore.store.mapped_file as mapped_file
from rocketstore.store.mapped_file import MappedFile

from .hunt17_diskfull_fs import small_fs

_SIZE = 1 << 20


def _sparse_file(path: Path) -> bytes:
    rng = random.Random(26)
    want = bytearray(_SIZE)
    with open(path, "wb") as fh:
        fh.truncate(_SIZE)
        for _ in range(30):
            pos = rng.randrange(0, _SIZE - 6000)
            data = rng.randbytes(rng.randrange(1, 6000))
            fh.seek(pos)
            fh.write(data)
            want[pos:pos + len(data)] = data
        fh.seek(_SIZE - 5)  # data in the last page too
        fh.write(b"tail!")
        want[-5:] = b"tail!"
    return bytes(want)


@pytest.mark.parametrize("how", ["holes mapped over", "many holes: read into memory", "no MAP_FIXED"])
def test_a_scratch_mapping_of_a_sparse_file_reads_it_without_allocating_its_holes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "many holes: read into memory":
        monkeypatch.setattr(mapped_file, "_MAX_HOLE_MAPS", 0)
    elif how == "no MAP_FIXED":
        monkeypatch.setattr(mapped_file, "_map_anonymous_over", lambda mm, holes: False)
    with small_fs(tmp_path, "4m") as mnt:
        path = mnt / "00000000000000000000"
        want = _sparse_file(path)
        blocks = path.stat().st_blocks
        assert blocks * 512 < _SIZE
        mf = MappedFile(str(path), 0, _SIZE, writable=False, create=False)
        try:
            assert mf.buffer[:] == want
            assert mf.read(_SIZE - 5, 5) == b"tail!"
            mf.write_at(0, b"scratch")  # a scratch copy takes writes, the file never sees them
            mf.write_at(_SIZE // 2, b"scratch")
            assert mf.read(_SIZE // 2, 7) == b"scratch"
            assert mf.zero_from(_SIZE - 4096)  # (recovery's cut of a torn tail, in scratch)
            assert mf.read(_SIZE - 5, 5) == bytes(5)
        finally:
            mf.close()
        assert path.stat().st_blocks == blocks
        assert path.read_bytes() == want
