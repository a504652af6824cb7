"""AdminClient's statsAll (mqadmin statsAll of RocketMQ 4.9.3): per topic and consuming group, the messages
not yet consumed, the put and get rates of the last minute and the counts of the last day, from each
master's VIEW_BROKER_STATS_DATA (315) items TOPIC_PUT_NUMS (key: topic) and GROUP_GET_NUMS (key:
``topic@group``), the groups from QUERY_TOPIC_CONSUME_BY_WHO (300) and the lag from GET_CONSUME_STATS (208).

As in 4.9.3 a figure a broker cannot give (no such stat item yet, no offsets) counts as 0 rather than
failing the whole listing.  Mixed into AdminClient, whose plumbing, ``view_stats`` and
``consume_progress`` it uses.  Imports remoting only.  Loop-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketstore.client.admin_types import (
    AdminCalls,
    BrokerStatsData,
    ConsumeProgress,
    answer_shape,
    check_name,
)
from rocketstore.client.errors import ClientError
from rocketstore.client.export_admin import day_sum
from rocketstore.errors import RocketStoreError
from rocketstore.message.system_topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.codes import RequestCode

__all__ = ["StatsAllAdmin", "TopicGroupStats"]


@dataclass(frozen=True, slots=True)
class TopicGroupStats:
    """One row of statsAll: a topic and one group consuming it (group None: nobody does; 4.9.3 prints
    NO_CONSUMER and no out figures then)."""

    topic: str
    group: str | None
    accumulation: int
    in_tps: float
    out_tps: float
    in_msg_24h: int
    out_msg_24h: int


class StatsAllAdmin(AdminCalls):
    if TYPE_CHECKING:
        async def view_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData: ...

        async def consume_progress(self, group: str, topic: str | None = None) -> ConsumeProgress: ...

        async def topic_list(self) -> list[str]: ...

    async def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> list[TopicGroupStats]:
        """statsAll: a row per (topic, group consuming it) of every topic the name servers know but
        %RETRY% / %DLQ% ones (only *topic* when given; ClientError when they do not know it), topics in
        name order; *active_only* keeps the rows with messages put or got in the last day.  A topic whose
        route cannot be read is left out, as 4.9.3 leaves it."""
        topics = [t for t in await self.topic_list() if not t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))]
        if topic is not None:
            check_name("topic", topic)
            if topic not in topics:
                raise ClientError(f"topic {topic!r} is not known to the name server")
            topics = [topic]
        rows: list[TopicGroupStats] = []
        for name in topics:
            try:
                rows.extend(await self._topic_rows(name, active_only))
            except (RocketStoreError, OSError, TimeoutError):
                continue
        return rows

    async def _topic_rows(self, topic: str, active_only: bool) -> list[TopicGroupStats]:
        route = await self.route(topic)
        masters = [addr for bd in route.broker_datas if (addr := bd.master_addr()) is not None]
        in_tps, in_day = await self._summed(masters, "TOPIC_PUT_NUMS", topic)
        groups = await self.consumed_by(topic, [a for bd in route.broker_datas if (a := bd.any_addr())])
        if not groups:
            if active_only and in_day == 0:
                return []
            return [TopicGroupStats(topic, None, 0, in_tps, 0.0, in_day, 0)]
        rows = []
        for group in groups:
            out_tps, out_day = await self._summed(masters, "GROUP_GET_NUMS", f"{topic}@{group}")
            if active_only and in_day == 0 and out_day == 0:
                continue
            rows.append(TopicGroupStats(topic, group, await self._accumulation(group, topic), in_tps, out_tps,
                                        in_day, out_day))
        return rows

    async def _summed(self, masters: list[str], stats_name: str, key: str) -> tuple[float, int]:
        """The minute TPS and the day count of one stat item, summed over *masters* (0 where missing)."""
        tps, day = 0.0, 0
        for addr in masters:
            try:
                stats = await self.view_stats(addr, stats_name, key)
            except (RocketStoreError, OSError, TimeoutError):
                continue
            tps += stats.minute.tps
            day += day_sum(stats)
        return tps, day

    async def consumed_by(self, topic: str, addrs: list[str]) -> list[str]:
        """The groups consuming *topic* (online with a subscription to it, or holding offsets of it), as the
        first of *addrs* (brokers of the topic) answers QUERY_TOPIC_CONSUME_BY_WHO."""
        for addr in addrs[:1]:
            obj = self._json(await self._call(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic}))
            with answer_shape("QUERY_TOPIC_CONSUME_BY_WHO", addr):
                groups = sorted(str(g) for g in obj.get("groupList") or [])
            return groups
        return []

    async def _accumulation(self, group: str, topic: str) -> int:
        """The group's total lag on *topic* (ConsumeStats.computeTotalDiff), 0 when unknown or negative."""
        try:
            return max(0, (await self.consume_progress(group, topic)).total_lag)
        except (RocketStoreError, OSError, TimeoutError):
            return 0
