"""The name server's routing state (RocketMQ's RouteInfoManager), pure: no clock, no sockets.

Tables: topic -> {brokerName: QueueData}; brokerName -> (cluster, {brokerId: addr}); cluster -> {brokerName};
live brokers addr -> (last update, data version, connection key, HA addr); filter servers addr -> [addr].
Callers pass ``now_ms`` in, so expiry is testable without waiting.

Rules kept from 4.9.3 (routing.md section 2): only a master (id 0) registers queue data, and only when its
data version changed or it registered first; topics missing from a registration are not removed; a broker
is dropped after ``broker_expiry_ms`` (120 s) without registration or when its connection closes, and a
brokerName that loses its last address takes its queue data (and then empty topics) with it.

Thread-safety: none; the name server calls it from its event loop only.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from rocketstore.remoting.bodies import (
    MASTER_ID,
    BrokerData,
    DataVersion,
    Perm,
    QueueData,
    RegisterBrokerBody,
    TopicRouteData,
    encode_broker_data,
)
from rocketstore.remoting.headers import MAX_QUEUE_NUMS

__all__ = ["BROKER_EXPIRY_MS", "BrokerLive", "RegisterResult", "RouteTable"]

BROKER_EXPIRY_MS = 120_000
#: TopicSysFlag's bits: the topic is a unit topic / has unit subscriptions
TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BrokerLive:
    last_update_ms: int
    data_version: DataVersion
    connection: object | None
    ha_server_addr: str


@dataclass(frozen=True, slots=True)
class RegisterResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class _Broker:
    cluster: str
    name: str
    addrs: dict[int, str] = field(default_factory=dict)

    def frozen(self) -> BrokerData:
        return BrokerData(self.cluster, self.name, dict(self.addrs))


class RouteTable:
    """RouteInfoManager's tables and rules.  Not thread-safe."""

    def __init__(self, broker_expiry_ms: int = BROKER_EXPIRY_MS) -> None:
        self.broker_expiry_ms = broker_expiry_ms
        self.topic_queues: dict[str, dict[str, QueueData]] = {}
        self.brokers: dict[str, _Broker] = {}
        self.clusters: dict[str, set[str]] = {}
        self.live: dict[str, BrokerLive] = {}
        self.filter_servers: dict[str, list[str]] = {}
        #: bumped whenever a topic enters or leaves topic_queues: the name server keeps its encoded topic
        #: list (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, ~100 ms for 100,000 topics) until it moves
        self.topic_set_changes = 0

    # --- registration -------------------------------------------------------------------------------

    def register_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int,
                        ha_server_addr: str, body: RegisterBrokerBody, now_ms: int,
                        connection: object | None = None) -> RegisterResult:
        takes_topics = self.takes_topic_configs(broker_name, broker_addr, broker_id, body.data_version)
        self.clusters.setdefault(cluster, set()).add(broker_name)
        broker = self.brokers.get(broker_name)
        if broker is None:
            broker = self.brokers[broker_name] = _Broker(cluster, broker_name)
        # a slave promoted to master (or the reverse) keeps its address under a new id
        for other_id in [i for i, a in broker.addrs.items() if a == broker_addr and i != broker_id]:
            del broker.addrs[other_id]
        broker.addrs[broker_id] = broker_addr

        if takes_topics:
            self._upsert_topic_configs(broker_name, body)

        if broker_addr not in self.live:  # 4.9.3's "new broker registered" (its re-registrations say nothing)
            log.info("new broker registered: %s (cluster %s, %s, id %d), HA server %s", broker_addr, cluster,
                     broker_name, broker_id, ha_server_addr)
        self.live[broker_addr] = BrokerLive(now_ms, body.data_version, connection, ha_server_addr)
        if body.filter_server_list:
            self.filter_servers[broker_addr] = list(body.filter_server_list)
        else:
            self.filter_servers.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = broker.addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.live.get(master_addr)
                if master_live is not None:
                    return RegisterResult(master_live.ha_server_addr, master_addr)
        return RegisterResult()

    def _upsert_topic_configs(self, broker_name: str, body: RegisterBrokerBody) -> None:
        """A master's registered topics as queue data: each topic's QueueData replaced when it differs, with
        the fields compared before a QueueData is made: making one per topic to compare was most of a
        registration's time on the name server's loop (10,000 topics: ~25 ms, now a few).  Topics with the
        same queue data share one (frozen) QueueData."""
        topic_queues = self.topic_queues
        made: dict[tuple[int, int, int, int], QueueData] = {}
        for config in body.topic_configs.values():
            topic = config.topic_name
            # a (4.9.3) broker may register any count: routed at most MAX_QUEUE_NUMS, so no client (ours or
            # Java's, which makes one MessageQueue per queue) is handed 2^31 queues to allocate
            read = min(config.read_queue_nums, MAX_QUEUE_NUMS)
            write = min(config.write_queue_nums, MAX_QUEUE_NUMS)
            queues = topic_queues.get(topic)
            if queues is None:
                queues = topic_queues[topic] = {}
                self.topic_set_changes += 1
            else:
                old = queues.get(broker_name)
                if old is not None and old.read_queue_nums == read \
                        and old.write_queue_nums == write and old.perm == config.perm \
                        and old.topic_sys_flag == config.topic_sys_flag and old.broker_name == broker_name:
                    continue
            key = (read, write, config.perm, config.topic_sys_flag)
            data = made.get(key)
            if data is None:
                data = made[key] = QueueData(broker_name, *key)
            queues[broker_name] = data

    def takes_topic_configs(self, broker_name: str, broker_addr: str, broker_id: int,
                            data_version: DataVersion) -> bool:
        """Whether :meth:`register_broker` reads this registration's topic configs (the one rule, asked
        before the registration changes the table): a master's, when it registers first (no address under
        its id yet) or its data version changed (4.9.3's registerFirst || isBrokerTopicConfigChanged).
        Otherwise a caller may register a body without topics (RegisterBrokerBody.decode_without_topics)
        and the table ends the same."""
        if broker_id != MASTER_ID:
            return False
        broker = self.brokers.get(broker_name)
        return broker is None or broker.addrs.get(broker_id) is None \
            or self.data_version_changed(broker_addr, data_version)

    def data_version_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        live = self.live.get(broker_addr)
        return live is None or live.data_version != data_version

    def touch(self, broker_addr: str, now_ms: int) -> None:
        live = self.live.get(broker_addr)
        if live is not None:
            live.last_update_ms = now_ms

    def unregister_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        if self.live.pop(broker_addr, None) is not None:  # (a broker stopping cleanly)
            log.info("broker unregistered: %s (cluster %s, %s, id %d)", broker_addr, cluster, broker_name,
                     broker_id)
        self.filter_servers.pop(broker_addr, None)
        broker = self.brokers.get(broker_name)
        if broker is not None:
            if broker.addrs.get(broker_id) == broker_addr:
                del broker.addrs[broker_id]
            if not broker.addrs:
                self._remove_broker_name(broker_name, cluster)

    def _remove_broker_name(self, broker_name: str, cluster: str | None = None) -> None:
        broker = self.brokers.pop(broker_name, None)
        names = [cluster] if cluster is not None else list(self.clusters)
        if broker is not None and broker.cluster not in names:
            names.append(broker.cluster)
        for c in names:
            members = self.clusters.get(c)
            if members is not None:
                members.discard(broker_name)
                if not members:
                    del self.clusters[c]
        for topic in list(self.topic_queues):
            queues = self.topic_queues[topic]
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queues[topic]
                self.topic_set_changes += 1

    def _remove_addr(self, broker_addr: str) -> None:
        self.live.pop(broker_addr, None)
        self.filter_servers.pop(broker_addr, None)
        for name, broker in list(self.brokers.items()):
            for broker_id in [i for i, a in broker.addrs.items() if a == broker_addr]:
                del broker.addrs[broker_id]
            if not broker.addrs:
                self._remove_broker_name(name)

    def expire(self, now_ms: int) -> list[str]:
        """Drop brokers not heard from for ``broker_expiry_ms``; returns their addresses."""
        return list(self.expire_connections(now_ms))

    def expire_connections(self, now_ms: int) -> dict[str, object | None]:
        """:meth:`expire`, answering each dropped address with the connection it registered over (4.9.3's
        scanNotActiveBroker closes that channel; the caller does)."""
        gone = {addr: live.connection for addr, live in self.live.items()
                if live.last_update_ms + self.broker_expiry_ms < now_ms}
        for addr in gone:
            self._remove_addr(addr)
        return gone

    def connection_closed(self, connection: object) -> list[str]:
        """Drop the brokers that registered over *connection*; returns their addresses."""
        gone = [addr for addr, live in self.live.items() if live.connection is connection]
        for addr in gone:
            self._remove_addr(addr)
        return gone

    # --- queries ------------------------------------------------------------------------------------

    def route(self, topic: str) -> TopicRouteData | None:
        """The topic's route, or None when it has no queue data or none of its brokers is known."""
        queues = self.topic_queues.get(topic)
        if not queues:
            return None
        broker_datas = []
        for name in sorted(queues):
            broker = self.brokers.get(name)
            if broker is not None:
                broker_datas.append(broker.frozen())
        if not broker_datas:
            return None
        filters = {}
        for bd in broker_datas:
            for addr in bd.broker_addrs.values():
                servers = self.filter_servers.get(addr)
                if servers:
                    filters[addr] = list(servers)
        return TopicRouteData(tuple(queues[n] for n in sorted(queues)), tuple(broker_datas), None, filters)

    def topics(self) -> list[str]:
        return sorted(self.topic_queues)

    def topics_of_cluster(self, cluster: str) -> list[str]:
        names = self.clusters.get(cluster, set())
        return sorted(t for t, queues in self.topic_queues.items() if names.intersection(queues))

    def unit_topics(self, *, unit: bool | None = None, unit_sub: bool | None = None) -> list[str]:
        """Topics whose sys flag (as their first registered broker's queue data says) has the unit bit set
        (*unit* True) or clear (False) and the unit-sub bit set or clear (*unit_sub*); None: either.  What
        4.9.3's GET_UNIT_TOPIC_LIST (unit), GET_HAS_UNIT_SUB_TOPIC_LIST (unit_sub) and
        GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (unit_sub and not unit) answer."""
        out = []
        for topic, queues in self.topic_queues.items():
            first = next(iter(queues.values()), None)
            if first is None:
                continue
            flag = first.topic_sys_flag
            if (unit is None or bool(flag & TOPIC_SYS_FLAG_UNIT) == unit) and \
                    (unit_sub is None or bool(flag & TOPIC_SYS_FLAG_UNIT_SUB) == unit_sub):
                out.append(topic)
        return sorted(out)

    def system_topics(self) -> list[str]:
        """Cluster names and broker names (each broker creates a topic of each)."""
        result = set(self.clusters)
        for names in self.clusters.values():
            result.update(names)
        return sorted(result)

    def any_broker_addr(self) -> str | None:
        """One registered broker address (the first brokerName's lowest id), or None.  4.9.3's
        GET_SYSTEM_TOPIC_LIST_FROM_NS answers one as ``brokerAddr``: the Java admin asks that broker for its
        own system topics (GET_SYSTEM_TOPIC_LIST_FROM_BROKER) and adds them, and skips that without it."""
        for name in sorted(self.brokers):
            addrs = self.brokers[name].addrs
            if addrs:
                return addrs[min(addrs)]
        return None

    def cluster_info(self) -> dict[str, Any]:
        return {"brokerAddrTable": {n: b.frozen() for n, b in sorted(self.brokers.items())},
                "clusterAddrTable": {c: sorted(names) for c, names in sorted(self.clusters.items())}}

    def cluster_info_body(self) -> bytes:
        """ClusterInfo JSON with fastjson's bare integer brokerAddrs keys."""
        info = self.cluster_info()
        brokers = ",".join(json.dumps(name, ensure_ascii=False) + ":" + encode_broker_data(bd)
                           for name, bd in info["brokerAddrTable"].items())
        clusters = json.dumps(info["clusterAddrTable"], separators=(",", ":"))
        return ('{"brokerAddrTable":{' + brokers + '},"clusterAddrTable":' + clusters + "}").encode("utf-8")

    # --- admin ----------------------------------------------------------------------------------------

    def wipe_write_perm(self, broker_name: str) -> int:
        count = 0
        for queues in self.topic_queues.values():
            data = queues.get(broker_name)
            if data is not None:
                queues[broker_name] = QueueData(data.broker_name, data.read_queue_nums, data.write_queue_nums,
                                                data.perm & ~Perm.WRITE, data.topic_sys_flag)
                count += 1
        return count

    def add_write_perm(self, broker_name: str) -> int:
        count = 0
        for queues in self.topic_queues.values():
            data = queues.get(broker_name)
            if data is not None:
                queues[broker_name] = QueueData(data.broker_name, data.read_queue_nums, data.write_queue_nums,
                                                Perm.READ | Perm.WRITE, data.topic_sys_flag)
                count += 1
        return count

    def delete_topic(self, topic: str) -> None:
        if self.topic_queues.pop(topic, None) is not None:
            self.topic_set_changes += 1
