"""BENCHMARKS.md's summary and its hand-kept history survive a regeneration.

Synthetic rows (no timing): the point is the report's arithmetic and layout, not any figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import Notes, Row
from bench.report import write_markdown

INFO = {"cpu": "test cpu", "nproc": 2, "ram_gib": 1.0, "python": "CPython", "kernel": "k"}


def _render(tmp_path: Path, rows: list[Row], notes: Notes) -> str:
    out = tmp_path / "BENCHMARKS.md"
    write_markdown(str(out), rows, notes, INFO, "python -m bench --full", "now", 60.0, None, None)
    return out.read_text(encoding="utf-8")


def test_targets_at_a_glance_counts_met_and_missed(tmp_path: Path) -> None:
    rows = [
        Row("g", "fast thing", "msgs/s", 300.0, "peer A", 100.0, target_ratio=1.0),
        Row("g", "slow thing", "msgs/s", 10.0, "peer B", 100.0, target_ratio=0.5),
        Row("g", "latency thing", "ms", 2.0, "peer C", 4.0, target_ratio=1.0, better="lower"),
        Row("g", "untargeted", "msgs/s", 1.0, "peer D", 2.0),
    ]
    notes = Notes()
    notes.absolute.append(("p99", "12 ms", "<= 10 ms", False))
    text = _render(tmp_path, rows, notes)
    glance = text.split("## Targets at a glance", 1)[1].split("## Machine", 1)[0]
    assert "2 of 4 targets met" in glance
    assert "| slow thing | peer B | 0.1x | >= 0.5x **not met** |" in glance
    assert "| latency thing | peer C | 0.5x | <= 1x met |" in glance
    assert "untargeted" not in glance
    assert "<= 10 ms **not met**" in glance


def test_history_file_is_copied_into_the_report(tmp_path: Path) -> None:
    history = (REPO_ROOT / "bench" / "HISTORY.md").read_text(encoding="utf-8").strip()
    text = _render(tmp_path, [Row("g", "x", "msgs/s", 1.0, "y", 1.0)], Notes())
    assert history.splitlines()[0] in text
    assert text.index(history.splitlines()[0]) < text.index("## Reproduce")
