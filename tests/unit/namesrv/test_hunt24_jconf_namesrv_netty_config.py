"""GET_NAMESRV_CONFIG shows the NettyServerConfig settings 4.9.3's name server shows, UPDATE_NAMESRV_CONFIG
takes them (mqadmin updateNamesrvConfig -k serverWorkerThreads -v 9 was refused by ours, taken by 4.9.3) and
the configStorePath file keeps them for the next start; rocketmqHome is $ROCKETMQ_HOME, left out when unset
(4.9.3's null).  The key set below was captured from 4.9.3's name server (mqadmin getNamesrvConfig, started
with ``-c ns.properties`` holding listenPort, ROCKETMQ_HOME set)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.cli.serve_cmds import namesrv_config_of
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.namesrv import NamesrvConfig, NamesrvConfigError

#: captured from 4.9.3 (getNamesrvConfig), the values of a default name server but the paths and port
JAVA_SHOWN = {
    "serverSocketBacklog": "1024", "writeBufferHighWaterMark": "0", "serverWorkerThreads": "8",
    "serverSelectorThreads": "3", "serverChannelMaxIdleTimeSeconds": "120", "writeBufferLowWaterMark": "0",
    "serverSocketRcvBufSize": "0", "serverAsyncSemaphoreValue": "64", "kvConfigPath": None,
    "configStorePath": None, "clusterTest": "false", "orderMessageEnable": "false", "serverSocketSndBufSize": "0",
    "serverOnewaySemaphoreValue": "256", "serverCallbackExecutorThreads": "0", "listenPort": None,
    "rocketmqHome": None, "productEnvName": "center", "useEpollNativeSelector": "false",
    "serverPooledByteBufAllocatorEnable": "true",
}


def test_the_settings_shown_are_4_9_3_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_HOME", "/opt/rocketmq")
    shown = parse_properties_text(NamesrvConfig().to_properties())
    assert set(shown) == set(JAVA_SHOWN)
    assert {k: v for k, v in shown.items() if JAVA_SHOWN[k] is not None} == {
        k: v for k, v in JAVA_SHOWN.items() if v is not None}
    assert shown["rocketmqHome"] == "/opt/rocketmq"
    monkeypatch.delenv("ROCKETMQ_HOME")
    assert set(parse_properties_text(NamesrvConfig().to_properties())) == set(JAVA_SHOWN) - {"rocketmqHome"}


def test_an_update_of_a_netty_setting_is_taken_written_and_read_at_the_next_start(tmp_path: Path) -> None:
    conf = tmp_path / "ns.properties"
    conf.write_text("listenPort=0\nserverSelectorThreads=5\n", encoding="utf-8")
    config = namesrv_config_of(str(conf))
    updated = config.updated({"serverWorkerThreads": "9", "useEpollNativeSelector": "TRUE"})
    conf.write_text(updated.to_properties(), encoding="utf-8")  # what the handler writes to configStorePath
    shown = parse_properties_text(namesrv_config_of(str(conf)).to_properties())
    assert (shown["serverWorkerThreads"], shown["serverSelectorThreads"], shown["useEpollNativeSelector"]) == (
        "9", "5", "true")
    with pytest.raises(NamesrvConfigError, match="serverWorkerThreads"):
        config.updated({"serverWorkerThreads": "nine"})  # 4.9.3 answers success and keeps the old value
