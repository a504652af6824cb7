"""``pipeline rebuild``'s Spark tasks check, first thing, that they run the rocketstore version that planned the
scan (as the data sources' tasks do, spark/versions.py): an executor with another version fails with
VersionMismatchError naming both, not deep in the scan or with wrong facts.  The planning version is given to
spark_scan (the data sources take it from the rocketstore.plannedVersion option)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")

from rocketstore import __version__
from rocketstore.cli.pipeline_cmds import spark_error_line
from rocketstore.spark.rebuild import spark_scan
from rocketstore.store.config import StoreConfig
from rocketstore.store.rebuild import plan_rebuild

pytestmark = pytest.mark.spark

OTHER = "9.9.9.dev0"


def test_rebuild_scan_planned_by_another_version_fails_naming_both(spark: Any, golden_copy: Any) -> None:
    store = golden_copy("clean")
    config = StoreConfig(store_path_root_dir=str(store), mapped_file_size_commit_log=65536)
    plan = plan_rebuild(str(store), config, 16 << 10)
    assert len(plan.ranges) > 1
    facts = list(spark_scan(spark, plan)(plan.ranges))  # planned here: this version
    assert len(facts) == len(plan.ranges)
    with pytest.raises(Exception) as info:
        spark_scan(spark, plan, version=OTHER)(plan.ranges)
    line = spark_error_line(info.value)
    assert line.startswith("VersionMismatchError: "), str(info.value)[:2000]
    assert f"this rocketstore rebuild scan was planned with rocketstore {OTHER}" in line, line
    assert f"runs rocketstore {__version__}" in line, line
