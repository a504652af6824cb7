"""GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats, dashboards) of a broker with many groups: the
groups' topics come from one pass over the offset table, not one pass per group (5,000 groups over 10,000
offset keys took four seconds of the event loop).  Counts the passes; never times them."""

from __future__ import annotations

from pathlib import Path

from rocketstore.broker.groups import SubscriptionGroupConfig
from rocketstore.remoting.bodies import TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import GetConsumeStatsInBrokerHeader
from rocketstore.remoting.transport import connect, run
from tests.integration.local_cluster import LocalCluster

GROUPS = 300


class _CountedTable(dict):  # type: ignore[type-arg]
    """The offset table itself (same entries), counting the passes over its keys."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).passes += 1
        return super().__iter__()

    def items(self):  # type: ignore[no-untyped-def]
        type(self).passes += 1
        return super().items()


def test_broker_consume_stats_of_many_groups_passes_over_the_offsets_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        def fill() -> None:
            broker = cluster.broker
            for i in range(GROUPS):
                broker.topics.update(TopicConfig(f"Stats{i}", 1, 1))
                broker.groups.update(SubscriptionGroupConfig(f"stats_group_{i}"))
                broker.offsets.commit(f"stats_group_{i}", f"Stats{i}", 0, 0)
                broker.offsets.commit(f"stats_group_{i}", f"Stats{(i + 1) % GROUPS}", 0, 0)
            broker.offsets.table = _CountedTable(broker.offsets.table)

        cluster.call(fill)
        _CountedTable.passes = 0

        async def ask() -> RemotingCommand:
            conn = await connect(cluster.broker_addr)
            try:
                ext = GetConsumeStatsInBrokerHeader(is_order=False).to_ext_fields()
                return await conn.request(RemotingCommand.request(RequestCode.GET_BROKER_CONSUME_STATS, ext), 30.0)
            finally:
                conn.close()

        answer = run(ask())
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        body = answer.body.decode()
        for i in (0, 7, GROUPS - 1):
            assert f'"stats_group_{i}":[' in body
            assert f'"topic":"Stats{i}"' in body and f'"topic":"Stats{(i + 1) % GROUPS}"' in body
        passes = _CountedTable.passes
        assert passes <= 2, f"{passes} passes over the offset table for one answer about {GROUPS} groups"
