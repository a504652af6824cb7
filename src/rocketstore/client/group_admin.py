"""AdminClient's subscription group and client connection calls (mqadmin deleteSubGroup, getConsumerConfig,
consumerConnection, producerConnection): DELETE_SUBSCRIPTIONGROUP (207), GET_ALL_SUBSCRIPTIONGROUP_CONFIG
(201), GET_CONSUMER_CONNECTION_LIST (203) and GET_PRODUCER_CONNECTION_LIST (204).

Mixed into AdminClient; built on the TopicAdmin mixin, whose ``delete_topic`` takes a deleted group's retry
and DLQ topics.  Imports remoting only.  Loop-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketstore.client.admin_types import (
    ConsumerConnection,
    ConsumerConnectionInfo,
    GroupConfigInfo,
    answer_shape,
    check_name,
)
from rocketstore.client.errors import ClientError, NoRouteError
from rocketstore.client.topic_admin import TopicAdmin
from rocketstore.errors import RemotingError
from rocketstore.message.system_topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.headers import (
    GetConsumerConnectionListRequestHeader,
    GetProducerConnectionListRequestHeader,
)

__all__ = ["GroupAdmin", "GroupDeletion", "ProducerConnectionInfo"]



@dataclass(frozen=True, slots=True)
class GroupDeletion:
    """Where a subscription group was deleted, and which of its retry / DLQ topics went with it."""

    group: str
    broker_addrs: list[str]
    removed_offsets: bool
    deleted_topics: list[str]


@dataclass(frozen=True, slots=True)
class ProducerConnectionInfo:
    """The clients of a producer group one broker knows (GET_PRODUCER_CONNECTION_LIST)."""

    broker_addr: str
    connections: list[ConsumerConnection]


def _connections(obj: dict[Any, Any]) -> list[ConsumerConnection]:
    with answer_shape("GET_CONSUMER_CONNECTION_LIST", "the broker"):
        clients = [ConsumerConnection(str(c.get("clientId", "")), str(c.get("clientAddr", "")),
                                      str(c.get("language", "")), int(c.get("version", 0)))
                   for c in obj.get("connectionSet") or [] if isinstance(c, dict)]
    return sorted(clients, key=lambda c: c.client_id)


class GroupAdmin(TopicAdmin):
    async def delete_subscription_group(self, group: str, *, broker_addr: str | None = None,
                                        cluster: str | None = None, remove_offsets: bool = False) -> GroupDeletion:
        """mqadmin deleteSubGroup: DELETE_SUBSCRIPTIONGROUP on one broker, else on every master of *cluster*
        (of every cluster when None), with removeOffset = *remove_offsets* (the brokers then forget the
        group's committed offsets too).  Without *broker_addr* the group's %RETRY% and %DLQ% topics are
        deleted as well where the name servers know them, as mqadmin does for ``-c``.

        ClientError when none of the target brokers has the group and *remove_offsets* is False (a likely
        typo; 4.9.3 answers SUCCESS for any name).  With *remove_offsets* the request goes out anyway: a
        group may have offsets and no config (clone-offset makes such a group)."""
        check_name("group", group)
        targets = [broker_addr] if broker_addr is not None else await self.master_addrs(cluster)
        if not remove_offsets and not any([group in await self._group_table(addr) for addr in targets]):
            raise ClientError(f"no broker of {', '.join(targets)} has the subscription group {group!r}")
        ext = {"groupName": group, "removeOffset": "true" if remove_offsets else "false"}
        for addr in targets:
            await self._call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext)
        deleted: list[str] = []
        if broker_addr is None:
            for topic in (RETRY_GROUP_TOPIC_PREFIX + group, DLQ_GROUP_TOPIC_PREFIX + group):
                try:
                    await self.delete_topic(topic, cluster=cluster)
                except NoRouteError:
                    continue  # never created (no consumer failed a message, nothing dead-lettered)
                deleted.append(topic)
        return GroupDeletion(group, targets, remove_offsets, deleted)

    async def subscription_group_configs(self, group: str) -> list[GroupConfigInfo]:
        """mqadmin getConsumerConfig: the group's config on each broker that has it (asking each broker's
        master, else a slave), sorted by cluster and broker.  ClientError when no broker has it."""
        check_name("group", group)
        info = await self.cluster_info()
        cluster_of = {name: c for c, names in info.clusters.items() for name in names}
        found = []
        for name, data in sorted(info.brokers.items()):
            addr = data.any_addr()
            if addr is None:
                continue
            config = (await self._group_table(addr)).get(group)
            if isinstance(config, dict):
                found.append(GroupConfigInfo(cluster_of.get(name, ""), name, addr, dict(sorted(config.items()))))
        if not found:
            raise ClientError(f"no broker has the subscription group {group!r}")
        return sorted(found, key=lambda g: (g.cluster_name, g.broker_name))

    async def _group_table(self, addr: str) -> dict[str, Any]:
        table = self._json(await self._call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).get(
            "subscriptionGroupTable") or {}
        return {str(k): v for k, v in table.items()} if isinstance(table, dict) else {}

    async def consumer_connection_info(self, group: str) -> ConsumerConnectionInfo:
        """mqadmin consumerConnection: the group's clients, subscriptions and settings from the first master
        that has it online: the masters of the group's retry topic first (where a clustering group's
        clients heartbeat), then every master.  ClientError when no broker has it online."""
        check_name("group", group)
        masters: list[str] = []
        try:
            masters.extend((await self.topic_masters(RETRY_GROUP_TOPIC_PREFIX + group)).values())
        except (ClientError, RemotingError):
            pass  # no retry topic (a BROADCASTING group, or never consumed): ask every master
        masters.extend(a for a in (await self.cluster_info()).masters().values() if a not in masters)
        for addr in masters:
            info = await self.consumer_connection_on(addr, group)
            if info is not None:
                return info
        raise ClientError(f"the consumer group {group!r} is not online on any broker")

    async def consumer_connection_on(self, broker_addr: str, group: str) -> ConsumerConnectionInfo | None:
        """GET_CONSUMER_CONNECTION_LIST of one broker: the group's clients it sees, None when it sees none
        (CONSUMER_NOT_ONLINE)."""
        ext = GetConsumerConnectionListRequestHeader(consumer_group=group).to_ext_fields()
        response = await self._call(broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, ext, b"",
                                    ResponseCode.CONSUMER_NOT_ONLINE)
        if response.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        obj = self._json(response)
        with answer_shape("GET_CONSUMER_CONNECTION_LIST", broker_addr):
            table = obj.get("subscriptionTable") or {}
            subscriptions = {str(t): dict(s) for t, s in sorted(table.items()) if isinstance(s, dict)}
        return ConsumerConnectionInfo(broker_addr, _connections(obj), subscriptions, str(obj.get("consumeType", "")),
                                      str(obj.get("messageModel", "")), str(obj.get("consumeFromWhere", "")))

    async def producer_connection_info(self, group: str, topic: str) -> ProducerConnectionInfo:
        """mqadmin producerConnection: the clients of producer *group* as the first master of *topic*'s route
        that knows it sees them (a producer heartbeats to every master it sends to).  ClientError when
        none does."""
        check_name("group", group)
        ext = GetProducerConnectionListRequestHeader(producer_group=group).to_ext_fields()
        for addr in (await self.topic_masters(topic)).values():
            # a broker that does not know the group answers SYSTEM_ERROR "the producer group[...] not exist"
            response = await self._call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, ext, b"",
                                        ResponseCode.SYSTEM_ERROR)
            if response.code == ResponseCode.SUCCESS:
                connections = _connections(self._json(response))
                if connections:
                    return ProducerConnectionInfo(addr, connections)
        raise ClientError(f"the producer group {group!r} is not online on any master of topic {topic!r}")
