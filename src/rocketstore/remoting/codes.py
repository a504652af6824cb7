"""Numeric vocabularies of the RocketMQ 4.9.3 remoting protocol.

Owns the request and response codes, the language and serialize-type enums, the protocol version we
announce, and the table from the store's put status names to send response codes.  Pure data: imports
nothing from the rest of rocketstore (in particular not the store, whose status enum is matched here by
name only).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "MQ_VERSION",
    "PUT_STATUS_RESPONSE_CODES",
    "LanguageCode",
    "MQVersion",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "response_code_for_put_status",
]


class RequestCode(IntEnum):
    """Request codes (the `code` of a request frame)."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    # Only ali-ons defines 217; a 4.9.3 broker answers REQUEST_CODE_NOT_SUPPORTED and a name server
    # answers nothing.  Kept so the code has a name in logs.
    GET_KV_CONFIG_BY_VALUE = 217
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327


class ResponseCode(IntEnum):
    """Response codes (the `code` of a response frame)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    # Misspelt on purpose: the name is RocketMQ's.
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211


class LanguageCode(IntEnum):
    """The sender's language: the enum name in JSON headers, the value as one byte in binary headers."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11


class SerializeType(IntEnum):
    """How the header is encoded; carried in the high byte of the header-length word."""

    JSON = 0
    ROCKETMQ = 1


class MQVersion(IntEnum):
    """Version ordinals seen on the wire (the `version` field), for the few version-dependent rules."""

    V3_0_7_SNAPSHOT = 28  # a broker sends RESET_CONSUMER_CLIENT_OFFSET only to clients from here on
    V3_0_11 = 37  # name server: REGISTER_BROKER bodies are RegisterBrokerBody from here on
    V3_1_8_SNAPSHOT = 62  # a broker calls back (GET_CONSUMER_RUNNING_INFO...) only clients from here on
    V3_1_8 = 63  # rocketmq-client-cpp 1.2.3 / 1.2.4
    V3_4_9 = 121  # ali-ons; from here on a request's maxReconsumeTimes is honoured
    V4_0_0 = 213
    V4_6_0 = 333  # rocketmq-client-cpp 1.2.5 and 2.x
    V4_9_0 = 393
    V4_9_3 = 399
    V4_9_4 = 401


# What a 4.9.3 Java broker and name server put in `version`; we answer as they do.
MQ_VERSION: int = MQVersion.V4_9_3.value


# Send-response code per store put status, keyed by the status *name* so this module needs no store import.
# The "sent, but ..." statuses (10, 11, 12) keep their own codes because clients turn them into send statuses
# rather than exceptions.
PUT_STATUS_RESPONSE_CODES: dict[str, ResponseCode] = {
    "PUT_OK": ResponseCode.SUCCESS,
    "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE,
    "SERVICE_NOT_AVAILABLE": ResponseCode.SERVICE_NOT_AVAILABLE,
    "CREATE_MAPEDFILE_FAILED": ResponseCode.SYSTEM_ERROR,
    "MESSAGE_ILLEGAL": ResponseCode.MESSAGE_ILLEGAL,
    "PROPERTIES_SIZE_EXCEEDED": ResponseCode.MESSAGE_ILLEGAL,
    "OS_PAGECACHE_BUSY": ResponseCode.SYSTEM_ERROR,
    "UNKNOWN_ERROR": ResponseCode.SYSTEM_ERROR,
    "LMQ_CONSUME_QUEUE_NUM_EXCEEDED": ResponseCode.SYSTEM_ERROR,
}


def response_code_for_put_status(status_name: str) -> ResponseCode:
    """The send-response code for a put status name; a status the table does not know is SYSTEM_ERROR."""
    return PUT_STATUS_RESPONSE_CODES.get(status_name, ResponseCode.SYSTEM_ERROR)
