"""``python -m rocketstore`` is the ``rocketstore`` script: same usage line, same exit statuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketstore", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_python_dash_m_prints_the_scripts_usage() -> None:
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: rocketstore "), done.stdout[:200]


def test_python_dash_m_passes_on_the_commands_exit_status(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-store"
    done = _run("store", "verify", str(missing))
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("rocketstore: error: ") and str(missing) in done.stderr
    assert "Traceback" not in done.stderr
