"""UPDATE_BROKER_CONFIG as 4.9.3's Configuration.update takes it: 4.9.3 properties this broker keeps without
acting on them (deleteCommitLogFilesInterval, destroyMapedFileIntervalForcibly, redeleteHangedFileInterval,
deleteConsumeQueueFilesInterval, enableCalcFilterBitMap, filterDataCleanTimeSpan, ...) are taken, shown and
written; keys of the start file no setting takes are kept and changeable; unknown keys and values that do not
convert are left as they were with SUCCESS (a remark, a CLI warning); an empty body changes nothing.
``rocketstore serve -c broker.conf`` in a subprocess, ``rocketstore broker-admin config`` from others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster
from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.client.admin import AdminClient
from rocketstore.message.java_properties import read_properties_file
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run

#: the keys the session-14 broker refused, with the values set here
KEPT = {"deleteCommitLogFilesInterval": "150", "destroyMapedFileIntervalForcibly": "90000",
        "redeleteHangedFileInterval": "60000", "deleteConsumeQueueFilesInterval": "120",
        "enableCalcFilterBitMap": "true", "filterDataCleanTimeSpan": "3600000"}


def config_of(namesrv_addr: str, broker_addr: str) -> dict[str, str]:
    out = cli("broker-admin", "config", "get", "-n", namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[broker_addr]  # type: ignore[no-any-return]


def test_kept_and_start_file_keys_are_taken_shown_written_and_read_again_at_the_next_start(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", my_own_key="first", delete_commit_log_files_interval=77)
    with ServeProcess(tmp_path / "store", conf) as serve:
        before = config_of(serve.namesrv_addr, serve.broker_addr)
        # 4.9.3 shows every property: the start file's own key, a kept one from the file, kept defaults
        assert (before["myOwnKey"], before["deleteCommitLogFilesInterval"]) == ("first", "77")
        assert (before["redeleteHangedFileInterval"], before["enableCalcFilterBitMap"]) == ("120000", "false")
        out = cli("broker-admin", "config", "set", *(f"{k}={v}" for k, v in KEPT.items()), "myOwnKey=second",
                  "noSuchKey=1", "flushIntervalCommitLog=fast", "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
        # what was left as it was is named, as a warning
        assert "noSuchKey: not a broker property" in out.stderr
        assert "flushIntervalCommitLog: 'fast' is not a Java int" in out.stderr
        after = config_of(serve.namesrv_addr, serve.broker_addr)
        assert {k: after[k] for k in KEPT} == KEPT and after["myOwnKey"] == "second"
        assert "noSuchKey" not in after and after["flushIntervalCommitLog"] == before["flushIntervalCommitLog"]
        written = read_properties_file(str(conf))
        assert {k: written[k] for k in KEPT} == KEPT and written["myOwnKey"] == "second"
        assert "noSuchKey" not in written
    with ServeProcess(tmp_path / "store", conf) as serve:
        again = config_of(serve.namesrv_addr, serve.broker_addr)
        assert {k: again[k] for k in KEPT} == KEPT and again["myOwnKey"] == "second"


def _update(cluster: LocalCluster, body: bytes) -> RemotingCommand:
    async def go() -> RemotingCommand:
        pool = ConnectionPool()
        try:
            return await pool.request(cluster.broker_addr,
                                      RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=body), 5)
        finally:
            await pool.close()

    return run(go())


def _config(cluster: LocalCluster) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.broker_config(cluster.broker_addr)

    return run(go())


def test_values_are_converted_as_4_9_3s_setters_and_an_empty_body_changes_nothing(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        before, version = _config(cluster)
        assert _update(cluster, b"").code == 0
        assert _config(cluster) == (before, version)  # nothing written, the version as it was
        assert not (tmp_path / "store" / "config" / "broker.properties").exists()
        answer = _update(cluster, b"autoCreateTopicEnable=perhaps\nserverWorkerThreads=+12\n"
                                  b"deleteWhen=03\nfilterDataCleanTimeSpan=99999999999999999999\n"
                                  b"flushDiskType=sometimes\nbrokerRole=SLAVE_ISH\n")
        assert answer.code == 0, answer.remark
        assert "filterDataCleanTimeSpan" in (answer.remark or "") and "flushDiskType" in (answer.remark or "")
        after, version_after = _config(cluster)
        # Boolean.parseBoolean: anything but true is false; Integer.parseInt takes a sign
        assert (after["autoCreateTopicEnable"], after["serverWorkerThreads"], after["deleteWhen"]) == \
            ("false", "12", "03")
        assert cluster.call(lambda: cluster.broker.config.auto_create_topic_enable) is False
        # out of a long's range, not an enum constant: left as they were
        assert after["filterDataCleanTimeSpan"] == before["filterDataCleanTimeSpan"] == "86400000"
        assert (after["flushDiskType"], after["brokerRole"]) == (before["flushDiskType"], before["brokerRole"])
        assert version_after.counter == version.counter + 1


def test_the_runtime_info_reports_the_kept_pool_settings_as_4_9_3_does(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def runtime() -> dict[str, str]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.runtime_info(cluster.broker_addr)

        before = run(runtime())
        assert (before["sendThreadPoolQueueCapacity"], before["EndTransactionThreadPoolQueueCapacity"],
                before["startAcceptSendRequestTimeStamp"]) == ("10000", "100000", "0")
        answer = _update(cluster, b"sendThreadPoolQueueCapacity=500\nendTransactionPoolQueueCapacity=700\n"
                                  b"startAcceptSendRequestTimeStamp=1700000000000\n")
        assert answer.code == 0 and answer.remark is None
        after = run(runtime())
        # 4.9.3 reports its BrokerConfig's values there, whatever changed them
        assert (after["sendThreadPoolQueueCapacity"], after["EndTransactionThreadPoolQueueCapacity"],
                after["startAcceptSendRequestTimeStamp"]) == ("500", "700", "1700000000000")
