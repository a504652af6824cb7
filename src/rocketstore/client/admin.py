"""An async admin client, the part of RocketMQ's MQAdminExt the ``rocketstore`` admin commands need.

    async with AdminClient("127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", read_queue_nums=4, write_queue_nums=4)
        topics = await admin.topic_list()
        stats = await admin.topic_stats("Orders")                 # per queue: min, max, last update
        progress = await admin.consume_progress("order-readers")  # per queue: broker/consumer offset, lag
        [message] = await admin.query_by_key("Orders", "order-1")
        message = await admin.view_message(offset_msg_id)

Name server requests: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), GET_BROKER_CLUSTER_INFO (106),
GET_ROUTEINFO_BY_TOPIC (105), PUT_KV_CONFIG (100).  Broker requests: UPDATE_AND_CREATE_TOPIC (17), GET_TOPIC_STATS_INFO (202),
GET_CONSUME_STATS (208), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), QUERY_MESSAGE (12) and
VIEW_MESSAGE_BY_ID (33).  Like mqadmin, each asks every broker concerned and merges the answers.
Plain ACL (one broker each, see :meth:`AdminClient.acl_brokers` for a cluster's): UPDATE_AND_CREATE_ACL_CONFIG
(50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53),
GET_BROKER_CLUSTER_ACL_CONFIG (54).  Broker statistics and configuration (one broker each, or every master):
GET_BROKER_RUNTIME_INFO (28), VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317), GET_BROKER_CONFIG
(26) and UPDATE_BROKER_CONFIG (25).  Group offsets and consume-queue clean-ups: INVOKE_BROKER_TO_GET_CONSUMER_STATUS
(223), QUERY_CONSUME_TIME_SPAN (303), QUERY_CORRECTION_OFFSET (308), CLONE_GROUP_OFFSET (314),
CLEAN_EXPIRED_CONSUMEQUEUE (306) and CLEAN_UNUSED_TOPIC (316).

The ACL calls live in client/acl_admin.py, the broker statistics and configuration calls in
client/broker_admin.py, the name servers' settings and KV table in client/namesrv_admin.py, the message
trace query in client/trace_query.py, topic deletion, perms and queue assignment in client/topic_admin.py,
group deletion, configs and client connections in client/group_admin.py, the cluster list and brokers'
write perms in client/cluster_admin.py, reads of one queue in client/message_admin.py, the exports of
metadata, configs and metrics in client/export_admin.py and statsAll in client/stats_all.py (mixins of
AdminClient), and the values they answer with in client/admin_types.py (re-exported here).

A non-success answer raises the BrokerError of its code; an unknown topic raises NoRouteError; a name that
is not a topic or group RocketMQ would accept raises InvalidNameError before anything is sent.
Imports remoting and message only.  Loop-bound.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, Self

from rocketstore.client.acl_admin import AclAdmin
from rocketstore.client.admin_types import (
    AclConfigInfo,
    AclVersionInfo,
    BrokerConsumeStats,
    BrokerStatsData,
    ClusterBrokerRow,
    ClusterInfo,
    ConsumeProgress,
    ConsumerConnection,
    ConsumerConnectionInfo,
    GroupConfigInfo,
    InvalidNameError,
    NoConsumeProgressError,
    QueueProgress,
    QueueStats,
    StatsWindow,
    answer_shape,
    check_name,
    mq_fields,
    route_masters,
)
from rocketstore.client.broker_admin import BrokerAdmin
from rocketstore.client.cluster_admin import ClusterAdmin
from rocketstore.client.consumer import decode_messages
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import FAQ_SUFFIX, ClientError, broker_error_for
from rocketstore.client.export_admin import ExportAdmin
from rocketstore.client.group_admin import GroupAdmin
from rocketstore.client.message_admin import MessageAdmin
from rocketstore.client.namesrv_admin import NamesrvAdmin
from rocketstore.client.route import RouteCache, check, namesrv_addr_or_env
from rocketstore.client.stats_all import StatsAllAdmin
from rocketstore.client.trace_query import TraceAdmin
from rocketstore.errors import InvalidMessageIdError, MessageError, RemotingError
from rocketstore.message.host import parse_host
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import BrokerData, Perm, TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    QueueKey,
    QueueTimeSpan,
    decode_consume_time_span_body,
    decode_correction_offset_body,
    decode_reset_offset_body,
)
from rocketstore.remoting.headers import (
    MAX_QUEUE_NUMS,
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryMessageRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketstore.remoting.tls import ClientTls, client_ssl_context
from rocketstore.remoting.transport import ConnectionPool

log = logging.getLogger(__name__)

__all__ = [
    "MAX_TIMESTAMP_MS",
    "AclConfigInfo",
    "AclVersionInfo",
    "AdminClient",
    "BrokerConsumeStats",
    "BrokerStatsData",
    "ClusterBrokerRow",
    "ClusterInfo",
    "ConsumeProgress",
    "ConsumerConnection",
    "ConsumerConnectionInfo",
    "GroupConfigInfo",
    "InvalidNameError",
    "NoConsumeProgressError",
    "QueueProgress",
    "QueueStats",
    "StatsWindow",
    "check_name",
]

MAX_TIMESTAMP_MS = (1 << 63) - 1
#: a broker waits up to 10 s for a consumer it calls (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY):
#: the admin waits longer, so that the broker's own CONSUME_MSG_TIMEOUT answer is what it sees
CALL_CONSUMER_TIMEOUT_S = 12.0
#: a broker waits up to 5 s for each consumer's status (all at once): the admin waits for that and more
CONSUMER_STATUS_WAIT_S = 8.0
#: a broker's queue clean-up may wait up to 10 s for dispatch to catch up with the writes
CLEAN_QUEUES_WAIT_S = 15.0
#: the name server's KV namespace of ordered topics' configs
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class AdminClient(NamesrvAdmin, BrokerAdmin, AclAdmin, TraceAdmin, GroupAdmin, ClusterAdmin, MessageAdmin, ExportAdmin,
                  StatsAllAdmin):
    def __init__(self, namesrv_addr: str | None = None, *, timeout_s: float = 5.0,
                 credentials: SessionCredentials | None = None, tls: ClientTls = None,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """*namesrv_addr*: ``host:port[;host:port]``; None: the environment variable ``NAMESRV_ADDR``, as
        4.9.3's DefaultMQAdminExt (a ClientConfig); without either, the list is read from the address server
        *namesrv_domain* / *namesrv_domain_subgroup* (else $ROCKETMQ_NAMESRV_DOMAIN /
        $ROCKETMQ_NAMESRV_DOMAIN_SUBGROUP) name, as the Producer's (and DefaultMQAdminExt's MQClientInstance):
        at ``async with`` (or the first call that needs it), then every 2 minutes.  *credentials*: ACL access
        key and secret every request (name servers' too) is signed with; *tls*: this client's own TLS switch
        (None follows the process, see :data:`rocketstore.remoting.tls.ClientTls`)."""
        self.timeout_s = timeout_s
        self.pool = ConnectionPool(connect_timeout_s=timeout_s, credentials=credentials,
                                   ssl_context=client_ssl_context(tls))
        # (ValueError "No name server address" with neither a list nor an address server)
        self.routes = RouteCache([a for a in namesrv_addr_or_env(namesrv_addr).split(";") if a], self.pool,
                                 timeout_s=timeout_s, namesrv_domain=namesrv_domain,
                                 namesrv_domain_subgroup=namesrv_domain_subgroup)

    @property
    def namesrv_addrs(self) -> list[str]:
        """The name servers asked: as given (or set), else the address server's last list (empty before
        the first read: see :meth:`namesrvs`)."""
        return self.routes.namesrv_addrs

    @namesrv_addrs.setter
    def namesrv_addrs(self, addrs: list[str]) -> None:
        self.update_namesrv_addr(addrs)

    async def namesrvs(self) -> list[str]:
        """The name servers to ask now: with an address server, its list, read first if not read yet;
        ClientError when there is none."""
        await self.routes.start_address_server()
        if not self.routes.namesrv_addrs:  # the address server gave none yet
            raise ClientError(f"No name server address, please set it.{FAQ_SUFFIX}")
        return self.routes.namesrv_addrs

    async def __aenter__(self) -> Self:
        await self.routes.start_address_server()  # (an address server's list; nothing without one)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.routes.close()
        await self.pool.close()

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``) from now on, for routes and for
        the requests made to every name server (4.9.3's setNamesrvAddr of a DefaultMQAdminExt)."""
        self.routes.update_namesrv_addrs(namesrv_addr)

    # --- plumbing ----------------------------------------------------------------------------------------

    async def _call(self, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"",
                    *ok_codes: int, timeout_s: float | None = None) -> RemotingCommand:
        response = await self.pool.request(addr, RemotingCommand.request(code, ext or {}, body),
                                           timeout_s or self.timeout_s)
        return check(response, *ok_codes)

    async def _namesrv(self, code: int) -> RemotingCommand:
        last: Exception | None = None
        for addr in await self.namesrvs():
            try:
                return await self._call(addr, code)
            except RemotingError as exc:
                last = exc
        assert last is not None
        raise last

    @staticmethod
    def _json(response: RemotingCommand) -> dict[Any, Any]:
        obj = fastjson.loads(response.body) if response.body else {}
        if not isinstance(obj, dict):
            raise ClientError(f"unexpected answer body: {response.body[:200]!r}")
        return obj

    async def route(self, topic: str) -> TopicRouteData:
        """The topic's route (NoRouteError if the name servers do not know it)."""
        return await self.routes.route(check_name("topic", topic), refresh=True)

    async def topic_masters(self, topic: str) -> dict[str, str]:
        """Broker name -> master address of every broker holding *topic*'s queues."""
        return {name: addr for name, (addr, _) in route_masters(await self.route(topic)).items()}

    # --- name server ---------------------------------------------------------------------------------------

    async def topic_list(self) -> list[str]:
        obj = self._json(await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        with answer_shape("GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "the name server"):
            topics = sorted(str(t) for t in obj.get("topicList", []))
        return topics

    async def cluster_info(self) -> ClusterInfo:
        obj = self._json(await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO))
        with answer_shape("GET_BROKER_CLUSTER_INFO", "the name server"):
            brokers = {str(n): BrokerData.from_json(b) for n, b in (obj.get("brokerAddrTable") or {}).items()}
            clusters = {str(c): sorted(str(n) for n in names)
                        for c, names in (obj.get("clusterAddrTable") or {}).items()}
        return ClusterInfo(brokers, clusters)

    # --- topics ------------------------------------------------------------------------------------------

    async def create_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None,
                           read_queue_nums: int = 8, write_queue_nums: int = 8, perm: int = Perm.READ | Perm.WRITE,
                           order: bool = False) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on one broker, on every master of *cluster*, or (neither given) on every
        master the name servers know.  Returns the addresses written to.

        An ordered topic also gets its order config on the name servers, as mqadmin updateTopic -o does:
        ``brokerName:writeQueueNums`` of each broker, joined by ``;``, under ORDER_TOPIC_CONFIG / topic
        (PUT_KV_CONFIG).  Created on one broker, that broker's entry is merged into the value the name
        servers hold (DefaultMQAdminExtImpl.createOrUpdateOrderConf with isCluster=false): its other
        brokers' entries stay."""
        check_name("topic", topic)
        if read_queue_nums < 1 or write_queue_nums < 1:
            raise ClientError("a topic needs at least one read and one write queue")
        targets = [broker_addr] if broker_addr is not None else await self.master_addrs(cluster)
        header = CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=read_queue_nums,
                                          write_queue_nums=write_queue_nums, perm=perm,
                                          topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=order)
        for addr in targets:
            await self._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
        if order and broker_addr is None:
            names = sorted((await self.cluster_info()).masters(cluster))
            await self.put_kv(ORDER_TOPIC_CONFIG, topic, ";".join(f"{name}:{write_queue_nums}" for name in names))
        elif order:
            await self._merge_order_conf(topic, broker_addr, write_queue_nums)
        return targets

    async def _merge_order_conf(self, topic: str, broker_addr: str | None, write_queue_nums: int) -> None:
        info = await self.cluster_info()
        name = next((n for n, bd in sorted(info.brokers.items()) if broker_addr in bd.broker_addrs.values()), None)
        if name is None:
            # mqadmin's CommandUtil.fetchBrokerNameByAddr fails the same way, after the topic was created
            raise ClientError(f"broker {broker_addr} is not registered with the name server: the order config "
                              f"of topic {topic!r} is not set")
        entries: dict[str, str] = {}
        for entry in (await self.get_kv(ORDER_TOPIC_CONFIG, topic) or "").split(";"):
            if entry.strip():
                entries[entry.split(":")[0]] = entry
        entries[name] = f"{name}:{write_queue_nums}"
        await self.put_kv(ORDER_TOPIC_CONFIG, topic, ";".join(entries.values()))

    async def topic_stats(self, topic: str) -> list[QueueStats]:
        """GET_TOPIC_STATS_INFO from every master of the topic, sorted by broker and queue."""
        out = []
        for addr in (await self.topic_masters(topic)).values():
            out.extend(await self.topic_stats_on(addr, topic))
        return sorted(out, key=lambda q: (q.topic, q.broker_name, q.queue_id))

    async def topic_stats_on(self, broker_addr: str, topic: str) -> list[QueueStats]:
        """GET_TOPIC_STATS_INFO of one broker: its queues of *topic*, sorted (the exporter asks each master on
        its own, so that one not answering costs its own figures only)."""
        ext = GetTopicStatsInfoRequestHeader(topic=topic).to_ext_fields()
        table = self._json(await self._call(broker_addr, RequestCode.GET_TOPIC_STATS_INFO, ext)).get("offsetTable") \
            or {}
        out = []
        with answer_shape("GET_TOPIC_STATS_INFO", broker_addr):
            for key, value in table.items():
                mq = mq_fields(key)
                out.append(QueueStats(str(mq["topic"]), str(mq["brokerName"]), int(mq["queueId"]),
                                      int(value.get("minOffset", 0)), int(value.get("maxOffset", 0)),
                                      int(value.get("lastUpdateTimestamp", 0))))
        return sorted(out, key=lambda q: (q.topic, q.broker_name, q.queue_id))

    # --- consumer groups -----------------------------------------------------------------------------------

    async def consume_progress(self, group: str, topic: str | None = None) -> ConsumeProgress:
        """GET_CONSUME_STATS from every master that may hold the group's offsets (those of *topic*, or all),
        rows sorted as mqadmin sorts message queues (topic, broker, queue: retry topic rows included)."""
        check_name("group", group)
        if topic is not None:
            masters = await self.topic_masters(topic)
        else:
            masters = (await self.cluster_info()).masters()
        ext = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic or "").to_ext_fields()
        rows: list[QueueProgress] = []
        tps = 0.0
        for addr in masters.values():
            obj = self._json(await self._call(addr, RequestCode.GET_CONSUME_STATS, ext))
            with answer_shape("GET_CONSUME_STATS", addr):
                tps += float(obj.get("consumeTps") or 0.0)
                for key, value in (obj.get("offsetTable") or {}).items():
                    mq = mq_fields(key)
                    rows.append(QueueProgress(str(mq["topic"]), str(mq["brokerName"]), int(mq["queueId"]),
                                              int(value.get("brokerOffset", 0)),
                                              int(value.get("consumerOffset", 0)),
                                              int(value.get("lastTimestamp", 0))))
        if not rows:
            raise NoConsumeProgressError(f"no consume progress for group {group!r}"
                              + (f" on topic {topic!r}" if topic else "")
                              + ": it has not committed any offset (or no broker knows it)")
        rows.sort(key=lambda q: (q.topic, q.broker_name, q.queue_id))
        return ConsumeProgress(group, rows, tps)

    async def query_consume_queue(self, broker_addr: str, topic: str, queue_id: int, index: int, count: int = 10,
                                  group: str | None = None) -> dict[str, Any]:
        """mqadmin queryCq: raw consume queue entries of one queue on one broker (QUERY_CONSUME_QUEUE): the
        answer's minQueueIndex, maxQueueIndex, queueData (physicOffset, physicSize, tagsCode) and, with a
        *group*, its subscription; an index outside the queue answers without entries."""
        ext = QueryConsumeQueueRequestHeader(topic=topic, queue_id=queue_id, index=index, count=count,
                                             consumer_group=group).to_ext_fields()
        response = await self._call(broker_addr, RequestCode.QUERY_CONSUME_QUEUE, ext)
        return self._json(response) if response.body else {"queueData": [], "remark": response.remark}

    async def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
                                   ) -> dict[QueueKey, int]:
        """mqadmin resetOffsetByTime: *group*'s offsets of *topic* moved to the message stored nearest
        *timestamp_ms* (the broker's search by time; -1: each queue's end; only backwards unless *force*).
        Each master does it with its connected consumers (INVOKE_BROKER_TO_RESET_OFFSET: they stop those
        queues and go on from the new offsets); where none is connected, the offsets are committed from here
        (the 'old' way: the offset by time or the end, then UPDATE_CONSUMER_OFFSET per queue).  Returns the
        new offsets, (topic, broker name, queue id) -> offset."""
        check_name("group", group)
        check_name("topic", topic)
        route = await self.route(topic)
        ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp_ms=timestamp_ms,
                                       is_force=force).to_ext_fields()
        out: dict[QueueKey, int] = {}
        for broker_name, addr in (await self.topic_masters(topic)).items():
            response = await self._call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext, b"",
                                        ResponseCode.CONSUMER_NOT_ONLINE)
            if response.code == ResponseCode.SUCCESS:
                out.update(decode_reset_offset_body(response.body))
                continue
            qd = next((q for q in route.queue_datas if q.broker_name == broker_name), None)
            # (at most MAX_QUEUE_NUMS requests: a 4.9.3 name server routes any count)
            for queue_id in range(min(qd.write_queue_nums, MAX_QUEUE_NUMS) if qd is not None else 0):
                out[(topic, broker_name, queue_id)] = await self._reset_one(addr, group, topic, queue_id,
                                                                            timestamp_ms, force)
        return dict(sorted(out.items()))

    async def _reset_one(self, addr: str, group: str, topic: str, queue_id: int, timestamp_ms: int,
                         force: bool) -> int:
        if timestamp_ms == -1:
            ext = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id).to_ext_fields()
            target = GetMaxOffsetResponseHeader.from_ext_fields(
                (await self._call(addr, RequestCode.GET_MAX_OFFSET, ext)).ext_fields).offset
        else:
            ext = SearchOffsetRequestHeader(topic=topic, queue_id=queue_id, timestamp_ms=timestamp_ms).to_ext_fields()
            target = SearchOffsetResponseHeader.from_ext_fields(
                (await self._call(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext)).ext_fields).offset
        ext = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id).to_ext_fields()
        answer = await self._call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext, b"", ResponseCode.QUERY_NOT_FOUND)
        committed = (QueryConsumerOffsetResponseHeader.from_ext_fields(answer.ext_fields).offset
                     if answer.code == ResponseCode.SUCCESS else -1)
        offset = max(0, target) if force or committed < 0 or target < committed else committed
        ext = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id,
                                                commit_offset=offset).to_ext_fields()
        await self._call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        return offset

    async def consumer_status(self, group: str, topic: str, client_id: str | None = None
                              ) -> dict[str, dict[QueueKey, int]]:
        """mqadmin getConsumerStatus: the offsets of *topic* each connected consumer of *group* (or only
        *client_id*) holds in memory, client id -> (topic, broker name, queue id) -> offset, collected by the
        topic's first master (INVOKE_BROKER_TO_GET_CONSUMER_STATUS); a consumer that does not answer (the
        C++ clients) is missing from it."""
        check_name("group", group)
        addr = next(iter((await self.topic_masters(topic)).values()), None)
        if addr is None:
            raise ClientError(f"topic {topic!r} has no master broker")
        ext = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_id).to_ext_fields()
        response = await self._call(addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, ext,
                                    timeout_s=max(self.timeout_s, CONSUMER_STATUS_WAIT_S))
        return GetConsumerStatusBody.decode(response.body).consumer_table if response.body else {}

    async def consume_time_span(self, group: str, topic: str) -> list[QueueTimeSpan]:
        """Per queue of *topic* on every master (QUERY_CONSUME_TIME_SPAN): the store times of its oldest and
        newest message and of the last one *group* consumed, and how long the next one has waited."""
        check_name("group", group)
        ext = QueryConsumeTimeSpanRequestHeader(topic=topic, group=group).to_ext_fields()
        spans: list[QueueTimeSpan] = []
        for addr in (await self.topic_masters(topic)).values():
            spans.extend(decode_consume_time_span_body(
                (await self._call(addr, RequestCode.QUERY_CONSUME_TIME_SPAN, ext)).body))
        return sorted(spans, key=lambda s: s.queue)

    async def correction_offsets(self, broker_addr: str, topic: str, compare_group: str,
                                 filter_groups: list[str] | None = None) -> dict[int, int]:
        """QUERY_CORRECTION_OFFSET on one broker: per queue id of *topic*, the smallest offset of the other
        groups (but *filter_groups*), or Long.MAX_VALUE where that is ahead of *compare_group*'s."""
        check_name("topic", topic)
        header = QueryCorrectionOffsetHeader(topic=topic, compare_group=compare_group,
                                             filter_groups=",".join(filter_groups) if filter_groups else None)
        response = await self._call(broker_addr, RequestCode.QUERY_CORRECTION_OFFSET, header.to_ext_fields())
        return decode_correction_offset_body(response.body) if response.body else {}

    async def clone_group_offset(self, src_group: str, dest_group: str, topic: str | None = None, *,
                                 offline: bool = False) -> list[str]:
        """Copy *src_group*'s committed offsets of *topic* (every topic it has offsets of when None) to
        *dest_group* (CLONE_GROUP_OFFSET) on the masters of the source group's retry topic, as
        DefaultMQAdminExt.cloneGroupOffset does, or on every master when it has none (a broadcasting group).
        Unless *offline*, a broker skips topics the source group, while online, does not subscribe to.
        Returns the broker addresses asked."""
        check_name("group", src_group)
        check_name("group", dest_group)
        if topic is not None:
            check_name("topic", topic)
        try:
            targets = list((await self.topic_masters(f"%RETRY%{src_group}")).values())
        except (ClientError, RemotingError):
            targets = []
        if not targets:
            targets = list((await self.cluster_info()).masters().values())
        header = CloneGroupOffsetRequestHeader(src_group=src_group, dest_group=dest_group, topic=topic,
                                               offline=offline)
        for addr in targets:
            await self._call(addr, RequestCode.CLONE_GROUP_OFFSET, header.to_ext_fields(),
                             timeout_s=self.timeout_s * 3)
        return targets

    async def clean_expired_consume_queues(self, broker_addr: str) -> list[tuple[str, int]]:
        """mqadmin cleanExpiredCQ -b: the broker drops the consume queues whose messages retention deleted
        (CLEAN_EXPIRED_CONSUMEQUEUE); the (topic, queue id) it dropped (a Java broker does not say: [])."""
        return self._dropped(await self._call(broker_addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
                                              timeout_s=max(self.timeout_s, CLEAN_QUEUES_WAIT_S)))

    async def clean_unused_topics(self, broker_addr: str) -> list[tuple[str, int]]:
        """mqadmin cleanUnusedTopic -b: the broker drops the consume queues of topics its topic table lacks
        (CLEAN_UNUSED_TOPIC); the (topic, queue id) it dropped (a Java broker does not say: [])."""
        return self._dropped(await self._call(broker_addr, RequestCode.CLEAN_UNUSED_TOPIC,
                                              timeout_s=max(self.timeout_s, CLEAN_QUEUES_WAIT_S)))

    def _dropped(self, response: RemotingCommand) -> list[tuple[str, int]]:
        entries = self._json(response).get("dropped") or [] if response.body else []
        return [(str(e.get("topic", "")), int(e.get("queueId", 0))) for e in entries if isinstance(e, dict)]

    async def consumer_connections(self, group: str) -> tuple[str, list[ConsumerConnection]]:
        """(broker address, the group's clients) from the first master that has the group online (see
        :meth:`GroupAdmin.consumer_connection_info`).  ClientError when no broker has it online."""
        info = await self.consumer_connection_info(group)
        return info.broker_addr, info.connections

    async def consumer_running_info(self, group: str, client_id: str, *, jstack: bool = False,
                                    broker_addr: str | None = None) -> ConsumerRunningInfo:
        """What consumer *client_id* of *group* reports about itself, asked through the broker it is connected
        to (*broker_addr*, else the one :meth:`consumer_connections` finds)."""
        if broker_addr is None:
            broker_addr, _ = await self.consumer_connections(group)
        ext = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id,
                                                  jstack_enable=jstack).to_ext_fields()
        response = await self._call(broker_addr, RequestCode.GET_CONSUMER_RUNNING_INFO, ext,
                                    timeout_s=max(self.timeout_s, CALL_CONSUMER_TIMEOUT_S))
        return ConsumerRunningInfo.decode(response.body)

    async def queue_clients(self, group: str) -> dict[tuple[str, str, int], str]:
        """mqadmin consumerProgress -s: which client holds each queue, (topic, broker name, queue id) -> the
        client id's IP (its part before ``@``), from each connected client's running info.  Empty when the
        group has no client online; a client that does not answer is left out (as mqadmin, which shows
        those queues with no IP)."""
        try:
            broker_addr, connections = await self.consumer_connections(group)
        except (ClientError, RemotingError):
            return {}
        held: dict[tuple[str, str, int], str] = {}
        for connection in connections:
            try:
                info = await self.consumer_running_info(group, connection.client_id, broker_addr=broker_addr)
            except (ClientError, RemotingError):
                continue
            held.update(dict.fromkeys(info.mq_table, connection.client_id.split("@")[0]))
        return held

    async def consume_message_directly(self, group: str, client_id: str, msg_id: str,
                                       topic: str | None = None) -> ConsumeMessageDirectlyResult:
        """Have consumer *client_id* of *group* handle one stored message now, outside its queues (mqadmin
        consumeMessage): *msg_id* is an offset message id, or a UNIQ_KEY with its *topic*."""
        check_name("group", group)
        if await self.is_broker_message_id(msg_id):
            host, _ = decode_offset_message_id(msg_id)
            broker_addr, offset_id = str(host), msg_id
        else:
            if topic is None:
                raise ClientError(f"{msg_id!r} is not an offset message id of a known broker; give its topic to "
                                  "look it up as a UNIQ_KEY")
            found = await self.query_by_uniq_key(topic, msg_id)
            if not found:
                raise ClientError(f"no message of topic {topic!r} has the UNIQ_KEY {msg_id!r}")
            broker_addr, offset_id = str(found[0].store_host), found[0].msg_id
        ext = ConsumeMessageDirectlyResultRequestHeader(consumer_group=group, client_id=client_id,
                                                        msg_id=offset_id).to_ext_fields()
        response = await self._call(broker_addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext,
                                    timeout_s=max(self.timeout_s, CALL_CONSUMER_TIMEOUT_S))
        return ConsumeMessageDirectlyResult.decode(response.body)

    async def update_subscription_group(self, group: str, *, broker_addr: str | None = None,
                                        cluster: str | None = None, retry_max_times: int = 16,
                                        retry_queue_nums: int = 1, consume_enable: bool = True,
                                        consume_broadcast_enable: bool = True, consume_from_min_enable: bool = True,
                                        broker_id: int = 0, which_broker_when_consume_slowly: int = 1,
                                        notify_consumer_ids_changed_enable: bool = True) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker (mqadmin updateSubGroup -b), else on every master
        (of *cluster*).  retryMaxTimes is what a broker uses for a send-back that does not say
        maxReconsumeTimes (C++ 1.x clients); without consumeBroadcastEnable the broker refuses the pulls of
        the group's broadcasting consumers; with the broker's slaveReadEnable, its consumers are told to pull
        from *broker_id* while they keep up and from *which_broker_when_consume_slowly* while they read cold
        messages; without notifyConsumerIdsChangedEnable its members are not told when another joins."""
        check_name("group", group)
        if broker_addr is not None:
            targets = [broker_addr]
        else:
            info = await self.cluster_info()
            info.require(cluster)
            targets = list(info.masters(cluster).values())
        if not targets:
            raise ClientError("no master broker is registered with the name server")
        body = fastjson.dumps({"groupName": group, "consumeEnable": consume_enable,
                               "consumeFromMinEnable": consume_from_min_enable,
                               "consumeBroadcastEnable": consume_broadcast_enable, "retryQueueNums": retry_queue_nums,
                               "retryMaxTimes": retry_max_times, "brokerId": broker_id,
                               "whichBrokerWhenConsumeSlowly": which_broker_when_consume_slowly,
                               "notifyConsumerIdsChangedEnable": notify_consumer_ids_changed_enable})
        for addr in targets:
            await self._call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
        return targets

    # --- broker statistics and configuration ---------------------------------------------------------------

    async def master_addrs(self, cluster: str | None = None) -> list[str]:
        """The master address of every broker of *cluster* (all clusters when None) the name servers know."""
        info = await self.cluster_info()
        info.require(cluster)
        addrs = list(info.masters(cluster).values())
        if not addrs:
            raise ClientError("no master broker is registered with the name server")
        return addrs

    # --- messages ----------------------------------------------------------------------------------------

    async def view_message(self, msg_id: str) -> StoredMessage:
        """The message of an offset message id, read from the broker the id names (VIEW_MESSAGE_BY_ID)."""
        host, offset = decode_offset_message_id(msg_id)
        ext = ViewMessageRequestHeader(commit_log_offset=offset).to_ext_fields()
        response = await self._call(str(host), RequestCode.VIEW_MESSAGE_BY_ID, ext)
        messages = decode_messages(response.body)
        if not messages:
            raise ClientError(f"broker {host} returned no message for {msg_id}")
        return messages[0]

    async def resume_check_half_message(self, msg_id: str) -> None:
        """Give the transactional message an offset message id names back to its broker's half queue with
        its check count at 0 (mqadmin resumeCheckHalfMessage), e.g. one moved to TRANS_CHECK_MAX_TIME_TOPIC."""
        host, _ = decode_offset_message_id(msg_id)
        await self._call(str(host), RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})

    async def is_broker_message_id(self, msg_id: str) -> bool:
        """Whether *msg_id* decodes as an offset message id naming a broker the name servers know (an
        UNIQ_KEY has the same length, so the host decides which kind of id it is)."""
        try:
            host, _ = decode_offset_message_id(msg_id)
        except InvalidMessageIdError:
            return False
        # compared as addresses, not texts: an IPv6 id's host reads [0:0:0:0:0:0:0:1]:PORT, while the broker
        # registered [::1]:PORT (or, as a Java broker does, ::1:PORT)
        named = []
        for addr in (await self.cluster_info()).addresses():
            try:
                if parse_host(addr) == host:
                    return True
            except MessageError:  # a host name (brokerIP1=broker-a.example), not an IP
                named.append(addr)
        # a broker registered by host name stores the address it resolves to in its ids (as 4.9.3's does):
        # resolved here, off the loop, as mqadmin's connection to the id's address takes it
        loop = asyncio.get_running_loop()
        for addr in named:
            name, _, port = addr.rpartition(":")
            if not port.isdigit() or int(port) != host.port:
                continue
            try:
                infos = await loop.getaddrinfo(name.strip("[]"), int(port), type=socket.SOCK_STREAM)
            except OSError:  # (a name that no longer resolves names no broker of this id)
                continue
            for info in infos:
                try:
                    if parse_host((str(info[4][0]), int(port))) == host:
                        return True
                except MessageError:
                    continue
        return False

    async def _query(self, topic: str, key: str, max_count: int, begin_ms: int, end_ms: int,
                     unique: bool) -> list[StoredMessage]:
        header = QueryMessageRequestHeader(topic=topic, key=key, max_num=max_count, begin_timestamp_ms=begin_ms,
                                           end_timestamp_ms=end_ms, unique_key_query=unique)
        # each broker of the route, at its master or, while the master is down, at a slave (4.9.3's
        # BrokerData.selectBrokerAddr): a slave's index serves the same keys
        route = await self.route(topic)
        addrs = sorted({addr for bd in route.broker_datas if (addr := bd.any_addr()) is not None})

        async def ask(addr: str) -> list[StoredMessage]:
            # an async call in 4.9.3 (MQClientAPIImpl.queryMessage's invokeAsync): a time-out closes nothing
            response = await self.pool.request(
                addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, header.to_ext_fields()), self.timeout_s,
                close_if_timeout=False)
            if response.code == ResponseCode.QUERY_NOT_FOUND:
                return []
            if response.code != ResponseCode.SUCCESS:
                raise broker_error_for(response.code, response.remark)
            return decode_messages(response.body)

        # all at once, and a broker that cannot be reached or fails is logged and left out, the others' hits
        # kept (4.9.3's MQAdminImpl.queryMessage); only when every broker failed is that an error
        answers = await asyncio.gather(*map(ask, addrs), return_exceptions=True)
        found: list[StoredMessage] = []
        failures: list[Exception] = []
        for addr, answer in zip(addrs, answers, strict=True):
            if isinstance(answer, (RemotingError, ClientError, MessageError)):
                log.warning("query of %s by key %r at broker %s failed, left out: %s", topic, key, addr, answer)
                failures.append(answer)
            elif isinstance(answer, BaseException):
                raise answer
            else:
                found.extend(answer)
        if failures and len(failures) == len(addrs):
            raise failures[0]
        # the index matches on the key's hash only: keep the messages that really carry the key
        if unique:
            hits = [m for m in found if m.topic == topic and m.uniq_key == key]
        else:
            hits = [m for m in found if m.topic == topic and key in (m.keys or "").split(" ")]
        hits.sort(key=lambda m: (m.store_timestamp, m.commit_log_offset))
        if unique:
            return hits
        # each broker's index answered its newest max_count: the newest max_count of all are among them
        return hits[-max_count:] if max_count > 0 else []

    async def query_by_key(self, topic: str, key: str, *, max_count: int = 64, begin_ms: int = 0,
                           end_ms: int = MAX_TIMESTAMP_MS) -> list[StoredMessage]:
        """Messages of *topic* with *key* among their KEYS, stored in [begin_ms, end_ms]: the newest
        *max_count*, oldest first.  Every broker of the topic is asked; one that cannot be reached or answers
        an error is logged and left out (as 4.9.3's queryMessage), the error raised only when all failed."""
        return await self._query(topic, key, max_count, begin_ms, end_ms, False)

    async def query_by_uniq_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0,
                                end_ms: int = MAX_TIMESTAMP_MS) -> list[StoredMessage]:
        """Messages of *topic* whose UNIQ_KEY (the client message id) is *uniq_key*; brokers that fail are left
        out as in :meth:`query_by_key`."""
        return await self._query(topic, uniq_key, 32, begin_ms, end_ms, True)
