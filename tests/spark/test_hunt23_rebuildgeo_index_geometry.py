"""``pipeline rebuild`` of a store whose index files have another geometry than the one it would write.

Without ``--index-slots`` / ``--index-entries`` / ``-c broker.conf`` the rebuild writes RocketMQ's default
geometry (420,000,040-byte index files); over the golden stores' 8,440-byte ones (100 slots, 400 entries)
that left a store their broker refuses to open.  The mismatch is refused before Spark starts and before
anything is written; a geometry given explicitly (here through broker.conf) is written as told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from rocketstore.cli.main import main
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

pytestmark = pytest.mark.spark

SEGMENTS = ["--segment-bytes", "65536", "--cq-bytes", "6000"]
GOLDEN_INDEX_BYTES = 40 + 100 * 4 + 400 * 20


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("target", [["--in-place"], ["--output", "OUT"], []])
def test_default_geometry_over_other_index_files_is_refused_before_anything_is_written(
        golden_copy, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: list[str]) -> None:  # type: ignore[no-untyped-def]
    store = golden_copy("clean")
    before = _tree(store)
    out_dir = tmp_path / "out"
    argv = ["pipeline", "rebuild", str(store), *[str(out_dir) if a == "OUT" else a for a in target],
            "--master", "local[1]", *SEGMENTS]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "starting Spark" not in err, err  # refused before Spark starts
    error = [line for line in err.splitlines() if line.startswith("rocketstore: error:")]
    assert len(error) == 1, err
    assert f"has {GOLDEN_INDEX_BYTES} bytes" in error[0]
    assert f"would write index files of {StoreConfig().index_file_bytes} bytes" in error[0]
    assert "--index-slots" in error[0] and "--index-entries" in error[0] and "-c broker.conf" in error[0]
    assert _tree(store) == before  # nothing changed
    assert not out_dir.exists() and not Path(str(store) + ".rebuilt").exists()


def test_geometry_from_broker_conf_is_written_as_told(spark: Any, golden_copy, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = golden_copy("clean")
    conf = tmp_path / "broker.conf"
    conf.write_text("maxHashSlotNum=100\nmaxIndexNum=400\n", encoding="utf-8")
    assert main(["pipeline", "rebuild", str(store), "--in-place", "--master", "local[2]", *SEGMENTS,
                 "-c", str(conf)]) == 0
    assert "rebuilt in place" in capsys.readouterr().out
    sizes = {p.stat().st_size for p in (store / "index").iterdir()}
    assert sizes == {GOLDEN_INDEX_BYTES}
    # the geometry of the store's broker opens it (a mismatch is a StoreConfigError)
    config = StoreConfig(mapped_file_size_commit_log=65536, mapped_file_size_consume_queue=6000,
                         max_hash_slot_num=100, max_index_num=400)
    with MessageStore.open(store, config, read_only=True) as ms:
        assert ms.max_commit_log_offset > 0
