"""AdminClient's topic calls beyond create / list / status (mqadmin deleteTopic, topicClusterList,
updateTopicPerm, allocateMQ, topicList -c): DELETE_TOPIC_IN_BROKER (215) on every broker of the clusters holding the topic,
then DELETE_TOPIC_IN_NAMESRV (216) on every name server; UPDATE_AND_CREATE_TOPIC (17) with a new perm; and
the queue assignment the average strategy would give a list of client ids.  The route itself is
:meth:`AdminClient.route` (GET_ROUTEINFO_BY_TOPIC, mqadmin topicRoute).

Mixed into AdminClient, whose plumbing it uses.  Imports remoting only.  Loop-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketstore.client.admin_types import AdminCalls, ClusterInfo, check_name, route_masters
from rocketstore.client.allocate import allocate_averagely, java_string_key
from rocketstore.client.errors import ClientError
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.errors import RocketStoreError
from rocketstore.message.system_topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.bodies import Perm
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.headers import CreateTopicRequestHeader, DeleteTopicRequestHeader

__all__ = ["PERMS", "PermChange", "TopicAdmin", "TopicConsumers", "TopicDeletion"]

#: the perms updateTopicPerm accepts: write only, read only, both
PERMS = (Perm.WRITE, Perm.READ, Perm.READ | Perm.WRITE)


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """Where a topic was deleted: the clusters, their brokers (masters and slaves), the name servers."""

    topic: str
    clusters: list[str]
    broker_addrs: list[str]
    namesrv_addrs: list[str]


@dataclass(frozen=True, slots=True)
class PermChange:
    """One master's topic perm before and after updateTopicPerm (*changed* False: it already had it)."""

    broker_name: str
    broker_addr: str
    old_perm: int
    new_perm: int

    @property
    def changed(self) -> bool:
        return self.old_perm != self.new_perm


@dataclass(frozen=True, slots=True)
class TopicConsumers:
    """One topic of mqadmin topicList -c: the cluster of its route's first broker and the groups consuming
    it ("" and none where they could not be read, as mqadmin prints them)."""

    topic: str
    cluster: str
    groups: list[str]


def _cluster_addrs(info: ClusterInfo, clusters: list[str]) -> list[str]:
    """Every address (masters, then slaves by id) of every broker of *clusters*, as mqadmin's
    fetchMasterAndSlaveAddrByClusterName finds them."""
    addrs: list[str] = []
    for cluster in clusters:
        for name in sorted(info.clusters.get(cluster, [])):
            data = info.brokers.get(name)
            if data is not None:
                addrs.extend(a for _, a in sorted(data.broker_addrs.items()) if a not in addrs)
    return addrs


class TopicAdmin(AdminCalls):
    if TYPE_CHECKING:
        async def topic_list(self) -> list[str]: ...

        async def consumed_by(self, topic: str, addrs: list[str]) -> list[str]: ...

    async def topics_with_consumers(self) -> list[TopicConsumers]:
        """mqadmin topicList -c: every topic the name servers know but %RETRY% / %DLQ% ones, with its cluster
        and the groups consuming it (QUERY_TOPIC_CONSUME_BY_WHO: online subscribers and offset holders)."""
        info = await self.cluster_info()
        rows: list[TopicConsumers] = []
        for topic in await self.topic_list():
            if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
                continue
            cluster, groups = "", []
            try:
                route = await self.route(topic)
                if route.broker_datas:
                    first = route.broker_datas[0].broker_name
                    cluster = next((c for c, names in sorted(info.clusters.items()) if first in names), "")
                groups = await self.consumed_by(topic, [a for bd in route.broker_datas if (a := bd.any_addr())])
            except (RocketStoreError, OSError, TimeoutError):
                pass  # mqadmin prints the topic with what it could not read left empty
            rows.append(TopicConsumers(topic, cluster, groups))
        return rows

    async def topic_clusters(self, topic: str) -> list[str]:
        """The clusters holding *topic*'s brokers (NoRouteError for an unknown topic).  mqadmin
        topicClusterList looks at the route's first broker only; this looks at every one."""
        route = await self.route(topic)
        names = {qd.broker_name for qd in route.queue_datas} | {bd.broker_name for bd in route.broker_datas}
        info = await self.cluster_info()
        return sorted(c for c, members in info.clusters.items() if names & set(members))

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> TopicDeletion:
        """mqadmin deleteTopic: DELETE_TOPIC_IN_BROKER on every master and slave of *cluster* (default: of
        every cluster the topic's route reaches; NoRouteError when the name servers do not know it), then
        DELETE_TOPIC_IN_NAMESRV on every name server.  A broker that refuses (a system topic) raises its
        error before any name server is asked."""
        check_name("topic", topic)
        info = await self.cluster_info()
        if cluster is not None:
            info.require(cluster)
            clusters = [cluster]
        else:
            clusters = await self.topic_clusters(topic)
        addrs = _cluster_addrs(info, clusters)
        if not addrs:
            raise ClientError(f"no broker of cluster(s) {', '.join(clusters) or '-'} is registered")
        ext = DeleteTopicRequestHeader(topic=topic).to_ext_fields()
        for addr in addrs:
            await self._call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, ext)
        namesrvs = list(await self.namesrvs())  # (an address server's list, read if it was not yet)
        for addr in namesrvs:
            await self._call(addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, ext)
        return TopicDeletion(topic, clusters, addrs, namesrvs)

    async def update_topic_perm(self, topic: str, perm: int, *, broker_addr: str | None = None,
                                cluster: str | None = None) -> list[PermChange]:
        """mqadmin updateTopicPerm: each master of the topic's route (only *broker_addr*, which must be one
        of them, or only those of *cluster*) gets the topic again with *perm* and its own queue counts and
        sys flag (UPDATE_AND_CREATE_TOPIC); a master that already has *perm* is left alone.  mqadmin takes
        the counts of the route's first broker for all; an ordered topic (the route carries its order
        config) stays ordered."""
        if perm not in PERMS:
            raise ClientError(f"perm must be 2 (write), 4 (read) or 6 (read and write), not {perm}")
        route = await self.route(topic)
        masters = route_masters(route)
        if broker_addr is not None:
            masters = {n: v for n, v in masters.items() if v[0] == broker_addr}
            if not masters:
                raise ClientError(f"{broker_addr} is not the master of a broker holding topic {topic!r}")
        if cluster is not None:
            info = await self.cluster_info()
            info.require(cluster)
            masters = {n: v for n, v in masters.items() if n in info.clusters.get(cluster, [])}
            if not masters:
                raise ClientError(f"no master of cluster {cluster!r} holds topic {topic!r}")
        if not masters:
            raise ClientError(f"topic {topic!r} has no master broker")
        changes = []
        for name, (addr, qd) in sorted(masters.items()):
            if qd.perm != perm:
                header = CreateTopicRequestHeader(
                    topic=topic, default_topic="TBW102", read_queue_nums=qd.read_queue_nums,
                    write_queue_nums=qd.write_queue_nums, perm=perm, topic_filter_type="SINGLE_TAG",
                    topic_sys_flag=qd.topic_sys_flag, order=route.order_topic_conf is not None)
                await self._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
            changes.append(PermChange(name, addr, qd.perm, perm))
        return changes

    async def allocate_queues(self, topic: str, client_ids: list[str]) -> dict[str, list[MessageQueue]]:
        """mqadmin allocateMQ: client id -> the subscribe queues of *topic* the average strategy gives it when
        *client_ids* make up the group.  Queues and ids are sorted first, as a consumer's rebalance sorts
        them (mqadmin feeds the strategy a hash set's order, so its answer can differ from what consumers
        really get)."""
        ids = sorted({c.strip() for c in client_ids if c.strip()}, key=java_string_key)
        if not ids:
            raise ClientError("no client id to allocate queues to")
        queues = sorted(RouteCache.subscribe_queues(topic, await self.route(topic)))
        return {cid: allocate_averagely(cid, queues, ids) for cid in ids}
