"""``rocketstore pipeline`` without the spark extra: the README installs the core only (``pip install -e .``),
and docs/spark.md says the pipeline jobs need ``[spark]``.  A job run without it says so in one line (exit 2,
as the command's other errors), instead of a ModuleNotFoundError traceback from inside Spark's start-up.

The missing package is made missing the way Python itself spells it: ``sys.modules[name] = None`` makes
``import name`` raise ImportError, in a child process running the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig

CHILD = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # not installed
from rocketstore.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _store(root: Path) -> Path:
    with MessageStore.open(root, StoreConfig(mapped_file_size_commit_log=1 << 20,
                                             preallocate_commit_log=False)) as store:
        store.put(Message.create("TopicA", b"hello", tags="TagA"))
    return root


def _run(missing: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, missing, *argv], capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize("missing", ["pyspark", "pyarrow"])
@pytest.mark.parametrize("job", ["report", "archive", "rebuild"])
def test_a_job_without_the_spark_extra_says_what_to_install(tmp_path: Path, job: str, missing: str) -> None:
    store = _store(tmp_path / "store")
    output = tmp_path / "out"
    argv = {"report": ["pipeline", "report", "--store", str(store), "--output", str(output)],
            "archive": ["pipeline", "archive", "--store", str(store), "--output", str(output)],
            "rebuild": ["pipeline", "rebuild", str(store), "--output", str(output)]}[job]
    done = _run(missing, *argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("rocketstore: error: ") and "[spark]" in last and missing in last, done.stderr
    assert not output.exists()


def test_the_report_without_matplotlib_says_what_to_install(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    done = _run("matplotlib", "pipeline", "report", "--store", str(store), "--output", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "matplotlib" in done.stderr.strip().splitlines()[-1], done.stderr
