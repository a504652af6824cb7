"""Every place that shows a client's version names it as 4.9.3 does (MQVersion.getVersionDesc), also for
ordinals codes.MQVersion does not name (a Go client's V4_4_0 = 293) and for ones past 4.9.3's table
(HIGHER_VERSION): ``rocketstore group connections``, exportMetrics' clientInfo and the broker's remarks for
a client too old for GET_CONSUMER_RUNNING_INFO and INVOKE_BROKER_TO_GET_CONSUMER_STATUS."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from cli_calls import ok
from local_cluster import LocalCluster
from test_group_admin import fake_consumer, raw_call

from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RequestCode
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import run

V4_4_0 = 293  # not one of codes.MQVersion's members
PAST_THE_TABLE = 5000


def test_group_connections_names_every_version(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    group, topic = "versions-conn-group", "VersionsConnTopic"

    async def go() -> tuple[str, str]:
        go_client = await fake_consumer(cluster, group, topic, "10.0.0.7@go", lambda r: None, version=V4_4_0)
        future = await fake_consumer(cluster, group, topic, "10.0.0.8@future", lambda r: None,
                                     version=PAST_THE_TABLE)
        try:
            as_json = await asyncio.to_thread(ok, capsys, cluster, "group", "connections", group, "--json")
            as_table = await asyncio.to_thread(ok, capsys, cluster, "group", "connections", group)
            return as_json, as_table
        finally:
            await go_client.close()
            await future.close()

    as_json, as_table = run(go())
    shown = {c["clientId"]: (c["version"], c["versionDesc"]) for c in json.loads(as_json)["connectionSet"]}
    assert shown == {"10.0.0.7@go": (V4_4_0, "V4_4_0"), "10.0.0.8@future": (PAST_THE_TABLE, "HIGHER_VERSION")}
    assert "V4_4_0" in as_table and "HIGHER_VERSION" in as_table


def test_export_metrics_client_info_names_the_version(cluster: LocalCluster) -> None:
    group, topic = "versions-export-group", "VersionsExportTopic"

    async def go() -> list[str]:
        client = await fake_consumer(cluster, group, topic, "10.0.0.9@go", lambda r: None, version=V4_4_0)
        try:
            async with AdminClient(cluster.namesrv_addr) as admin:
                metrics = await admin.export_metrics("DefaultCluster")
            runtime_version: dict[str, Any] = metrics.evaluate_report[cluster.broker_name]["runtimeVersion"]
            return list(runtime_version["clientInfo"])
        finally:
            await client.close()

    client_info = run(go())
    assert [info.split("%")[1] for info in client_info] == ["V4_4_0"], client_info


def test_too_old_for_running_info_names_the_version(cluster: LocalCluster) -> None:
    group, topic = "versions-old-group", "VersionsOldTopic"

    async def go() -> tuple[int, str | None]:
        old = await fake_consumer(cluster, group, topic, "10.0.0.3@old", lambda r: None, version=61)
        try:
            answer = await raw_call(cluster, RequestCode.GET_CONSUMER_RUNNING_INFO,
                                    {"consumerGroup": group, "clientId": "10.0.0.3@old"})
            return answer.code, answer.remark
        finally:
            await old.close()

    assert run(go()) == (ResponseCode.SYSTEM_ERROR, "The Consumer <10.0.0.3@old> Version <V3_1_7> too low to "
                                                    "finish, please upgrade it to V3_1_8_SNAPSHOT")


def test_too_old_for_consumer_status_names_the_version(cluster: LocalCluster) -> None:
    group, topic = "versions-status-group", "VersionsStatusTopic"

    async def go() -> tuple[int, str | None]:
        old = await fake_consumer(cluster, group, topic, "10.0.0.4@old", lambda r: None, version=27)
        try:
            answer = await raw_call(cluster, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                    {"topic": topic, "group": group})
            return answer.code, answer.remark
        finally:
            await old.close()

    assert run(go()) == (ResponseCode.SYSTEM_ERROR, "the client does not support this feature. version=V3_0_6")
