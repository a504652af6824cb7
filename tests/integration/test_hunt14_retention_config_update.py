"""Retention settings changed by UPDATE_BROKER_CONFIG (``broker-admin config set`` / mqadmin
updateBrokerConfig) act at the running store's next clean-up pass, as 4.9.3's CleanCommitLogService reads
fileReservedTime, deleteWhen and the disk ratios from its config at every pass."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster

from rocketstore import Message
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run


def _admin(cluster: LocalCluster, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await fn(admin)

    return run(go())


def test_file_reserved_time_and_delete_when_set_at_runtime_drive_the_next_pass(tmp_path: Path) -> None:
    overrides = {"mapped_file_size_commit_log": 4096, "preallocate_commit_log": False,
                 "file_reserved_time_h": 72, "delete_when": "99"}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        store = cluster.broker.store
        store._cleaner.usage = lambda path: 0.30  # whatever this machine's disk: only age and hour decide
        for i in range(40):
            assert store.put(Message.create("RetTopic", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()
        past = time.time() - 10 * 3600  # ten hours old: kept by 72 hours, expired by 1
        for name in os.listdir(tmp_path / "store" / "commitlog"):
            os.utime(tmp_path / "store" / "commitlog" / name, (past, past))
        assert store.delete_expired_files().commit_log_files_deleted == 0  # not the hour
        assert store.delete_expired_files(force=True).commit_log_files_deleted == 0  # not old enough
        hour = time.localtime().tm_hour
        updated = _admin(cluster, lambda a: a.update_broker_config(
            {"fileReservedTime": "1", "deleteWhen": f"{hour};{(hour + 1) % 24}"}))
        assert updated == [cluster.broker_addr]
        report = store.delete_expired_files()  # the hour now, and old enough: no manual request needed
        assert report.reason == "time"
        assert report.commit_log_files_deleted > 0
        assert store.min_commit_log_offset > 0
        assert store.config.file_reserved_time_h == 1  # what the store reports follows
