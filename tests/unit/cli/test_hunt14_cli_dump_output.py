"""``store dump -o FILE`` with a FILE that cannot be written is refused in one line before the store is
read (a dump of a big store takes minutes), not after."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.cli import store_cmds
from rocketstore.cli.main import main

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


def test_an_unwritable_output_is_refused_before_the_dump(golden_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    def no_dump(*args: object, **kwargs: object) -> None:
        raise AssertionError("the store was dumped before the output was checked")

    monkeypatch.setattr(store_cmds, "dump_store", no_dump)
    root = str(golden_dir / "stores" / "clean")
    for output in (tmp_path / "no-such-dir" / "dump.json", tmp_path):
        assert main(["store", "dump", root, *INDEX_FLAGS, "-o", str(output)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and err.startswith("rocketstore: error: "), err
        assert str(output) in err
