"""A segment whose creation was interrupted (a KeyboardInterrupt on the thread making it, as the constructor
returned or before the new file was listed) is not left behind under its real name.  Found by interrupting an
embedded store's put / flush loop at random moments: flush() dispatches on the caller's thread, and a consume
queue's next file left unlisted on disk made every later dispatch fail with "segment exists already", the
store refusing puts (SERVICE_NOT_AVAILABLE) until it was opened again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.store import file_queue as file_queue_module
from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import MappedFile

SEGMENT = 4096


def test_a_segment_interrupted_as_it_was_made_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    q.create_next()

    def interrupted(*args: object, **kwargs: object) -> MappedFile:
        MappedFile(*args, **kwargs).close()  # type: ignore[arg-type]
        raise KeyboardInterrupt  # (the signal handled as the constructor returned)

    monkeypatch.setattr(file_queue_module, "MappedFile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        q.create_next()
    monkeypatch.undo()
    mf = q.create_next()  # before: FileExistsError, for as long as the process ran
    assert mf.start_offset == SEGMENT and len(q.files) == 2
    q.close()


def test_a_segment_interrupted_before_it_was_listed_is_made_again(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True)
    q.create_next()

    def interrupted(files: list[MappedFile]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(q, "_set", interrupted)
    with pytest.raises(KeyboardInterrupt):
        q.create_next()
    monkeypatch.undo()
    mf = q.create_next()
    assert mf.start_offset == SEGMENT and len(q.files) == 2
    assert sorted(os.listdir(tmp_path / "q")) == [f"{0:020d}", f"{SEGMENT:020d}"]
    q.close()


def test_a_segment_made_ahead_and_lost_as_it_was_taken_is_made_again(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # the commitlog's next segment is made ahead on a thread; the writer takes it from a table.  Interrupted as
    # it was taken (the signal handled as the table's pop returned), the file stayed, unlisted: every later
    # segment creation met it and puts were refused with CREATE_MAPEDFILE_FAILED until the next open
    q = FileQueue(str(tmp_path / "q"), SEGMENT, writable=True, preallocate=True)
    q.create_next()
    real = q._take_ahead

    def interrupted(start: int) -> MappedFile | None:
        real(start)  # taken, and lost
        raise KeyboardInterrupt

    monkeypatch.setattr(q, "_take_ahead", interrupted)
    with pytest.raises(KeyboardInterrupt):
        q.create_next()
    monkeypatch.undo()
    mf = q.create_next()
    assert mf.start_offset == SEGMENT and len(q.files) == 2
    q.close()
