"""Shared fixtures: where the golden stores are, and helpers to copy and fingerprint store directories.

The golden data lives in ``shared/`` beside the repository (CI clones the repo with shared/ next to it:
the repo root is e.g. /x/main and the data is /x/shared).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketstore.store.config import StoreConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
GOLDEN_DIR = SHARED_DIR / "golden"

#: Every golden store, as named under shared/golden/stores and shared/golden/dumps.
GOLDEN_STORES = ("clean", "syncflush", "delay-demo", "killed", "killed-nodispatch", "killed-partial")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``golden_store`` runs once per golden store name."""
    if "golden_store" in metafunc.fixturenames:
        metafunc.parametrize("golden_store", GOLDEN_STORES)


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """shared/golden: stores/ (read-only, written by RocketMQ 4.9.3), dumps/, manifests/."""
    if not (GOLDEN_DIR / "stores").is_dir():
        pytest.fail(f"golden data not found at {GOLDEN_DIR}: clone shared/ beside the repository")
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def golden_dump(golden_dir: Path) -> Callable[[str], dict[str, Any]]:
    """The reference dump of a golden store (parsed once per session)."""
    cache: dict[str, dict[str, Any]] = {}

    def load(name: str) -> dict[str, Any]:
        if name not in cache:
            cache[name] = json.loads((golden_dir / "dumps" / f"{name}.json").read_text(encoding="utf-8"))
        return cache[name]

    return load


@pytest.fixture(scope="session")
def golden_config(golden_dump: Callable[[str], dict[str, Any]]) -> Callable[[str], StoreConfig]:
    """The StoreConfig (geometry) a golden store was written with, from its reference dump."""

    def make(name: str) -> StoreConfig:
        c = golden_dump(name)["config"]
        return StoreConfig(mapped_file_size_commit_log=c["mappedFileSizeCommitLog"],
                           mapped_file_size_consume_queue=c["mappedFileSizeConsumeQueue"],
                           max_hash_slot_num=c["maxHashSlotNum"], max_index_num=c["maxIndexNum"])

    return make


@pytest.fixture
def golden_copy(golden_dir: Path, tmp_path: Path) -> Callable[[str], Path]:
    """Copy a golden store into tmp_path (made writable) and return the copy's path."""

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(golden_dir / "stores" / name, dest)
        for root, _, files in os.walk(dest):
            for p in (root, *(os.path.join(root, f) for f in files)):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
        return dest

    return copy


def snapshot_tree(root: Path) -> dict[str, tuple[str, int, int] | str]:
    """Every directory and file under *root*: files as (sha256, size, mtime_ns), directories as 'dir'."""
    out: dict[str, tuple[str, int, int] | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            path = os.path.join(dirpath, f)
            st = os.stat(path)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(path, root)] = (digest, st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="session")
def tree_snapshot() -> Callable[[Path], dict[str, tuple[str, int, int] | str]]:
    """:func:`snapshot_tree`: fingerprint a directory to prove an operation left it untouched."""
    return snapshot_tree


@pytest.fixture(scope="session", autouse=True)
def _spark_scratch_in_pytest_tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Spark's scratch (blockmgr-*, spark-*) and its JVM's temp files (artifacts-*) go under pytest's temp
    directory, not /tmp, where they outlive every test run (PySpark stops the JVM without its shutdown
    hooks).  Set for every Spark JVM the tests start, in this process or in a subprocess."""
    scratch = str(tmp_path_factory.mktemp("spark-scratch"))
    saved = {k: os.environ.get(k) for k in ("SPARK_LOCAL_DIRS", "PYSPARK_SUBMIT_ARGS")}
    os.environ.setdefault("SPARK_LOCAL_DIRS", scratch)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options -Djava.io.tmpdir={scratch} pyspark-shell")
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
