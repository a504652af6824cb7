"""Geometry options of the ``rocketmq-store`` reader beyond what RocketMQ's Java int settings hold are refused
when the options are parsed (they failed later with an OverflowError out of the mmap call)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import StoreReadOptions

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("name", ["segmentBytes", "consumeQueueBytes", "indexSlots", "indexEntries"])
def test_a_geometry_option_past_a_java_int_is_refused(golden_dir: Path, name: str) -> None:
    path = str(golden_dir / "stores" / "clean")
    with pytest.raises(StoreConfigError, match=f"option {name}=2147483648 is larger than RocketMQ's"):
        StoreReadOptions.parse({"path": path, name: "2147483648"})
    with pytest.raises(StoreConfigError, match=f"option {name}=99999999999999999999 is larger"):
        StoreReadOptions.parse({"path": path, name: "99999999999999999999"})


def test_the_largest_java_int_segment_size_is_taken(golden_dir: Path) -> None:
    path = str(golden_dir / "stores" / "clean")
    options = StoreReadOptions.parse({"path": path, "segmentBytes": "2147483647"})
    assert options.config.mapped_file_size_commit_log == 2147483647
