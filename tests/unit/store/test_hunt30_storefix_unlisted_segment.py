"""The commitlog's next segment is made ahead; one lost as it was handed over (an interrupt) stays on disk,
unlisted, and the writer then met it (FileExistsError).  The writer deleted any file it met under that name on
the word that nothing was written to it: a file holding data is now left as it is (the segment cannot be
made, as before that change, and the next open takes the file in), a blank one is still replaced.  And a
segment whose warming failed was deleted with its mapping and descriptor left open: they are closed now."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.store import file_queue as file_queue_module
from rocketstore.store import mapped_file as mapped_file_module
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import MappedFile

SEGMENT = 64 << 10


def _queue_in_front_of(tmp_path: Path, planted: bytes | None) -> tuple[FileQueue, Path]:
    """A preallocating queue of one segment, and a file under the next segment's name nobody listed."""
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    q.create_next()
    q.preallocate = True  # (made ahead from now on: the next segment is met on disk, not made ahead)
    path = tmp_path / "q" / f"{SEGMENT:020d}"
    with open(path, "wb") as f:
        if planted is None:
            os.posix_fallocate(f.fileno(), 0, SEGMENT)  # as a segment made ahead: allocated, never written
        else:
            f.truncate(SEGMENT)
            f.seek(SEGMENT // 2)
            f.write(planted)
    return q, path


def test_an_unlisted_file_holding_data_is_not_deleted(tmp_path: Path) -> None:
    q, path = _queue_in_front_of(tmp_path, b"records someone wrote")
    try:
        with pytest.raises(FileExistsError, match="holding data"):  # before: deleted, and made again
            q.create_next()
        assert path.read_bytes()[SEGMENT // 2:SEGMENT // 2 + 21] == b"records someone wrote"
        assert len(q.files) == 1
    finally:
        q.close()
    again = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    again.load()  # the next open takes it in
    assert [f.start_offset for f in again.files] == [0, SEGMENT]
    again.close()


@pytest.mark.parametrize("planted", [None, bytes(5000)], ids=["allocated", "zeros written"])
def test_a_blank_unlisted_segment_is_made_again(tmp_path: Path, planted: bytes | None) -> None:
    q, _ = _queue_in_front_of(tmp_path, planted)
    try:
        mf = q.create_next()
        assert mf.start_offset == SEGMENT and [f.start_offset for f in q.files] == [0, SEGMENT]
        assert sorted(os.listdir(tmp_path / "q"))[:2] == [f"{0:020d}", f"{SEGMENT:020d}"]
    finally:
        q.close()


def test_holds_only_zeros(tmp_path: Path) -> None:
    holds_only_zeros = mapped_file_module.holds_only_zeros
    path = tmp_path / "f"
    path.write_bytes(b"")
    assert holds_only_zeros(str(path))
    path.write_bytes(bytes(3 << 20))  # several chunks, the last a short one
    assert holds_only_zeros(str(path), chunk_bytes=1 << 20)
    with open(path, "r+b") as f:
        f.seek((3 << 20) - 1)
        f.write(b"\x01")
    assert not holds_only_zeros(str(path), chunk_bytes=1 << 20)


def test_a_segment_whose_warming_failed_is_closed_before_it_is_deleted(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[MappedFile] = []

    class ColdFile(MappedFile):
        __slots__ = ()

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

        def warm(self) -> None:
            raise OSError("warming failed")

    monkeypatch.setattr(file_queue_module, "MappedFile", ColdFile)
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True, warm=True)
    with pytest.raises(OSError, match="warming failed"):
        q.create_next()
    [mf] = made
    assert mf._mm.closed and mf._fd == -1  # before: mapped, its descriptor open, the file deleted
    assert os.listdir(tmp_path / "q") == []
    q.close()
