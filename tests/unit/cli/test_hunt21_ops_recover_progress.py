"""``rocketstore store recover``'s progress bar ends full: a clean store's recovery checks only the last
segments, and a killed one's preallocated segment past the end is never read, so a bar measured against
every segment on disk used to stop short of full (``recovery [####....] 0.2 of 1.2 MiB scanned done``)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rocketstore.cli.main import main
from rocketstore.cli.store_cmds import ProgressBar

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


@pytest.mark.parametrize("name", ["clean", "killed"])
def test_recover_progress_ends_full(golden_copy, capsys, name: str) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy(name)
    assert main(["store", "recover", str(root), *INDEX_FLAGS]) == 0
    bars = [line for line in capsys.readouterr().err.splitlines() if line.startswith("recovery [")]
    assert len(bars) == 1, bars
    assert bars[0].startswith(f"recovery [{'#' * 30}] "), bars[0]
    scanned, _, total = bars[0].split("] ", 1)[1].removesuffix(" MiB scanned done").partition(" of ")
    assert scanned == total, bars[0]


def test_a_bar_finished_short_of_its_total_ends_full() -> None:
    buffer = io.StringIO()
    bar = ProgressBar(10 << 20, buffer)
    bar(2 << 20)
    bar.finish()
    assert buffer.getvalue() == f"recovery [{'#' * 30}] 2.0 of 2.0 MiB scanned done\n"


def test_recovering_an_empty_store_ends_full(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "commitlog").mkdir()
    assert main(["store", "recover", str(tmp_path)]) == 0
    bars = [line for line in capsys.readouterr().err.splitlines() if line.startswith("recovery [")]
    assert bars == [f"recovery [{'#' * 30}] 0.0 of 0.0 MiB scanned done"]
