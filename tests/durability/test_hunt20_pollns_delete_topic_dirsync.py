"""DELETE_TOPIC_IN_BROKER whose consume queues' removal cannot be synced (a directory fsync fails with EIO):
the topic is deleted all the same, so the broker answers SUCCESS, logs what failed, and forgets the topic's
statistics (autoDeleteUnusedStats), as when the store refuses the clean-up (StoreError).  Before, the
OSError became the transport's SYSTEM_ERROR after the topic was gone: the admin saw a failure, the name
servers were never told to drop the topic, and its statistics stayed.

A real name server and broker on 127.0.0.1 with a store on tmp_path."""

from __future__ import annotations

import errno
import logging
import sys
from pathlib import Path

import pytest

from .test_hunt20_dirsync2_followups import _failing_directory_fsync

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

from local_cluster import LocalCluster  # noqa: E402
from test_hunt18_soak_stats_deleted import GROUP, TOPIC, _auto_delete, _has, _traffic  # noqa: E402

from rocketstore.client.admin import AdminClient  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402


def test_a_deleted_topic_whose_queue_removal_cannot_be_synced_is_deleted_and_its_stats_forgotten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        _traffic(cluster)
        _auto_delete(cluster)
        assert _has(cluster, "TOPIC_PUT_NUMS", TOPIC)

        async def delete() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.delete_topic(TOPIC)

        with caplog.at_level(logging.WARNING, logger="rocketstore.broker.admin"):
            _failing_directory_fsync(monkeypatch, errno.EIO)
            try:
                run(delete())  # the broker's SUCCESS, then the name server's
            finally:
                monkeypatch.undo()
        assert any(TOPIC in r.getMessage() and "consume queues" in r.getMessage()
                   and r.name == "rocketstore.broker.admin" for r in caplog.records)
        assert cluster.call(lambda: cluster.broker.topics.get(TOPIC)) is None
        assert cluster.call(lambda: cluster.namesrv.routes.route(TOPIC)) is None
        assert not _has(cluster, "TOPIC_PUT_NUMS", TOPIC)
        assert not _has(cluster, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
