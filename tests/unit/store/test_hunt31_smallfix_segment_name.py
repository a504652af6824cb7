"""One rule for "is this a segment file's name": :func:`rocketstore.store.mapped_file.is_segment_name`.

The 20-decimal-digit test was written out in seven places (the file queue's load, the rebuild's plan, the
snapshot's three looks at a directory, the CLI's recover and the broker's DLedger-data check); each now asks
``is_segment_name``.  ASCII digits only: ``str.isdigit`` also took superscripts (``int`` then refused the
name: a stray file so named stopped the store's open with a ValueError) and other scripts' digits.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import is_segment_name, segment_name
from rocketstore.store.snapshot import segment_bytes_on_disk


@pytest.mark.parametrize(("name", "expected"), [
    (segment_name(0), True),
    (segment_name(1 << 30), True),
    ("9" * 20, True),
    ("0" * 19, False),
    ("0" * 21, False),
    ("0" * 19 + "a", False),
    (segment_name(0) + ".allocating", False),
    ("\u00b2" * 20, False),   # superscript two: isdigit, but no int
    ("\u0661" * 20, False),   # Arabic-Indic one: isdigit, and int reads it as 111...
    ("", False),
])
def test_is_segment_name(name: str, expected: bool) -> None:
    assert is_segment_name(name) is expected


def test_a_stray_file_with_non_ascii_digits_does_not_stop_the_load(tmp_path: Path) -> None:
    size = 4096
    with open(tmp_path / segment_name(0), "wb") as f:
        f.truncate(size)
    for stray in ("\u00b2" * 20, "\u0661" * 20):
        (tmp_path / stray).write_bytes(b"x")
    queue = FileQueue(str(tmp_path), size, writable=False)
    try:
        queue.load()
        assert [f.start_offset for f in queue._files] == [0]
    finally:
        queue.close()
    assert segment_bytes_on_disk(str(tmp_path)) == size
    assert sorted(filter(is_segment_name, os.listdir(tmp_path))) == [segment_name(0)]
