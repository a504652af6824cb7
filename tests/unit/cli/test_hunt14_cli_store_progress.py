"""``rocketstore store verify`` and ``store dump`` show how far they are on a terminal (a big store takes
minutes), on stderr, redrawn in place and wiped before the report; written to a file or a pipe, stderr
stays empty and stdout holds exactly the report."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from rocketstore.cli.main import main
from rocketstore.cli.store_cmds import PhaseProgress

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO, *argv: str) -> tuple[int, str, str]:
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    code = main(list(argv))
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("action", ["verify", "dump"])
def test_on_a_terminal_verify_and_dump_draw_progress_and_wipe_it(golden_dir: Path, action: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(golden_dir / "stores" / "clean")
    code, out, err = _run(monkeypatch, FakeTerminal(), "store", action, root, *INDEX_FLAGS)
    assert code == 0
    frames = err.split("\r")
    assert f"{action}: commitlog [" in err and "MiB" in err, err
    assert any(f.startswith(f"{action}: ") and "keys" in f for f in frames), err
    assert frames[-1] == "" and frames[-2].strip() == "", err  # the last frame wiped: the line is blank again
    assert "\n" not in err
    _, plain_out, plain_err = _run(monkeypatch, io.StringIO(), "store", action, root, *INDEX_FLAGS)
    assert plain_err == "" and plain_out == out
    if action == "dump":
        json.loads(out)


def test_phase_progress_draws_only_changed_frames_and_nothing_off_a_terminal() -> None:
    tty = FakeTerminal()
    bar = PhaseProgress(tty, "verify", width=10)
    bar("commitlog", 0, 4 << 20)
    bar("commitlog", 1, 4 << 20)  # the same frame: not drawn again
    bar("commitlog", 4 << 20, 4 << 20)
    bar("index keys", 5, 10)
    bar.finish()
    frames = tty.getvalue().split("\r")[1:]
    longest = len("verify: commitlog [##########] 4.0 of 4.0 MiB")
    assert frames[:3] == ["verify: commitlog [..........] 0.0 of 4.0 MiB",
                          "verify: commitlog [##########] 4.0 of 4.0 MiB",
                          "verify: index keys [#####.....] 5 of 10".ljust(longest)]  # the longer frame covered
    assert frames[3:] == [" " * longest, ""]  # wiped
    plain = io.StringIO()
    quiet = PhaseProgress(plain, "verify")
    quiet("commitlog", 1, 2)
    quiet.finish()
    assert plain.getvalue() == ""
