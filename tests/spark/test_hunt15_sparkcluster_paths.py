"""What the Spark jobs assume about the machine the driver runs on, checked where local[*] cannot show it.

On a cluster an executor runs in its own working directory (work/app-*/N) and sees only the file systems of
its host.  Two things must hold there: a relative path given on the driver is made absolute before it is
shipped, and an executor that does not see the store planning read fails its task instead of reading an
empty store (no rows, no error).

The shared local[2] session cannot move its workers, so the first test moves the driver instead: the Python
driver changes directory after the JVM (and with it every Python worker) started elsewhere, which is how a
cluster's executors stand to the driver.  The second calls the reader as an executor does (partitions
planned, then read) with the store taken away in between.  test_hunt15_sparkcluster_local_cluster.py runs
the same jobs on a real local-cluster.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.errors import StoreConfigError
from rocketstore.spark.rebuild import rebuild_with_spark
from rocketstore.spark.store_options import StoreReadOptions, detect_config
from rocketstore.spark.store_source import StoreReader, store_schema

pytestmark = pytest.mark.spark

GOLDEN = Path("/work/shared/golden/stores")


def _golden(name: str, into: Path) -> Path:
    if not (GOLDEN / name).is_dir():
        pytest.skip(f"no golden store {GOLDEN / name}")
    shutil.copytree(GOLDEN / name, into)
    return into


def test_rebuild_of_a_relative_store_path_scans_on_workers_that_run_elsewhere(spark: Any, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = _golden("clean", tmp_path / "store")
    config = detect_config(str(store))
    monkeypatch.chdir(tmp_path)  # the driver is here; Spark's Python workers still run where the JVM started
    relative = config.replace(store_path_root_dir="store")

    report = rebuild_with_spark(spark, "store", relative, output_dir="rebuilt")

    assert report.record_count == 1629 and report.cq_entry_count == 1627
    rebuilt = tmp_path / "rebuilt" / "consumequeue"
    ours = sorted(p.relative_to(rebuilt) for p in rebuilt.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(store / "consumequeue") for p in (store / "consumequeue").rglob("*") if p.is_file())
    assert ours == theirs and len(ours) >= 22
    for name in ours:  # what RocketMQ 4.9.3's dispatcher wrote, byte for byte
        assert (rebuilt / name).read_bytes() == (store / "consumequeue" / name).read_bytes(), name


@pytest.mark.parametrize("name, trusted", [("clean", True), ("killed", False)])
@pytest.mark.parametrize("executor_sees", ["nothing", "an empty directory"])
def test_an_executor_without_the_store_fails_instead_of_reading_nothing(tmp_path: Path, name: str, trusted: bool,
                                                                        executor_sees: str) -> None:
    store = _golden(name, tmp_path / "store")
    reader = StoreReader(StoreReadOptions.parse({"path": str(store)}), store_schema())
    partitions = reader.partitions()  # on the driver, which sees the store
    assert partitions and all(p.trusted is trusted for p in partitions)  # type: ignore[attr-defined]

    store.rename(tmp_path / "elsewhere")  # an executor on a host without the store's file system
    if executor_sees == "an empty directory":
        store.mkdir()  # ... or with an empty mount point at the same path

    with pytest.raises(StoreConfigError, match="every executor must see the store at the same path"):
        for partition in partitions:
            for _ in reader.read(partition):
                pass


def test_an_executor_that_sees_the_store_reads_it_all(tmp_path: Path) -> None:
    store = _golden("killed", tmp_path / "store")
    reader = StoreReader(StoreReadOptions.parse({"path": str(store)}), store_schema())
    rows = sum(batch.num_rows for partition in reader.partitions() for batch in reader.read(partition))
    assert rows == 1625


@pytest.mark.parametrize("planned, trusted", [("clean", True), ("killed", False)])
@pytest.mark.parametrize("executor_sees", ["killed-partial", "delay-demo"])
def test_an_executor_with_another_store_at_the_path_fails_instead_of_reading_it(tmp_path: Path, planned: str,
                                                                                trusted: bool,
                                                                                executor_sees: str) -> None:
    """Each broker host keeps its own store at the same path: an executor on another host than the one
    planning read must not read its messages (or fewer of them) in place of the planned ones."""
    store = _golden(planned, tmp_path / "store")
    reader = StoreReader(StoreReadOptions.parse({"path": str(store)}), store_schema())
    partitions = reader.partitions()
    assert all(p.trusted is trusted for p in partitions)  # type: ignore[attr-defined]
    store.rename(tmp_path / "planned")
    _golden(executor_sees, store)  # a store of fewer messages (same first 1000), or of other topics

    with pytest.raises(StoreConfigError, match="is not the one planning read"):
        for partition in partitions:
            for _ in reader.read(partition):
                pass
