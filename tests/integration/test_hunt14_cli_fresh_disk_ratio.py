"""A broker on a brand-new store reports its commitlog disk's used ratio at once (``cluster list`` SPACE,
``broker-admin status``), as 4.9.3 does: its message store makes commitlog/ and consumequeue/ when it is
created, so the ratio is never -1 for want of a directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

from rocketstore import MessageStore, StoreConfig


def test_a_fresh_broker_reports_its_disk_ratio_before_any_message(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        [row] = ok_json(capsys, cluster, "cluster", "list")
        assert 0 <= row["commitLogDiskRatio"] <= 1, row
        table = ok_json(capsys, cluster, "broker-admin", "status", "-b", cluster.broker_addr)[cluster.broker_addr]
        assert float(table["commitLogDiskRatio"]) >= 0 and float(table["consumeQueueDiskRatio"]) >= 0, table


def test_opening_a_new_store_makes_its_commitlog_and_consume_queue_directories(tmp_path: Path) -> None:
    root = tmp_path / "new"
    with MessageStore.open(root, StoreConfig(preallocate_commit_log=False)):
        assert os.path.isdir(root / "commitlog") and os.path.isdir(root / "consumequeue")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with MessageStore.open(scratch, read_only=True):  # a read-only open still creates nothing
        pass
    assert os.listdir(scratch) == []
