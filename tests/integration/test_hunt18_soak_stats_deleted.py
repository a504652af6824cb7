"""The statistics of deleted topics and groups, against a real name server + broker: 4.9.3 keeps them unless
autoDeleteUnusedStats (default false) is set, and with it set drops them on DELETE_TOPIC_IN_BROKER,
DELETE_SUBSCRIPTIONGROUP and CLEAN_UNUSED_TOPIC (BrokerStatsManager.onTopicDeleted / onGroupDeleted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, pull_all, send_bodies

from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.transport import run

TOPIC = "SoakStatsTopic"
GROUP = "soak-stats-group"


def _traffic(cluster: LocalCluster) -> None:
    """Two messages sent to TOPIC and pulled by GROUP: TOPIC_PUT_NUMS and GROUP_GET_NUMS items exist."""
    send_bodies(cluster, TOPIC, ["a", "b"])
    assert len(pull_all(cluster.namesrv_addr, TOPIC, GROUP, expected=2)) == 2


def _has(cluster: LocalCluster, stats_name: str, key: str) -> bool:
    async def view() -> bool:
        async with AdminClient(cluster.namesrv_addr) as admin:
            try:
                await admin.view_stats(cluster.broker_addr, stats_name, key)
            except BrokerError as exc:
                assert "not exist" in str(exc)
                return False
            return True

    return run(view())


def _auto_delete(cluster: LocalCluster) -> None:
    async def update() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_broker_config({"autoDeleteUnusedStats": "true"},
                                             broker_addr=cluster.broker_addr)

    run(update())


def _delete_topic_and_group(cluster: LocalCluster) -> None:
    async def delete() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.delete_topic(TOPIC)
            await admin.delete_subscription_group(GROUP, broker_addr=cluster.broker_addr)

    run(delete())


def test_by_default_a_deleted_topic_and_group_keep_their_statistics(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        _traffic(cluster)
        assert _has(cluster, "TOPIC_PUT_NUMS", TOPIC) and _has(cluster, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
        _delete_topic_and_group(cluster)
        assert _has(cluster, "TOPIC_PUT_NUMS", TOPIC), "4.9.3 keeps them without autoDeleteUnusedStats"
        assert _has(cluster, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
        # the topic sent to again counts on from what it had, as 4.9.3's kept item does
        send_bodies(cluster, TOPIC, ["c"])

        async def put_nums() -> int:
            async with AdminClient(cluster.namesrv_addr) as admin:
                cluster.call(lambda: cluster.broker.stats.sample_windows(0))
                return (await admin.view_stats(cluster.broker_addr, "TOPIC_PUT_NUMS", TOPIC)).minute.sum

        assert run(put_nums()) == 3


def test_auto_delete_unused_stats_drops_them_with_the_topic_and_the_group(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        _traffic(cluster)
        _auto_delete(cluster)
        _delete_topic_and_group(cluster)
        assert not _has(cluster, "TOPIC_PUT_NUMS", TOPIC)
        assert not _has(cluster, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
        assert not _has(cluster, "GROUP_GET_LATENCY", f"0@{TOPIC}@{GROUP}")


@pytest.mark.parametrize("auto_delete", [False, True])
def test_clean_unused_topic_drops_the_statistics_of_the_topics_it_drops(tmp_path: Path,
                                                                       auto_delete: bool) -> None:
    """A topic whose config went without DELETE_TOPIC_IN_BROKER (a topics.json edited while the broker was
    down): CLEAN_UNUSED_TOPIC drops its queues, and its statistics too when autoDeleteUnusedStats."""
    with LocalCluster(tmp_path / "store") as cluster:
        _traffic(cluster)
        if auto_delete:
            _auto_delete(cluster)
        cluster.call(lambda: cluster.broker.topics.delete(TOPIC))

        async def clean() -> list[tuple[str, int]]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.clean_unused_topics(cluster.broker_addr)

        assert {topic for topic, _ in run(clean())} == {TOPIC}
        assert _has(cluster, "TOPIC_PUT_NUMS", TOPIC) is not auto_delete
        assert _has(cluster, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}") is not auto_delete
