"""AdminClient's broker statistics and configuration calls (mqadmin brokerStatus, statsAll,
brokerConsumeStats, getBrokerConfig, updateBrokerConfig): GET_BROKER_RUNTIME_INFO (28),
VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317), GET_BROKER_CONFIG (26) and
UPDATE_BROKER_CONFIG (25).  Mixed into AdminClient, whose plumbing it uses.  Loop-bound.
"""

from __future__ import annotations

from rocketstore.client.admin_types import (
    AdminCalls,
    BrokerConsumeStats,
    BrokerStatsData,
    ConsumeProgress,
    QueueProgress,
    answer_shape,
    mq_fields,
    stats_window,
)
from rocketstore.client.errors import ClientError
from rocketstore.message.java_properties import escape_property, parse_properties_text
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.headers import GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader

__all__ = ["BrokerAdmin"]


class BrokerAdmin(AdminCalls):
    async def runtime_info(self, broker_addr: str) -> dict[str, str]:
        """The broker's runtime figures (GET_BROKER_RUNTIME_INFO; mqadmin brokerStatus): name -> value."""
        table = self._json(await self._call(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)).get("table") or {}
        if not isinstance(table, dict):
            raise ClientError(f"unexpected runtime info table: {str(table)[:200]!r}")
        return {str(k): str(v) for k, v in table.items()}

    async def view_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """One stat item of the broker (VIEW_BROKER_STATS_DATA): e.g. TOPIC_PUT_NUMS / topic,
        GROUP_GET_NUMS / ``topic@group``, BROKER_PUT_NUMS / cluster name.  An item the broker does not
        have raises the broker's SYSTEM_ERROR ("The stats <name> <key> not exist")."""
        ext = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key).to_ext_fields()
        obj = self._json(await self._call(broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, ext))
        with answer_shape("VIEW_BROKER_STATS_DATA", broker_addr):
            stats = BrokerStatsData(stats_window(obj.get("statsMinute")), stats_window(obj.get("statsHour")),
                                    stats_window(obj.get("statsDay")))
        return stats

    async def broker_consume_stats(self, broker_addr: str, is_order: bool = False, *,
                                   timeout_s: float | None = None) -> BrokerConsumeStats:
        """Every subscription group's consume progress on the broker (GET_BROKER_CONSUME_STATS);
        *is_order*: only ordered topics."""
        ext = GetConsumeStatsInBrokerHeader(is_order=is_order).to_ext_fields()
        obj = self._json(await self._call(broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, ext,
                                          timeout_s=timeout_s))
        groups: dict[str, list[ConsumeProgress]] = {}
        with answer_shape("GET_BROKER_CONSUME_STATS", broker_addr):
            for entry in obj.get("consumeStatsList") or []:
                if not isinstance(entry, dict):
                    continue
                for group, stats_list in entry.items():
                    progress = groups.setdefault(str(group), [])
                    for stats in stats_list if isinstance(stats_list, list) else []:
                        rows = []
                        for key, value in ((stats or {}).get("offsetTable") or {}).items():
                            mq = mq_fields(key)
                            rows.append(QueueProgress(str(mq["topic"]), str(mq["brokerName"]),
                                                      int(mq["queueId"]), int(value.get("brokerOffset", 0)),
                                                      int(value.get("consumerOffset", 0)),
                                                      int(value.get("lastTimestamp", 0))))
                        rows.sort(key=lambda q: (q.topic, q.broker_name, q.queue_id))
                        tps = float(stats.get("consumeTps") or 0.0)
                        progress.append(ConsumeProgress(str(group), rows, tps))
            total_diff = int(obj.get("totalDiff") or 0)
        return BrokerConsumeStats(str(obj.get("brokerAddr") or broker_addr), total_diff, groups)

    async def broker_config(self, broker_addr: str) -> tuple[dict[str, str], DataVersion | None]:
        """The broker's configuration (GET_BROKER_CONFIG; mqadmin getBrokerConfig): property -> value, and
        the configuration's data version."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        props = parse_properties_text(response.body.decode("utf-8", errors="replace"))
        version_text = response.ext_fields.get("version")
        version = DataVersion.from_json(fastjson.loads(version_text)) if version_text else None
        return props, version

    async def update_broker_config(self, properties: dict[str, str], *, broker_addr: str | None = None,
                                   cluster: str | None = None, notes: dict[str, str] | None = None) -> list[str]:
        """UPDATE_BROKER_CONFIG with *properties* (broker.conf names and values) on one broker, else on every
        master of *cluster* (every master when None), as mqadmin updateBrokerConfig.  Returns the addresses
        updated; a broker refusing (a value its config cannot take) raises its error and stops there.  A
        broker leaves unknown keys and values that do not convert as they were and still answers SUCCESS (as
        4.9.3 does); *notes*, when given, gets each such broker's remark saying which: address -> remark."""
        if not properties:
            raise ClientError("no property to update")
        for name, value in properties.items():
            if not name or any(c in name for c in "=: \t\r\n#!") or any(c in str(value) for c in "\r\n"):
                raise ClientError(f"cannot send property {name!r}={value!r} as a properties line")
        # a backslash doubled: the broker reads the body as Properties.load does (mqadmin sends it raw, and
        # 4.9.3 then reads C:\store as C:store)
        body = "".join(f"{name}={escape_property(str(value))}\n"
                       for name, value in properties.items()).encode("utf-8")
        targets = [broker_addr] if broker_addr is not None else await self.master_addrs(cluster)
        for addr in targets:
            response = await self._call(addr, RequestCode.UPDATE_BROKER_CONFIG, None, body)
            if notes is not None and response.remark:
                notes[addr] = response.remark
        return targets
