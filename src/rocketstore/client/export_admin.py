"""AdminClient's exports of a cluster's metadata, configs and metrics (mqadmin exportMetadata, exportConfigs,
exportMetrics of RocketMQ 4.9.3), as the documents 4.9.3 writes to metadata.json / topic.json /
subscriptionGroup.json, configs.json and metrics.json; writing them to files is the caller's business.

What "user" topics and groups are is 4.9.3's getUserTopicConfig / getUserSubscriptionGroup: a broker's
GET_ALL_TOPIC_CONFIG (21) without the topics its GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305) names, nor
(unless asked) the %RETRY% / %DLQ% ones, and its GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) without
``CID_RMQ_SYS_*`` and the tools' own groups.  The metrics add GET_BROKER_RUNTIME_INFO (28),
GET_BROKER_CONFIG (26), VIEW_BROKER_STATS_DATA (315) of the transaction and schedule topics, and the
versions of the groups' connected clients (GET_CONSUMER_CONNECTION_LIST, 203).

Mixed into AdminClient, whose plumbing, ``runtime_info``, ``broker_config``, ``view_stats`` and
``consumer_connection_info`` it uses.  Imports remoting only.  Loop-bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocketstore.client.admin_types import AdminCalls, BrokerStatsData, ConsumerConnectionInfo
from rocketstore.client.errors import BrokerError, ClientError
from rocketstore.errors import RocketStoreError
from rocketstore.message.system_topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.codes import MQ_VERSION, RequestCode
from rocketstore.remoting.versions import get_version_desc

if TYPE_CHECKING:
    from rocketstore.remoting.bodies import DataVersion

__all__ = ["BROKER_CONFIG_KEYS", "SYSTEM_GROUPS", "ClusterConfigs", "ClusterMetrics", "ExportAdmin",
           "MergedMetadata", "UserGroups", "UserTopics", "day_sum", "version_desc"]

SYS_GROUP_PREFIX = "CID_RMQ_SYS_"
#: the groups 4.9.3's admin leaves out of a user's groups besides CID_RMQ_SYS_* (DefaultMQAdminExtImpl)
SYSTEM_GROUPS = frozenset({
    "DEFAULT_CONSUMER", "DEFAULT_PRODUCER", "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER",
    "CLIENT_INNER_PRODUCER", "SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL"})
#: the broker properties exportConfigs keeps, in 4.9.3's order
BROKER_CONFIG_KEYS = (
    "brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime", "filterServerNums",
    "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable", "traceOn",
    "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup")
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


#: a version ordinal as exportMetrics labels it (``V4_9_3``): 4.9.3's MQVersion.getVersionDesc
version_desc = get_version_desc


def day_sum(stats: BrokerStatsData) -> int:
    """4.9.3's compute24HourSum: the day window's sum, else the hour's, else the minute's (a broker up for
    less than a window has nothing in the longer ones yet)."""
    for window in (stats.day, stats.hour, stats.minute):
        if window.sum != 0:
            return window.sum
    return 0


@dataclass(frozen=True, slots=True)
class UserTopics:
    """One broker's user topics: TopicConfigSerializeWrapper (topic -> TopicConfig's JSON fields)."""

    data_version: dict[str, Any]
    topic_config_table: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"dataVersion": self.data_version, "topicConfigTable": self.topic_config_table}


@dataclass(frozen=True, slots=True)
class UserGroups:
    """One broker's user subscription groups: SubscriptionGroupWrapper (group -> its config's JSON fields)."""

    data_version: dict[str, Any]
    subscription_group_table: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"dataVersion": self.data_version, "subscriptionGroupTable": self.subscription_group_table}


@dataclass(frozen=True, slots=True)
class MergedMetadata:
    """Several masters' user topics and groups merged as exportMetadata -c merges them: a topic's read and
    write queue counts and a group's retryQueueNums summed, the other fields from the last master."""

    topic_config_table: dict[str, dict[str, Any]]
    subscription_group_table: dict[str, dict[str, Any]]
    export_time_ms: int

    def to_json(self, *, topics: bool = True, groups: bool = True) -> dict[str, Any]:
        """The map 4.9.3 writes: topicConfigTable and/or subscriptionGroupTable, and exportTime."""
        out: dict[str, Any] = {}
        if topics:
            out["topicConfigTable"] = self.topic_config_table
        if groups:
            out["subscriptionGroupTable"] = self.subscription_group_table
        out["exportTime"] = self.export_time_ms
        return out


@dataclass(frozen=True, slots=True)
class ClusterConfigs:
    """exportConfigs' configs.json: per broker name its master's kept properties, and the cluster's scale."""

    broker_configs: dict[str, dict[str, str]]
    namesrv_size: int
    master_broker_size: int
    slave_broker_size: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerConfigs": self.broker_configs,
                "clusterScale": {"namesrvSize": self.namesrv_size, "masterBrokerSize": self.master_broker_size,
                                 "slaveBrokerSize": self.slave_broker_size}}


@dataclass(frozen=True, slots=True)
class ClusterMetrics:
    """exportMetrics' metrics.json: per broker name its runtimeEnv / runtimeQuota / runtimeVersion maps, and
    the cluster's summed TPS and one-day counts."""

    evaluate_report: dict[str, dict[str, Any]]
    total_tps: dict[str, float] = field(default_factory=dict)
    total_one_day_num: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"evaluateReport": self.evaluate_report,
                "totalData": {"totalTps": self.total_tps, "totalOneDayNum": self.total_one_day_num}}


def _first_rate(text: str | None) -> float:
    """The first of a runtime rate string's three figures (``"12.5 11.0 10.2"``); 0 when blank, as
    exportMetrics reads putTps and getTransferedTps."""
    head = (text or "").split(" ")[0]
    return float(head) if head else 0.0


def _merge(into: dict[str, dict[str, Any]], table: dict[str, dict[str, Any]], summed: tuple[str, ...]) -> None:
    for name, config in table.items():
        merged = dict(config)
        earlier = into.get(name)
        if earlier is not None:
            for key in summed:
                merged[key] = int(earlier.get(key, 0)) + int(config.get(key, 0))
        into[name] = merged


class ExportAdmin(AdminCalls):
    if TYPE_CHECKING:
        async def broker_config(self, broker_addr: str) -> tuple[dict[str, str], DataVersion | None]: ...

        async def view_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData: ...

        async def consumer_connection_info(self, group: str) -> ConsumerConnectionInfo: ...

    async def user_topics(self, broker_addr: str, *, special_topics: bool = False) -> UserTopics:
        """4.9.3's getUserTopicConfig: the broker's topics but its system topics and, unless
        *special_topics*, the %RETRY% / %DLQ% ones."""
        obj = self._json(await self._call(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG))
        system = set(self._json(await self._call(broker_addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))
                     .get("topicList") or [])
        table = {}
        for name, config in (obj.get("topicConfigTable") or {}).items():
            name = str(name)
            if name in system or (not special_topics and name.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))):
                continue
            table[name] = dict(config) if isinstance(config, dict) else {}
        return UserTopics(dict(obj.get("dataVersion") or {}), table)

    async def user_groups(self, broker_addr: str) -> UserGroups:
        """4.9.3's getUserSubscriptionGroup: the broker's subscription groups but CID_RMQ_SYS_* and the
        tools' own (:data:`SYSTEM_GROUPS`)."""
        obj = self._json(await self._call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        table = {str(name): dict(config) if isinstance(config, dict) else {}
                 for name, config in (obj.get("subscriptionGroupTable") or {}).items()
                 if not str(name).startswith(SYS_GROUP_PREFIX) and str(name) not in SYSTEM_GROUPS}
        return UserGroups(dict(obj.get("dataVersion") or {}), table)

    async def cluster_masters(self, cluster: str) -> dict[str, str]:
        """Broker name -> master address of every broker of *cluster* with a master; ClientError when the
        name servers do not know the cluster (4.9.3 prints an error and exports nothing)."""
        info = await self.cluster_info()
        info.require(cluster)
        return info.masters(cluster)

    async def export_metadata(self, *, cluster: str | None = None, broker_addr: str | None = None,
                              special_topics: bool = False) -> MergedMetadata:
        """exportMetadata: the user topics and groups of one broker, or of every master of *cluster* merged
        (queue counts summed, see :class:`MergedMetadata`), masters taken in broker name order."""
        if (cluster is None) == (broker_addr is None):
            raise ClientError("give a cluster or a broker address")
        addrs = [broker_addr] if broker_addr is not None else list((await self.cluster_masters(cluster or "")).values())
        topics: dict[str, dict[str, Any]] = {}
        groups: dict[str, dict[str, Any]] = {}
        for addr in addrs:
            _merge(topics, (await self.user_topics(addr, special_topics=special_topics)).topic_config_table,
                   ("writeQueueNums", "readQueueNums"))
            _merge(groups, (await self.user_groups(addr)).subscription_group_table, ("retryQueueNums",))
        return MergedMetadata(topics, groups, int(time.time() * 1000))

    async def export_configs(self, cluster: str) -> ClusterConfigs:
        """exportConfigs: each master's kept properties (:data:`BROKER_CONFIG_KEYS`; one its broker lacks is
        left out) under its brokerName, and how many name servers, masters and slaves there are."""
        info = await self.cluster_info()
        info.require(cluster)
        configs: dict[str, dict[str, str]] = {}
        masters = slaves = 0
        for name in info.clusters.get(cluster, []):
            data = info.brokers.get(name)
            master = data.broker_addrs.get(0) if data is not None else None
            if data is None or master is None:
                continue
            props, _ = await self.broker_config(master)
            masters += 1
            slaves += sum(1 for broker_id in data.broker_addrs if broker_id != 0)
            configs[props.get("brokerName", name)] = {k: props[k] for k in BROKER_CONFIG_KEYS if k in props}
        return ClusterConfigs(configs, len(await self.namesrvs()), masters, slaves)

    async def export_metrics(self, cluster: str) -> ClusterMetrics:
        """exportMetrics: per master of *cluster* its environment, quota (disk ratios, current TPS, the
        last day's counts, average message size, user topic and group counts) and client versions, and the
        cluster's totals of the TPS and day counts."""
        masters = await self.cluster_masters(cluster)
        totals_tps = {"totalNormalInTps": 0.0, "totalNormalOutTps": 0.0, "totalTransInTps": 0.0,
                      "totalScheduleInTps": 0.0}
        totals_day = {"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 0,
                      "scheduleOneDayInNum": 0}
        report: dict[str, dict[str, Any]] = {}
        for name, addr in masters.items():
            table = await self.runtime_info(addr)
            props, _ = await self.broker_config(addr)
            groups = await self.user_groups(addr)
            topics = await self.user_topics(addr)
            # fastjson leaves out a map's null values: a figure the broker lacks is absent, not null
            env = {k: v for k, v in (("cpuNum", props.get("clientCallbackExecutorThreads")),
                                     ("totalMemKBytes", table.get("totalMemKBytes"))) if v is not None}
            trans = await self._optional_stats(addr, TRANS_HALF_TOPIC)
            schedule = await self._optional_stats(addr, SCHEDULE_TOPIC)
            tps = {"normalInTps": _first_rate(table.get("putTps")),
                   "normalOutTps": _first_rate(table.get("getTransferedTps")),
                   "transInTps": trans.minute.tps if trans else 0.0,
                   "scheduleInTps": schedule.minute.tps if schedule else 0.0}
            day = {"normalOneDayInNum": int(table.get("msgPutTotalTodayMorning") or 0)
                   - int(table.get("msgPutTotalYesterdayMorning") or 0),
                   "normalOneDayOutNum": int(table.get("msgGetTotalTodayMorning") or 0)
                   - int(table.get("msgGetTotalYesterdayMorning") or 0),
                   "transOneDayInNum": day_sum(trans) if trans else 0,
                   "scheduleOneDayInNum": day_sum(schedule) if schedule else 0}
            for (total_key, total), value in zip(totals_tps.items(), tps.values()):
                totals_tps[total_key] = total + value
            for key, value in day.items():
                totals_day[key] += value
            quota: dict[str, Any] = {
                "diskRatio": {k: table[k] for k in ("commitLogDiskRatio", "consumeQueueDiskRatio") if k in table},
                "tps": tps, "oneDayNum": day, "topicSize": len(topics.topic_config_table),
                "groupSize": len(groups.subscription_group_table)}
            if "putMessageAverageSize" in table:
                quota["messageAverageSize"] = table["putMessageAverageSize"]
            report[name] = {"runtimeEnv": env, "runtimeQuota": quota,
                            "runtimeVersion": {"rocketmqVersion": version_desc(MQ_VERSION),
                                               "clientInfo": await self._client_infos(groups)}}
        return ClusterMetrics(report, totals_tps, totals_day)

    async def _optional_stats(self, addr: str, topic: str) -> BrokerStatsData | None:
        """TOPIC_PUT_NUMS of *topic*, None when the broker has no such item (nothing was ever put to it)."""
        try:
            return await self.view_stats(addr, "TOPIC_PUT_NUMS", topic)
        except BrokerError:
            return None

    async def _client_infos(self, groups: UserGroups) -> list[str]:
        """``LANGUAGE%Vx_y_z`` of every client connected in one of *groups*, sorted (4.9.3 writes a set);
        a group nobody is connected in is skipped."""
        found: set[str] = set()
        for group in groups.subscription_group_table:
            try:
                info = await self.consumer_connection_info(group)
            except (RocketStoreError, OSError, TimeoutError):
                continue
            found.update(f"{c.language}%{version_desc(c.version)}" for c in info.connections)
        return sorted(found)
