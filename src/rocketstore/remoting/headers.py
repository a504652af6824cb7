"""Typed custom headers (the `extFields` of a request or response) of every request family but send, and the
tables from request code to header type.

Owns one frozen dataclass per header of the pull and offset, query / view / send-back / transaction, client
and admin, and name server families, each mapping snake_case attributes to the exact wire names, and
:func:`parse_request_header`, which picks the header type by request code.  The field-table machinery and
its Java parsing rules are :mod:`rocketstore.remoting.header_fields`; the send headers and the send fast
path are :mod:`rocketstore.remoting.send_headers`.

LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, HEART_BEAT and the cluster/topic-list requests have no custom header (their
data is the JSON body), so they have no class here.

Headers are immutable values, safe to share between threads.  Pure: imports only remoting.codes,
remoting.header_fields and remoting.send_headers, nothing with sockets, clocks or threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.header_fields import (
    _BOOL,
    _INT,
    _LONG,
    CommandHeader,
    _Kind,
    _opt,
    _req,
)
from rocketstore.remoting.send_headers import (
    SEND_MESSAGE_V2_CODES,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)

__all__ = [
    "MAX_QUEUE_NUMS",
    "REQUEST_HEADER_TYPES",
    "RESPONSE_HEADER_TYPES",
    "UNIQUE_KEY_QUERY_FIELD",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CloneGroupOffsetRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateAccessConfigRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetBrokerAclConfigResponseHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryCorrectionOffsetHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "UnregisterBrokerRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "queue_nums_problem",
    "parse_request_header",
]


# --- pull and offsets ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    queue_offset: int = _req("queueOffset", _LONG)
    max_msg_nums: int = _req("maxMsgNums", _INT)
    sys_flag: int = _req("sysFlag", _INT)
    commit_offset: int = _req("commitOffset", _LONG)
    suspend_timeout_ms: int = _req("suspendTimeoutMillis", _LONG)
    subscription: str | None = _opt("subscription")
    sub_version: int = _req("subVersion", _LONG)
    expression_type: str | None = _opt("expressionType")  # None means TAG


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    suggest_which_broker_id: int = _req("suggestWhichBrokerId", _LONG)
    next_begin_offset: int = _req("nextBeginOffset", _LONG)
    min_offset: int = _req("minOffset", _LONG)
    max_offset: int = _req("maxOffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    commit_offset: int = _req("commitOffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    timestamp_ms: int = _req("timestamp", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp_ms: int = _req("timestamp", _LONG)


# --- query, view, send back, transactions ---------------------------------------------------------------

UNIQUE_KEY_QUERY_FIELD = "_UNIQUE_KEY_QUERY"


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader(CommandHeader):
    topic: str = _req("topic")
    key: str = _req("key")
    max_num: int = _req("maxNum", _INT)
    begin_timestamp_ms: int = _req("beginTimestamp", _LONG)
    end_timestamp_ms: int = _req("endTimestamp", _LONG)
    # Not a Java header field but an extra extField the processor compares with "true" exactly.
    unique_key_query: bool = _opt(UNIQUE_KEY_QUERY_FIELD, _Kind.MARKER, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp_ms: int = _req("indexLastUpdateTimestamp", _LONG)
    index_last_update_commit_log_offset: int = _req("indexLastUpdatePhyoffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandHeader):
    commit_log_offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    commit_log_offset: int = _req("offset", _LONG)  # of the consumed message
    group: str = _req("group")
    delay_level: int = _req("delayLevel", _INT)
    origin_msg_id: str | None = _opt("originMsgId")
    origin_topic: str | None = _opt("originTopic")
    unit_mode: bool = _opt("unitMode", _BOOL, False)
    max_reconsume_times: int | None = _opt("maxReconsumeTimes", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader(CommandHeader):
    producer_group: str = _req("producerGroup")
    tran_state_table_offset: int = _req("tranStateTableOffset", _LONG)  # queue offset of the half message
    commit_log_offset: int = _req("commitLogOffset", _LONG)  # of the half message
    commit_or_rollback: int = _req("commitOrRollback", _INT)  # 0 unknown, 8 commit, 12 rollback
    from_transaction_check: bool = _opt("fromTransactionCheck", _BOOL, False)
    msg_id: str = _req("msgId")
    transaction_id: str | None = _opt("transactionId")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    topic: str = _req("topic")
    # primitives without @CFNotNull in 4.9.3: a missing one is 0, not an error
    queue_id: int = _opt("queueId", _INT, 0)
    index: int = _opt("index", _LONG, 0)
    count: int = _opt("count", _INT, 0)
    consumer_group: str | None = _opt("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (admin -> broker) and RESET_CONSUMER_CLIENT_OFFSET (broker -> consumers):
    move *group*'s offsets of *topic* to the message stored nearest *timestamp* (ms; -1: the end),
    only backwards unless *is_force*."""

    topic: str = _req("topic")
    group: str = _req("group")
    timestamp_ms: int = _req("timestamp", _LONG)
    is_force: bool = _req("isForce", _BOOL)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """Broker -> producer, oneway."""

    tran_state_table_offset: int = _req("tranStateTableOffset", _LONG)
    commit_log_offset: int = _req("commitLogOffset", _LONG)
    msg_id: str | None = _opt("msgId")
    transaction_id: str | None = _opt("transactionId")
    offset_msg_id: str | None = _opt("offsetMsgId")


# --- clients and admin ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(CommandHeader):
    client_id: str = _req("clientID")
    producer_group: str | None = _opt("producerGroup")  # C++ sends "" for the unused group
    consumer_group: str | None = _opt("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """Broker -> consumer, oneway."""

    consumer_group: str = _req("consumerGroup")


#: The most read or write queues a topic may have: rocketstore's own limit, checked wherever a queue count
#: comes in (UPDATE_AND_CREATE_TOPIC, defaultTopicQueueNums, topics.json, a broker's registration on the
#: name server, a route a client reads).  4.9.3's broker, name server and client take any int, and every
#: per-queue loop then runs that often: a topic of 2^31 write queues ran QUERY_CONSUME_TIME_SPAN and a
#: client's route refresh (one MessageQueue per queue) until memory ran out.  RocketMQ itself makes at most
#: 1,024 queues (its BenchmarkTest topic) and a real topic a few per broker (each written queue has its own
#: consume queue files, ~6 MB a file); 16,384 is 16 times that, and small enough that every per-queue answer
#: fits one frame (QUERY_CONSUME_TIME_SPAN's ~420 bytes a queue with a 127-character topic: ~7 MB of the
#: 16 MiB; at 65,536 queues it no longer did) and a route of that many queues is a few MB in a client.
MAX_QUEUE_NUMS = 16_384


def queue_nums_problem(read_queue_nums: int, write_queue_nums: int) -> str | None:
    """Why a topic may not have these queue counts (the remark a refusal answers), or None.  Counts below
    0 are left alone, as 4.9.3 takes them (a loop over them runs no time)."""
    for name, value in (("readQueueNums", read_queue_nums), ("writeQueueNums", write_queue_nums)):
        if value > MAX_QUEUE_NUMS:
            return f"The specified {name} [{value}] is too large, allowing at most {MAX_QUEUE_NUMS} queues."
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicRequestHeader(CommandHeader):
    topic: str = _req("topic")
    default_topic: str = _req("defaultTopic")
    read_queue_nums: int = _req("readQueueNums", _INT)
    write_queue_nums: int = _req("writeQueueNums", _INT)
    perm: int = _req("perm", _INT)
    topic_filter_type: str = _req("topicFilterType")  # SINGLE_TAG / MULTI_TAG
    topic_sys_flag: int | None = _opt("topicSysFlag", _INT)
    # Required in Java but initialised to false there, so its absence is never an error.
    order: bool = _opt("order", _BOOL, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER and DELETE_TOPIC_IN_NAMESRV."""

    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str = _req("producerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """Admin -> broker -> the consumer (the broker forwards the same extFields)."""

    consumer_group: str = _req("consumerGroup")
    client_id: str = _req("clientId")
    jstack_enable: bool = _opt("jstackEnable", _BOOL, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY, admin -> broker -> the consumer; the broker adds brokerName and the stored
    record as the body."""

    consumer_group: str = _req("consumerGroup")
    client_id: str | None = _opt("clientId")
    msg_id: str | None = _opt("msgId")
    broker_name: str | None = _opt("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT, broker -> the requesting producer: the replier's send header as it came
    (queueId as asked), the replier's address as bornHost and the broker's as storeHost ("/ip:port", Java's
    InetSocketAddress text), and when the broker passed it on."""

    producer_group: str = _req("producerGroup")
    topic: str = _req("topic")
    default_topic: str = _req("defaultTopic")
    default_topic_queue_nums: int = _req("defaultTopicQueueNums", _INT)
    queue_id: int = _req("queueId", _INT)
    sys_flag: int = _req("sysFlag", _INT)
    born_timestamp: int = _req("bornTimestamp", _LONG)
    flag: int = _req("flag", _INT)
    properties: str | None = _opt("properties")
    reconsume_times: int | None = _opt("reconsumeTimes", _INT)
    unit_mode: bool = _opt("unitMode", _BOOL, False)
    born_host: str = _req("bornHost")
    store_host: str = _req("storeHost")
    store_timestamp: int = _req("storeTimestamp", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str | None = _opt("topic")  # blank: every topic the group has offsets for


# --- name server -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    ha_server_addr: str = _req("haServerAddr")
    broker_id: int = _req("brokerId", _LONG)
    compressed: bool = _opt("compressed", _BOOL, False)
    body_crc32: int = _opt("bodyCrc32", _INT, 0)  # 0: not checked


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = _opt("haServerAddr")
    master_addr: str | None = _opt("masterAddr")


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    broker_id: int = _req("brokerId", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    broker_id: int = _req("brokerId", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool = _req("changed", _BOOL)


@dataclass(frozen=True, slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")
    value: str = _req("value")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = _opt("value")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = _req("namespace")


@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int = _req("wipeTopicCount", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int = _req("addTopicCount", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str = _req("cluster")


# --- ACL admin (RocketMQ 4.9.3 common.protocol.header) -----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    access_key: str = _req("accessKey")
    secret_key: str | None = _opt("secretKey")
    white_remote_address: str | None = _opt("whiteRemoteAddress")
    admin: bool = _opt("admin", _BOOL, False)
    default_topic_perm: str | None = _opt("defaultTopicPerm")
    default_group_perm: str | None = _opt("defaultGroupPerm")
    #: "topicA=DENY,topicD=SUB"
    topic_perms: str | None = _opt("topicPerms")
    #: "groupA=DENY,groupD=SUB"
    group_perms: str | None = _opt("groupPerms")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    access_key: str = _req("accessKey")


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    #: "10.10.103.*,192.168.0.*"
    global_white_addrs: str = _req("globalWhiteAddrs")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    #: JSON DataVersion of conf/plain_acl.yml
    version: str = _req("version")
    #: JSON map: absolute file path -> DataVersion
    all_acl_file_version: str | None = _opt("allAclFileVersion")
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")


# --- dispatch tables ---------------------------------------------------------------------------------------

REQUEST_HEADER_TYPES: dict[int, type[CommandHeader]] = {
    RequestCode.SEND_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeader,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    RequestCode.END_TRANSACTION: EndTransactionRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    RequestCode.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RequestCode.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: UnregisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    RequestCode.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    RequestCode.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    RequestCode.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    RequestCode.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DeleteTopicRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: CreateAccessConfigRequestHeader,
    RequestCode.DELETE_ACL_CONFIG: DeleteAccessConfigRequestHeader,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: UpdateGlobalWhiteAddrsConfigRequestHeader,
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
}

# Response header of a successful answer, keyed by the request code.
RESPONSE_HEADER_TYPES: dict[int, type[CommandHeader]] = {
    RequestCode.SEND_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.PULL_MESSAGE: PullMessageResponseHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageResponseHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerResponseHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigResponseHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
    RequestCode.GET_BROKER_CLUSTER_ACL_INFO: GetBrokerAclConfigResponseHeader,
}


def parse_request_header(code: int, ext_fields: Mapping[str, str]) -> CommandHeader | None:
    """The typed header of a request with `code`; None for codes without a header table here."""
    if code in SEND_MESSAGE_V2_CODES:
        return SendMessageRequestHeader.from_ext_fields_v2(ext_fields)
    header_type = REQUEST_HEADER_TYPES.get(code)
    return None if header_type is None else header_type.from_ext_fields(ext_fields)


# --- group, offset and clean-up admin requests (broker/group_admin.py) ---------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (admin -> broker) and GET_CONSUMER_STATUS_FROM_CLIENT (broker ->
    each consumer of *group*): the consumers' offsets of *topic*.  ``clientAddr`` is, despite its name, the
    client id of the one consumer to ask (all when blank)."""

    topic: str = _req("topic")
    group: str = _req("group")
    client_addr: str | None = _opt("clientAddr")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    topic: str = _req("topic")
    group: str = _req("group")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET: per queue of *topic*, the smallest offset of the groups other than those in
    *filter_groups* (comma-separated), compared with *compare_group*'s."""

    filter_groups: str | None = _opt("filterGroups")
    compare_group: str = _req("compareGroup")
    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET: copy *src_group*'s offsets of *topic* (blank: of every topic it has offsets of)
    to *dest_group*; *offline* skips the check against the source group's live subscriptions."""

    src_group: str = _req("srcGroup")
    dest_group: str = _req("destGroup")
    topic: str | None = _opt("topic")
    offline: bool = _opt("offline", _BOOL, False)


REQUEST_HEADER_TYPES.update({
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusRequestHeader,
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
    RequestCode.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanRequestHeader,
    RequestCode.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetHeader,
    RequestCode.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
})


# --- broker statistics (VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS) ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    stats_name: str = _req("statsName")  # TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...
    stats_key: str = _req("statsKey")  # topic, topic@group or the cluster name, by stats name


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    is_order: bool = _req("isOrder", _BOOL)  # only the groups' ordered topics


REQUEST_HEADER_TYPES[RequestCode.VIEW_BROKER_STATS_DATA] = ViewBrokerStatsDataRequestHeader
REQUEST_HEADER_TYPES[RequestCode.GET_BROKER_CONSUME_STATS] = GetConsumeStatsInBrokerHeader
__all__ += ["GetConsumeStatsInBrokerHeader", "ViewBrokerStatsDataRequestHeader"]


# --- DELETE_SUBSCRIPTIONGROUP, QUERY_TOPIC_CONSUME_BY_WHO ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    group_name: str = _req("groupName")
    remove_offset: bool = _opt("removeOffset", _BOOL, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    topic: str = _req("topic")


REQUEST_HEADER_TYPES[RequestCode.DELETE_SUBSCRIPTIONGROUP] = DeleteSubscriptionGroupRequestHeader
REQUEST_HEADER_TYPES[RequestCode.QUERY_TOPIC_CONSUME_BY_WHO] = QueryTopicConsumeByWhoRequestHeader
__all__ += ["DeleteSubscriptionGroupRequestHeader", "QueryTopicConsumeByWhoRequestHeader"]
