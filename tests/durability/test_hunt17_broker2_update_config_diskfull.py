"""UPDATE_BROKER_CONFIG on a broker whose config directory is on a full disk (a small tmpfs mounted for the
test): as 4.9.3's AdminBrokerProcessor.updateBrokerConfig, whose Configuration.persist logs an IOException,
the answer is SUCCESS and the change is in effect (a brokerPermission change registers with the name server at
once); the failure is logged once, not every retry, and once space is back the config file and topics.json
are written without another update (they answered SYSTEM_ERROR "the config was changed but could not be
written")."""

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
from rocketstore.message.java_properties import read_properties_file  # noqa: E402
from rocketstore.remoting.codes import RequestCode, ResponseCode  # noqa: E402
from rocketstore.remoting.command import RemotingCommand  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402

TOPIC = "PermOnFullDisk"


def _update_config(cluster: LocalCluster, body: str) -> RemotingCommand:
    async def update() -> RemotingCommand:
        async with AdminClient(cluster.namesrv_addr) as admin:
            command = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, body=body.encode())
            return await admin.pool.request(cluster.broker_addr, command, 10)

    return run(update())


def _properties(path: Path) -> dict[str, str]:
    try:
        return read_properties_file(str(path))
    except FileNotFoundError:
        return {}


def _topics_version(path: Path) -> dict[str, object]:
    return dict(json.loads(path.read_text(encoding="utf-8"))["dataVersion"])


def test_update_broker_config_on_a_full_disk_answers_success_and_writes_the_files_later(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with small_fs(tmp_path, "1m") as mnt:
        (mnt / "config").mkdir()
        store = tmp_path / "store"
        store.mkdir()
        (store / "config").symlink_to(mnt / "config")  # only the config files on the small disk
        conf_file, topics_json = mnt / "config" / "broker.properties", mnt / "config" / "topics.json"
        with LocalCluster(store, flush_consumer_offset_interval_ms=100) as cluster:
            cluster.create_topic(TOPIC)
            scratch = fill(mnt)
            caplog.set_level(logging.ERROR, logger="rocketstore")
            caplog.set_level(logging.DEBUG, logger="rocketstore.broker.config_files")  # the retries too

            answer = _update_config(cluster, "brokerPermission=4\n")
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            # in effect: the broker and the name server's route say read-only
            assert cluster.call(lambda: cluster.broker.config.broker_permission) == 4
            cluster.wait_until(lambda: [q.perm for q in cluster.namesrv.routes.route(TOPIC).queue_datas] == [4],
                               20, "the route to show the new permission")
            # a second update on the full disk: SUCCESS too
            answer = _update_config(cluster, "shortPollingTimeMills=1700\n")
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            assert cluster.call(lambda: cluster.broker.config.short_polling_time_ms) == 1700
            assert _properties(conf_file).get("brokerPermission") != "4"
            # tried again every flushConsumerOffsetInterval while the disk stays full (logged at DEBUG)
            cluster.wait_until(lambda: len([r for r in caplog.records if r.levelno == logging.DEBUG
                                            and "broker.properties" in r.getMessage()]) >= 3, 20, "retries")

            # space back: both files catch up without another update
            scratch.unlink()
            cluster.wait_until(lambda: _properties(conf_file).get("brokerPermission") == "4", 20,
                               "broker.properties written")
            assert _properties(conf_file)["shortPollingTimeMills"] == "1700"
            version = cluster.call(lambda: cluster.broker.topics.data_version.to_json())
            cluster.wait_until(lambda: _topics_version(topics_json) == version, 20, "topics.json's new version")

        failed_writes = [r for r in caplog.records
                         if r.levelno >= logging.ERROR and "broker.properties" in r.getMessage()]
        assert len(failed_writes) == 1, [r.getMessage() for r in failed_writes]
        assert not [r for r in caplog.records if r.exc_info], "no traceback"
