"""The pure parts of the cluster list, connection and send-probe commands: what a runtime table becomes as a
clusterList row, client versions as mqadmin names them, and the average round trip."""

from __future__ import annotations

import pytest

from rocketstore.cli.cluster_cmds import cluster_row_json
from rocketstore.cli.group_admin_cmds import version_name
from rocketstore.client.admin_types import ClusterBrokerRow
from rocketstore.client.send_probe import SendSample, average_rt_ms

NOW_MS = 1_700_000_000_000


def test_cluster_row_takes_the_first_tps_field_and_the_hours_kept() -> None:
    runtime = {"brokerVersionDesc": "V4_9_3", "putTps": "12.5 11.0 9.75", "getTransferedTps": "3.25 2.0 1.0",
               "sendThreadPoolQueueSize": "2", "sendThreadPoolQueueHeadWaitTimeMills": "5",
               "pullThreadPoolQueueSize": "0", "pullThreadPoolQueueHeadWaitTimeMills": "0",
               "pageCacheLockTimeMills": "1", "earliestMessageTimeStamp": str(NOW_MS - 90 * 60_000),
               "commitLogDiskRatio": "0.42"}
    row = cluster_row_json(ClusterBrokerRow("C", "broker-a", 0, "1.2.3.4:10911", runtime), NOW_MS)
    assert (row["version"], row["inTps"], row["outTps"], row["hours"], row["commitLogDiskRatio"]) == \
        ("V4_9_3", 12.5, 3.25, 1.5, 0.42)
    assert (row["sendThreadPoolQueueSize"], row["sendThreadPoolQueueHeadWaitTimeMills"]) == ("2", "5")


def test_cluster_row_of_an_empty_store_or_a_silent_broker() -> None:
    empty = cluster_row_json(ClusterBrokerRow("C", "b", 1, "a:1", {"earliestMessageTimeStamp": "0",
                                                                     "putTps": "garbage"}), NOW_MS)
    assert (empty["hours"], empty["inTps"], empty["outTps"], empty["commitLogDiskRatio"]) == (None, 0.0, 0.0, None)
    silent = cluster_row_json(ClusterBrokerRow("C", "b", 0, "a:1", None, "connection refused"), NOW_MS)
    assert silent == {"clusterName": "C", "brokerName": "b", "brokerId": 0, "brokerAddr": "a:1",
                      "error": "connection refused"}


@pytest.mark.parametrize(("version", "name"), [(399, "V4_9_3"), (63, "V3_1_8"), (12345, "HIGHER_VERSION")])
def test_client_versions_print_as_mqadmin_names_them(version: int, name: str) -> None:
    assert version_name(version) == name


def _sample(rt_ms: float) -> SendSample:
    return SendSample("broker-a", 0, rt_ms, True, "SEND_OK")


def test_average_rt_leaves_the_first_send_out() -> None:
    assert average_rt_ms([_sample(100.0), _sample(2.0), _sample(4.0)]) == 3.0
    assert average_rt_ms([_sample(7.0)]) == 7.0
    assert average_rt_ms([]) == 0.0
