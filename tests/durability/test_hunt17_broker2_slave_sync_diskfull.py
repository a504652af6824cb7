"""A slave whose config directory is on a full disk (a small tmpfs mounted for the test) syncing from its
master: as 4.9.3's SlaveSynchronize, which syncs the topics, the consumer offsets, the delay offsets and the
subscription groups each apart and whose persist only logs, a round takes everything the master answered
(a failed consumerOffset.json write stopped the round before the subscription groups), the failure is logged
once and not every round, and once space is back the next round writes the file."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from .hunt17_diskfull_fs import fill, small_fs

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

from local_cluster import LocalCluster  # noqa: E402

from rocketstore.client.admin import AdminClient  # noqa: E402
from rocketstore.remoting.codes import RequestCode, ResponseCode  # noqa: E402
from rocketstore.remoting.command import RemotingCommand  # noqa: E402
from rocketstore.remoting.headers import UpdateConsumerOffsetRequestHeader  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402

TOPIC, GROUP = "SyncedOnFullDisk", "GroupOnFullDisk"


def _offsets(path: Path) -> dict[str, object]:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))["offsetTable"])
    except (FileNotFoundError, ValueError, KeyError):
        return {}


def test_a_slave_on_a_full_disk_takes_the_masters_groups_and_offsets_and_logs_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with small_fs(tmp_path, "1m") as mnt, LocalCluster(tmp_path / "master", ha_listen_port=0) as cluster:
        (mnt / "config").mkdir()
        slave_dir = tmp_path / "slave"
        slave_dir.mkdir()
        (slave_dir / "config").symlink_to(mnt / "config")  # only the slave's config files on the small disk
        offsets_json = mnt / "config" / "consumerOffset.json"
        cluster.create_topic(TOPIC)
        slave = cluster.start_slave(slave_dir, cluster.broker_name)
        try:
            cluster.wait_slave_synced(slave)
            sync = slave.slave_sync
            assert sync is not None
            scratch = fill(mnt)

            async def group_and_offset() -> None:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.update_subscription_group(GROUP, broker_addr=cluster.broker_addr, retry_max_times=3)
                    ext = UpdateConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0,
                                                            commit_offset=3).to_ext_fields()
                    answer = await admin.pool.request(
                        cluster.broker_addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext), 10)
                    assert answer.code == ResponseCode.SUCCESS, answer.remark

            run(group_and_offset())
            caplog.set_level(logging.ERROR, logger="rocketstore")
            for _ in range(3):  # rounds on the full disk: each reaches its end (it raised OSError)
                assert cluster.run(sync.sync_once())
            assert cluster.call(lambda: slave.groups.get(GROUP)) is not None
            assert cluster.call(lambda: slave.offsets.query(GROUP, TOPIC, 0)) == 3
            assert f"{TOPIC}@{GROUP}" not in _offsets(offsets_json)
            failed = [r for r in caplog.records if r.name == "rocketstore.broker.slave_sync"
                      and r.levelno >= logging.ERROR and "consumerOffset.json" in r.getMessage()]
            assert len(failed) == 1, [r.getMessage() for r in failed]
            assert "No space left on device" in failed[0].getMessage()

            scratch.unlink()
            assert cluster.run(sync.sync_once())
            assert _offsets(offsets_json).get(f"{TOPIC}@{GROUP}") == {"0": 3}
        finally:
            cluster.run(slave.close())
