"""Admin requests: GET_BROKER_RUNTIME_INFO (28), GET_BROKER_CONFIG (26), UPDATE_AND_CREATE_TOPIC (17),
DELETE_TOPIC_IN_BROKER (215), GET_ALL_TOPIC_CONFIG (21), GET_TOPIC_STATS_INFO (202),
GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204), GET_CONSUME_STATS (208),
GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
DELETE_SUBSCRIPTIONGROUP (207), QUERY_TOPIC_CONSUME_BY_WHO (300), GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), and
the plain ACL ones: UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52),
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), GET_BROKER_CLUSTER_ACL_CONFIG (54) (the file changes: broker.acl_admin).
On a broker without aclEnable the three changes answer their *_FAILED code and the two queries SYSTEM_ERROR,
each saying ACL is off, also after aclEnable was set true at run time (4.9.3's AdminBrokerProcessor meets a
NullPointerException there: the changes answer without a remark and the queries not at all, which leaves a
client to time out).

GET_BROKER_RUNTIME_INFO answers 4.9.3's table of figures (broker.stats_admin.runtime_table, from
broker.broker_stats) and GET_BROKER_CONFIG every property under its broker.conf name with the configuration's
data version, with the 4.9.3 properties kept without effect (broker.config_keys: its netty, thread pool and
filter server figures, ...) and the start file's other keys (UPDATE_BROKER_CONFIG, which changes the
properties, is in broker.stats_admin).

ConsumeStats' consumeTps is the group's rate over the last minute (broker.stats), summed over its topics as
RocketMQ sums them.  TopicStatsTable and ConsumeStats bodies use fastjson's object-keyed maps
(``{{mq}:{...}}``), which is what RocketMQ's admin tools parse.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocketstore.broker.acl import AclConfigError
from rocketstore.broker.acl_admin import AclAdmin, PlainAccessConfig, java_split
from rocketstore.broker.group_admin import LiveTopics
from rocketstore.broker.groups import SubscriptionGroupConfig
from rocketstore.broker.stats_admin import (
    queue_offsets,
    reported_config_text,
    runtime_table,
    subscribed_elsewhere,
)
from rocketstore.broker.topics import group_problem, topic_problem
from rocketstore.errors import StoreError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    CreateAccessConfigRequestHeader,
    CreateTopicRequestHeader,
    DeleteAccessConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerAclConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
    queue_nums_problem,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["register"]

log = logging.getLogger(__name__)

#: the remark a 4.9.3 response starts with (createResponseCommand), kept by an answer that sets only its code
_UNSET_REMARK = "not set any response code"
#: Java's TopicFilterType enum constants, the only topicFilterType values UPDATE_AND_CREATE_TOPIC takes
_TOPIC_FILTER_TYPES = frozenset({"SINGLE_TAG", "MULTI_TAG"})
#: when, after answering a deletion, a topic a send created again is registered once more: past the admin's
#: DELETE_TOPIC_IN_NAMESRV, which follows the answer, and (mqadmin deletes on every broker of the cluster
#: first, one after another) may come seconds later
RECREATED_TOPIC_REGISTER_DELAYS_S = (1.0, 5.0, 20.0)


def _register_recreated(broker: Broker, topic: str) -> None:
    """Register *topic* (created again by a send during or just after its deletion) at a new data version,
    which the name servers take it from; nothing when it is gone."""
    if broker.closed or broker.topics.get(topic) is None:
        return
    before = broker.topics.data_version
    broker.topics.changed()
    broker.topic_config_changed(topic, before)


def _mq(broker: Broker, topic: str, queue_id: int) -> dict[str, object]:
    return {"brokerName": broker.config.broker_name, "queueId": queue_id, "topic": topic}


def _all_topics_body(version: DataVersion, configs: list[TopicConfig]) -> bytes:
    """GET_ALL_TOPIC_CONFIG's TopicConfigSerializeWrapper."""
    return fastjson.dumps({"dataVersion": version.to_json(),
                           "topicConfigTable": {t.topic_name: t.to_json() for t in configs}})


def _all_groups_body(version: DataVersion, configs: dict[str, SubscriptionGroupConfig]) -> bytes:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG's SubscriptionGroupWrapper."""
    return fastjson.dumps({"dataVersion": version.to_json(),
                           "subscriptionGroupTable": {n: g.to_json() for n, g in configs.items()}})


def register(router: RequestRouter, broker: Broker) -> None:
    async def runtime_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"table": runtime_table(broker)}))

    async def broker_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        version = fastjson.dumps(broker.config_version.to_json()).decode()
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"version": version},
                                     body=reported_config_text(broker).encode())

    async def create_topic(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        if h.topic_filter_type not in _TOPIC_FILTER_TYPES:
            # 4.9.3's CreateTopicRequestHeader.checkFields; what it refuses would otherwise be kept in the
            # topic table and written to topics.json (a lone surrogate there broke every later write of it)
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"topicFilterType = [{h.topic_filter_type}] value invalid")
        problem = topic_problem(h.topic)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        if broker.topics.is_system_topic(h.topic):
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"The topic[{h.topic}] is conflict with system topic.")
        # rocketstore's own cap (4.9.3 takes 2^31 queues, then loops over them): refused as a bad name is
        too_many = queue_nums_problem(h.read_queue_nums, h.write_queue_nums)
        if too_many is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=too_many)
        tc = TopicConfig(h.topic, h.read_queue_nums, h.write_queue_nums, h.perm, h.topic_filter_type,
                         h.topic_sys_flag or 0, h.order)
        before = broker.topics.data_version
        broker.topics.update(tc)
        registered = broker.topic_config_changed(h.topic, before)
        # in topics.json before the answer, as 4.9.3 persists first; a failed write (a full disk) is logged
        # and answered SUCCESS as there (the table changed; the file is written again once it can be)
        await broker.topics.flush_quietly()
        if registered is not None:
            # and answered once the name servers took the topic (or the registration timed out), as 4.9.3's
            # registerIncrementBrokerData waits for their answers: a producer sending right after
            # `mqadmin updateTopic` finds the route (it once got "No route info of this topic")
            await asyncio.wait((registered,))
        # 4.9.3 sets only the code on its answer, which keeps the remark every new response starts with
        return request.make_response(ResponseCode.SUCCESS, remark=_UNSET_REMARK)

    async def delete_topic(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        problem = topic_problem(h.topic)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        if broker.topics.is_system_topic(h.topic):
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"The topic[{h.topic}] is conflict with system topic.")
        before = broker.topics.data_version
        broker.topics.delete(h.topic)
        # 4.9.3 registers nothing here (a name server keeps a topic a registration leaves out); the new data
        # version alone is registered (no topics), so the next creation's increment still has its base there
        broker.topic_config_changed(h.topic, before)
        await broker.topics.flush_quietly()  # as create_topic's
        # as 4.9.3's deleteTopic: the consume queues of topics no longer in the table go too (cleanUnusedTopic)
        # the topic is gone whatever happens here: a failure (the store too busy, StoreError; a directory
        # whose removal cannot be synced, OSError) is logged and the deletion still answered SUCCESS, so the
        # admin goes on to the name servers and the topic's statistics are forgotten
        try:
            dropped = await broker.run_blocking(broker.store.clean_unused_topics, LiveTopics(broker))
        except (StoreError, OSError) as exc:
            log.warning("topic %s deleted, but dropping its consume queues failed: %s", h.topic, exc)
            dropped = []
        # the statistics of those topics and of this one stay unless autoDeleteUnusedStats, as in 4.9.3
        broker.forget_stats_of_topics([*(topic for topic, _ in dropped), h.topic])
        # a send may create the topic again (autoCreateTopicEnable: a producer still sending) and register it
        # before the admin's DELETE_TOPIC_IN_NAMESRV, which follows this answer, takes it from the name servers
        # again; the periodic registrations (the same data version) would never bring it back.  4.9.3 answers
        # within a few ms, and such a send's registration reached its name server after the admin's deletion:
        # the topic stayed routed.  Registered again a few times after the answer, if it exists then
        loop = asyncio.get_running_loop()
        for delay in RECREATED_TOPIC_REGISTER_DELAYS_S:
            loop.call_later(delay, _register_recreated, broker, h.topic)
        return request.make_response(ResponseCode.SUCCESS)

    async def all_topic_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        # a copy taken on the loop (the configs are frozen), encoded on the executor: 10,000 topics are
        # ~100 ms of JSON, which a slave asks for every 10 s
        body = await broker.run_blocking(_all_topics_body, broker.topics.data_version, list(broker.topics))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def topic_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetTopicStatsInfoRequestHeader.from_ext_fields(request.ext_fields)
        tc = broker.topics.get(h.topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{h.topic}] not exist")
        store = broker.store
        pairs = []
        for q in range(tc.write_queue_nums):
            max_offset = store.max_offset(h.topic, q)
            last = store.store_time(h.topic, q, max_offset - 1) if max_offset > 0 else 0
            pairs.append((_mq(broker, h.topic, q), {"lastUpdateTimestamp": max(0, last), "maxOffset": max_offset,
                                                    "minOffset": store.min_offset(h.topic, q)}))
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps_object_keyed({}, "offsetTable", pairs))

    async def consumer_connections(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        info = broker.clients.group(h.consumer_group)
        if info is None or not info.channels:
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE,
                                         remark=f"the consumer group[{h.consumer_group}] not online")
        body = fastjson.dumps({
            "connectionSet": [c.to_json() for c in info.channels.values()],
            "consumeFromWhere": info.consume_from_where, "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": {t: s.to_json() for t, s in info.subscriptions.items()}})
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def producer_connections(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetProducerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        channels = broker.clients.producer_channels(h.producer_group)
        if not channels:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"the producer group[{h.producer_group}] not exist")
        return request.make_response(ResponseCode.SUCCESS,
                                     body=fastjson.dumps({"connectionSet": [c.to_json() for c in channels]}))

    async def consume_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext_fields(request.ext_fields)
        group = h.consumer_group
        topics = [h.topic] if h.topic and h.topic.strip() else broker.offsets.topics_of_group(group)
        pairs = []
        tps = 0.0
        for topic in topics:
            tc = broker.topics.get(topic)
            if tc is None or subscribed_elsewhere(broker, group, topic):
                continue
            tps += broker.stats.group_get_tps(group, topic)  # 4.9.3's tpsGroupGetNums
            pairs.extend(queue_offsets(broker, group, topic, tc.read_queue_nums))
        body = fastjson.dumps_object_keyed({"consumeTps": tps}, "offsetTable", pairs)
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def all_groups(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        # as all_topic_config: 5,000 groups are ~45 ms of JSON
        body = await broker.run_blocking(_all_groups_body, broker.groups.data_version, dict(broker.groups.table))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def update_group(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        obj = fastjson.loads(request.body) if request.body else None
        if not isinstance(obj, dict) or not obj.get("groupName"):
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="subscription group config missing")
        problem = group_problem(str(obj["groupName"]))
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        try:
            cfg = SubscriptionGroupConfig.from_json(obj, java_range=True)
        except ValueError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"subscription group config refused: {exc}")
        broker.groups.update(cfg)
        await broker.groups.flush_quietly()  # as create_topic's
        return request.make_response(ResponseCode.SUCCESS)

    async def delete_group(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        # groupName is @CFNotNull in 4.9.3: a request without it is SYSTEM_ERROR naming it, nothing deleted
        h = DeleteSubscriptionGroupRequestHeader.from_ext_fields(request.ext_fields)
        group = h.group_name
        broker.groups.delete(group)
        if broker.auto_delete_unused_stats:  # else its statistics stay, as in 4.9.3 (onGroupDeleted)
            broker.stats.group_deleted(group)
        if h.remove_offset:
            broker.offsets.remove_group(group)
        await broker.groups.flush_quietly()  # as create_topic's
        return request.make_response(ResponseCode.SUCCESS)

    async def consumed_by_whom(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        topic = QueryTopicConsumeByWhoRequestHeader.from_ext_fields(request.ext_fields).topic  # @CFNotNull
        groups = set(broker.clients.groups_subscribing(topic)) | set(broker.offsets.groups_of_topic(topic))
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"groupList": sorted(groups)}))

    async def system_topics(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS,
                                     body=fastjson.dumps({"topicList": broker.topics.system_topic_list()}))

    def acl_admin() -> AclAdmin | None:
        """None without aclEnable (broker.acl is set after the handlers are registered: looked up per call)."""
        return AclAdmin(broker.acl) if broker.acl is not None else None

    # as in 4.9.3 (BrokerController.initialAcl), ACL is set up at start only: aclEnable changed by
    # UPDATE_BROKER_CONFIG neither starts nor stops it, so the remark does not quote the current setting
    acl_off = ("ACL is not enabled on this broker: aclEnable was false when it started (a change of aclEnable "
               "takes effect at the next start), there is no ACL to read or change")

    def acl_change(request: RemotingCommand, failed: int, change: Callable[[AclAdmin], bool],
                   refused: str) -> RemotingCommand:
        """One of the three ACL changes: SUCCESS, or *failed* with the reason (*refused* when the change
        itself answers False, as 4.9.3's validator does)."""
        editor = acl_admin()
        if editor is None:
            return request.make_response(failed, remark=acl_off)
        try:
            done = change(editor)
        except (AclConfigError, OSError) as exc:
            log.error("ACL request code %s failed: %s", request.code, exc)
            return request.make_response(failed, remark=str(exc))
        return request.make_response(ResponseCode.SUCCESS) if done else request.make_response(failed, remark=refused)

    async def update_acl(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        cfg = PlainAccessConfig(h.access_key, h.secret_key, h.white_remote_address, h.admin, h.default_topic_perm,
                                h.default_group_perm, java_split(h.topic_perms), java_split(h.group_perms))
        return acl_change(request, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
                          lambda editor: editor.update_account(cfg),
                          f"The accesskey[{h.access_key}] corresponding to accessConfig has been updated failed.")

    async def delete_acl(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        log.info("DeleteAccessConfig called by %s", conn.peer[0])
        return acl_change(request, ResponseCode.DELETE_ACL_CONFIG_FAILED,
                          lambda editor: editor.delete_account(h.access_key),
                          f"The accesskey[{h.access_key}] corresponding to accessConfig has been deleted failed.")

    async def update_white(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        return acl_change(request, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                          lambda editor: editor.update_global_white(java_split(h.global_white_addrs)),
                          f"The globalWhiteAddresses[{h.global_white_addrs}] has been updated failed.")

    async def acl_versions(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        editor = acl_admin()
        if editor is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=acl_off)
        default, per_file = editor.versions()
        header = GetBrokerAclConfigResponseHeader(
            version=fastjson.dumps(default.to_json()).decode(),
            all_acl_file_version=fastjson.dumps({p: v.to_json() for p, v in per_file.items()}).decode(),
            broker_name=broker.config.broker_name, broker_addr=broker.address,
            cluster_name=broker.config.broker_cluster_name)
        return request.make_response(ResponseCode.SUCCESS, ext_fields=header.to_ext_fields())

    async def acl_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        editor = acl_admin()
        if editor is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=acl_off)
        try:
            whites, accounts = editor.all_config()
        except (AclConfigError, OSError) as exc:
            log.error("GET_BROKER_CLUSTER_ACL_CONFIG failed: %s", exc)
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        body = fastjson.dumps({"globalWhiteAddrs": whites, "plainAccessConfigs": [a.to_json() for a in accounts]})
        return request.make_response(ResponseCode.SUCCESS, body=body)

    router.add(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, update_acl)
    router.add(RequestCode.DELETE_ACL_CONFIG, delete_acl)
    router.add(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, acl_versions)
    router.add(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, update_white)
    router.add(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, acl_config)
    router.add(RequestCode.GET_BROKER_RUNTIME_INFO, runtime_info)
    router.add(RequestCode.GET_BROKER_CONFIG, broker_config)
    router.add(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic)
    router.add(RequestCode.DELETE_TOPIC_IN_BROKER, delete_topic)
    router.add(RequestCode.GET_ALL_TOPIC_CONFIG, all_topic_config)
    router.add(RequestCode.GET_TOPIC_STATS_INFO, topic_stats)
    router.add(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumer_connections)
    router.add(RequestCode.GET_PRODUCER_CONNECTION_LIST, producer_connections)
    router.add(RequestCode.GET_CONSUME_STATS, consume_stats)
    router.add(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, all_groups)
    router.add(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, update_group)
    router.add(RequestCode.DELETE_SUBSCRIPTIONGROUP, delete_group)
    router.add(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, consumed_by_whom)
    router.add(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, system_topics)
