"""The ``rocketmq`` sink against a broker configured with a maxMessageSize below the sink's 1 MiB batch
budget: a batch the broker refuses as too big is sent again in smaller pieces, so every row that fits on
its own is delivered (exactly once), and a row too big on its own still fails the write naming the code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, wait_stored

pytestmark = pytest.mark.spark


def test_batches_over_a_small_max_message_size_are_split_instead_of_failing_the_write(spark: Any,
                                                                                       tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides={"max_message_size": 64 << 10}) as cluster:
        bodies = [f"{i:04d}".ljust(4000, "x") for i in range(40)]  # 160 KB in one task: one batch of 40 rows
        df = spark.createDataFrame([(b,) for b in bodies], "body string").coalesce(1)
        (df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "SmallMax")
         .mode("append").save())
        stored = wait_stored(cluster, "SmallMax", 40, "the sink's rows")
        assert sorted(m.body.decode() for m in stored) == bodies

        # random bytes: a compressible body of 4 KiB or more goes compressed (tryToCompressMessage) and fits
        too_big = spark.createDataFrame([(os.urandom(70 << 10),)], "body binary")
        with pytest.raises(Exception, match="MESSAGE_ILLEGAL"):
            (too_big.write.format("rocketmq").option("nameServer", cluster.namesrv_addr)
             .option("topic", "SmallMax").mode("append").save())
