"""``rocketstore export metadata|configs|metrics -f PATH`` where PATH is a file: one line naming the option and
what it wants, not makedirs' bare "[Errno 17] File exists: 'PATH'"; a missing directory is still made."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from rocketstore.cli import export_cmds


def _args(path: Path) -> argparse.Namespace:
    return argparse.Namespace(file_path=str(path), json=False)


def test_a_file_as_the_export_directory_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "export"
    target.write_text("not a directory")
    assert export_cmds._write(_args(target), "metadata.json", {"a": 1}, {}) == 1
    err = capsys.readouterr().err
    assert err == f"rocketstore: error: -f {target} is a file: give the directory to write metadata.json in\n"
    assert target.read_text() == "not a directory"


def test_a_missing_export_directory_is_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "new" / "dir"
    assert export_cmds._write(_args(target), "configs.json", {"b": 2}, {}) == 0
    assert json.loads((target / "configs.json").read_text()) == {"b": 2}
    assert capsys.readouterr().out == f"export {target / 'configs.json'} success\n"
