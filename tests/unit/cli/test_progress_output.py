"""The recovery progress bar of ``rocketstore store recover``: redrawn in place on a terminal, one plain line
when stderr is a file or a pipe (a log must not collect every frame, joined by carriage returns)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from rocketstore.cli.main import main
from rocketstore.cli.store_cmds import ProgressBar

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


def test_recover_with_stderr_in_a_log_writes_one_progress_line(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("killed")
    assert main(["store", "recover", str(root), *INDEX_FLAGS]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    bars = [line for line in err.splitlines() if line.startswith("recovery [")]
    assert len(bars) == 1 and bars[0].endswith("MiB scanned done"), err


def test_on_a_terminal_the_bar_is_redrawn_in_place() -> None:
    master, slave = os.openpty()
    try:
        with open(slave, "w", encoding="utf-8", closefd=True) as tty:
            bar = ProgressBar(3 << 20, tty, label="scan")
            for _ in range(3):
                bar(1 << 20)
            bar.finish()
        seen = b""
        while not seen.endswith(b"done\r\n"):  # the terminal turns the final \n into \r\n
            seen += os.read(master, 4096)
    finally:
        os.close(master)
    frames = [f"\rscan [{'#' * n}{'.' * (30 - n)}] {n // 10}.0 of 3.0 MiB scanned" for n in (10, 20, 30)]
    assert seen.decode() == "".join(frames) + " done\r\n"


def test_a_closed_or_plain_stream_is_not_a_terminal() -> None:
    buffer = io.StringIO()
    bar = ProgressBar(100, buffer)
    bar(50)
    assert buffer.getvalue() == ""
    bar(50)
    bar.finish()
    assert buffer.getvalue() == f"recovery [{'#' * 30}] 0.0 of 0.0 MiB scanned done\n"
    closed = io.StringIO()
    closed.close()
    assert ProgressBar(1, closed).live is False

