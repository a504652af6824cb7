"""`rocketstore store verify` on damaged copies of the golden stores: the damage is reported (exit 1), the
store is left as it was, and no OS error ends the check.

* After a crash, recovery cuts the commitlog at the first record that fails its checks (as RocketMQ 4.9.3's
  recoverAbnormally does).  A record damaged in the middle of a crashed store made verify say "OK" (exit 0)
  although that cut throws away every record written after it: it was taken for a torn tail.
* A file where consumequeue/ should be verified "OK" (exit 0), though no broker can open that store.
* A directory where a consume-queue file should be ended verify with "[Errno 21] Is a directory" (exit 2)
  while the open and dump skip it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketstore.cli.main import main

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]
#: the first record of the killed store's fourth commitlog segment (TopicA, a 4 KiB body)
SEGMENT_3 = 196608


def _verify(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, Any], str]:
    code = main(["store", "verify", str(root), *INDEX_FLAGS, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


def _xor_byte(path: Path, position: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        byte = fh.read(1)[0]
        fh.seek(position)
        fh.write(bytes([byte ^ 0xFF]))


@pytest.mark.parametrize(("position", "reason"), [(300, "body CRC mismatch"), (5, "bad magic")])
def test_verify_reports_a_crash_cut_that_drops_the_records_after_a_damaged_one(
        golden_copy: Callable[[str], Path], tree_snapshot: Callable[[Path], Any],
        capsys: pytest.CaptureFixture[str], position: int, reason: str) -> None:
    root = golden_copy("killed")
    _xor_byte(root / "commitlog" / f"{SEGMENT_3:020d}", position)
    before = tree_snapshot(root)
    code, report, _ = _verify(capsys, root)
    assert tree_snapshot(root) == before
    assert code == 1 and report["ok"] is False
    assert report["recovery_preview"]["valid_end"] == SEGMENT_3
    [problem] = [p for p in report["problems"] if p["kind"] == "RECOVERY_TRUNCATES"]
    assert problem["where"] == f"commitlog@{SEGMENT_3}"
    assert reason in problem["detail"] and "whole records follow it on disk" in problem["detail"]


def test_verify_reports_a_directory_in_place_of_a_consume_queue_file(
        golden_copy: Callable[[str], Path], tree_snapshot: Callable[[Path], Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    root = golden_copy("clean")
    first = root / "consumequeue" / "TopicA" / "0" / f"{0:020d}"
    os.remove(first)
    os.mkdir(first)
    before = tree_snapshot(root)
    code, report, err = _verify(capsys, root)
    assert tree_snapshot(root) == before
    assert "Is a directory" not in err
    assert code == 1
    assert report["counts_by_kind"].get("RECORD_NOT_IN_CQ", 0) > 0


def test_verify_reports_a_file_in_place_of_the_consumequeue_directory(
        golden_copy: Callable[[str], Path], tree_snapshot: Callable[[Path], Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The read-only open finds no queue and rebuilds them all in memory, so the rest looked whole ("OK"),
    while ``store recover`` and a broker cannot open the store at all."""
    root = golden_copy("clean")
    shutil.rmtree(root / "consumequeue")
    (root / "consumequeue").write_bytes(b"")
    before = tree_snapshot(root)
    code, report, _ = _verify(capsys, root)
    assert tree_snapshot(root) == before
    assert code == 1
    [problem] = [p for p in report["problems"] if p["kind"] == "NOT_A_DIRECTORY"]
    assert problem["where"] == str(root / "consumequeue")
