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

from rocketstore.remoting.transport import EVENT_LOOP_ENV
from rocketstore.store.config import StoreConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
GOLDEN_DIR = SHARED_DIR / "golden"

#: Every golden store, as named under shared/golden/stores and shared/golden/dumps.
GOLDEN_STORES = ("clean", "syncflush", "delay-demo", "killed", "killed-nodispatch", "killed-partial")


#: The loops a ``both_loops`` test runs on: asyncio's (the suite's default) and uvloop's (rocketstore[fast]).
LOOP_KINDS = ("asyncio", "uvloop")

# The suite's brokers, name servers and clients run on asyncio's loop whether or not uvloop is installed (the
# test extra installs it), so that installing it changes nothing but the ``both_loops`` tests.  Set at import,
# before any test makes a loop, and inherited by the CLI subprocesses the tests start; a value already set
# (ROCKETSTORE_EVENT_LOOP=uvloop python -m pytest ...) is kept.
os.environ.setdefault(EVENT_LOOP_ENV, "asyncio")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``golden_store`` runs once per golden store name; a test marked ``both_loops`` once
    per kind of :data:`LOOP_KINDS`."""
    if "golden_store" in metafunc.fixturenames:
        metafunc.parametrize("golden_store", GOLDEN_STORES)
    if metafunc.definition.get_closest_marker("both_loops") is not None:
        metafunc.parametrize("event_loop_kind", LOOP_KINDS, indirect=True)


@pytest.fixture(autouse=True)
def event_loop_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The loop kind the test's loops are made of ("asyncio" or "uvloop"; ask for it to know which).
    For a ``both_loops`` test, ROCKETSTORE_EVENT_LOOP set to this run's loop kind (skipped for uvloop where
    it is not installed) before the test's other function fixtures make their loops: everything started
    through rocketstore.remoting.transport.new_event_loop / run (LocalCluster, local_cluster.run_within,
    the blocking clients' loop threads, ``serve``) runs on it.  Other tests keep the suite's loop."""
    kind = getattr(request, "param", None)
    if kind is None:
        return os.environ[EVENT_LOOP_ENV]
    if kind == "uvloop":
        pytest.importorskip("uvloop")
    monkeypatch.setenv(EVENT_LOOP_ENV, kind)
    return str(kind)


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
