"""SEND_MESSAGE (10, v1 names), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) handling.

Follows the 4.9.3 SendMessageProcessor (remoting.md section 5.1): topic checks and auto-creation from the
request's default topic (TBW102), queue choice, ``%RETRY%`` -> ``%DLQ%`` redirection, CLUSTER added and WAIT
dropped from the stored properties, born host = the connection's peer, store host = brokerIP1:listenPort,
and PutMessageStatus -> response code.  A batch is decided by the header's batch flag (``batch`` / ``m``),
not by the request code: C++ 1.2.x sends batches as code 10, with ``batch="1"``.

Success-like answers carry msgId (offset message id(s)), queueId, queueOffset, MSG_REGION and TRACE_ON, all
as strings.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rocketstore.broker.topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    dlq_topic,
    topic_problem,
)
from rocketstore.errors import MessageDecodeError, MessageError
from rocketstore.message.batch import MessageBatch
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.properties import PropertyName, encode_properties, parse_properties
from rocketstore.message.record import Message, SysFlag
from rocketstore.remoting.bodies import Perm
from rocketstore.remoting.codes import MQVersion, RequestCode, ResponseCode, response_code_for_put_status
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import parse_send_message_header
from rocketstore.remoting.transport import Connection, RequestRouter
from rocketstore.store.results import PutMessageStatus, PutResult

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["PUT_STATUS_REMARKS", "register", "send_message", "send_message_now"]

_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

PUT_STATUS_REMARKS: dict[PutMessageStatus, str | None] = {
    PutMessageStatus.PUT_OK: None,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: None,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: None,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: None,
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: "create mapped file failed, server is busy or broken.",
    PutMessageStatus.MESSAGE_ILLEGAL: (
        "the message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
        "msg properties length limit 32k."),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (
        "the message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
        "msg properties length limit 32k."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        "service not available now. It may be caused by one of the following reasons: the broker's disk is full "
        "[unknown], messages are put to the slave, message store has been shut down, etc."),
    PutMessageStatus.OS_PAGECACHE_BUSY: "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    PutMessageStatus.UNKNOWN_ERROR: "UNKNOWN_ERROR",
    PutMessageStatus.LMQ_CONSUME_QUEUE_NUM_EXCEEDED: (
        "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq consumeQueue num "
        "exceed maxLmqConsumeQueueNum config num, default limit 2w."),
}

_V2_CODES = frozenset({RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
_CODE_FOR_STATUS = {status: response_code_for_put_status(status.name) for status in PutMessageStatus}
_SUCCESS_LIKE = frozenset({ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
                           ResponseCode.SLAVE_NOT_AVAILABLE})


def register(router: RequestRouter, broker: Broker) -> None:
    async def handle(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return await send_message(broker, conn, request)

    def handle_now(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return send_message_now(broker, conn, request)

    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        router.add(code, handle, immediate=handle_now)


def _region_fields(broker: Broker) -> dict[str, str]:
    return {"MSG_REGION": broker.config.region_id, "TRACE_ON": "true" if broker.config.trace_on else "false"}


async def send_message(broker: Broker, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    prepared = _prepare(broker, conn, request)
    if isinstance(prepared, RemotingCommand):
        return prepared
    item, queue_id, region = prepared
    result = await (broker.put_batch(item) if isinstance(item, MessageBatch) else broker.put(item))
    return _answer(request, result, queue_id, region)


def send_message_now(broker: Broker, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
    """:func:`send_message` run to the end synchronously, for the transport's immediate path (no task per
    send); None under SYNC_FLUSH, where a put waits for the disk and so must run off the loop."""
    if broker.store.config.is_sync_flush:
        return None
    prepared = _prepare(broker, conn, request)
    if isinstance(prepared, RemotingCommand):
        return prepared
    item, queue_id, region = prepared
    result = broker.put_batch_now(item) if isinstance(item, MessageBatch) else broker.put_now(item)
    return _answer(request, result, queue_id, region)


#: what to store (one message, or a batch), the queue id asked for, the region extFields
_Prepared = tuple[Message | MessageBatch, int, dict[str, str]]


def _prepare(broker: Broker, conn: Connection, request: RemotingCommand) -> RemotingCommand | _Prepared:
    """Everything before the put: the checks (a failure is returned as the response) and the messages."""
    header = parse_send_message_header(request.code, request.ext_fields)
    region = _region_fields(broker)

    def fail(code: int, remark: str | None) -> RemotingCommand:
        return request.make_response(code, remark=remark, ext_fields=region)

    topic = header.topic
    problem = topic_problem(topic)
    if problem is not None:
        return fail(ResponseCode.SYSTEM_ERROR, problem)
    if topic == SCHEDULE_TOPIC:
        return fail(ResponseCode.NO_PERMISSION, f"sending message to topic[{topic}] is forbidden")
    tc = broker.topics.get(topic)
    if tc is None:
        sys_flag = 1 if header.unit_mode else 0
        tc = broker.topics.create_for_send(topic, header.default_topic, header.default_topic_queue_nums, sys_flag)
        if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            tc = broker.topics.create_retry_or_dlq(topic, 1, Perm.READ | Perm.WRITE, sys_flag)
        if tc is None:
            return fail(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{_FAQ}")
        broker.topic_created()
    queue_id = header.queue_id
    limit = max(tc.write_queue_nums, tc.read_queue_nums)
    if queue_id >= limit:
        return fail(ResponseCode.SYSTEM_ERROR,
                    f"request queueId[{queue_id}] is illegal, {tc} Producer: {conn.peer_address}")
    if queue_id < 0:
        if tc.write_queue_nums <= 0:
            return fail(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] has no writable queue")
        queue_id = random.randrange(tc.write_queue_nums)

    batch = _is_batch(request, header.batch)
    reconsume_times = header.reconsume_times or 0
    to_dlq = False
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and not batch:
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        group_cfg = broker.groups.get(group)
        if group_cfg is None:
            return fail(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}{_FAQ}")
        max_reconsume = group_cfg.retry_max_times
        if request.version >= MQVersion.V3_4_9 and header.max_reconsume_times is not None:
            max_reconsume = header.max_reconsume_times
        if reconsume_times >= max_reconsume:
            topic = dlq_topic(group)
            dlq = broker.topics.get(topic)
            if dlq is None:
                dlq = broker.topics.create_retry_or_dlq(topic, 1, Perm.READ | Perm.WRITE)
                broker.topic_created()
            if not Perm.writeable(dlq.perm):
                return fail(ResponseCode.NO_PERMISSION, f"the topic[{topic}] is not writable")
            queue_id = 0
            to_dlq = True

    sys_flag = header.sys_flag
    if tc.topic_filter_type == "MULTI_TAG":
        sys_flag |= SysFlag.MULTI_TAGS
    props = parse_properties(header.properties or "")
    if to_dlq:  # Java's setDelayTimeLevel(0): a dead letter is stored at once, not scheduled
        props.pop(PropertyName.DELAY, None)
    if props.get(PropertyName.TRAN_MSG) == "true":
        # Half messages need the transaction topics and the check service, which this broker lacks.
        return fail(ResponseCode.NO_PERMISSION,
                    f"the broker[{broker.config.broker_name}] sending transaction message is forbidden")
    born_host = _born_host(conn)
    store_host = broker.store_host
    if batch:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            return fail(ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic)
        if len(request.body) > broker.store.config.max_message_size:
            return fail(ResponseCode.MESSAGE_ILLEGAL, PUT_STATUS_REMARKS[PutMessageStatus.MESSAGE_ILLEGAL])
        # As RocketMQ 4.9.3's batch send: the header's properties as sent (WAIT too) plus CLUSTER become the
        # batch's own properties string, which the store appends to each entry's properties bytes as they
        # came (MessageExtBatchEncoder); the entries are not parsed here.
        props[PropertyName.CLUSTER] = broker.config.broker_cluster_name
        try:
            message_batch = MessageBatch.from_body(
                topic, queue_id, request.body, batch_properties=encode_properties(props), sys_flag=sys_flag,
                born_timestamp=header.born_timestamp, born_host=born_host, store_host=store_host,
                reconsume_times=reconsume_times)
        except MessageDecodeError as exc:
            return fail(ResponseCode.MESSAGE_ILLEGAL, f"cannot decode the batch body: {exc}")
        return message_batch, queue_id, region
    props.pop(PropertyName.WAIT, None)
    props[PropertyName.CLUSTER] = broker.config.broker_cluster_name
    return (Message(topic, request.body, props, queue_id, header.flag, sys_flag, header.born_timestamp, born_host,
                    store_host, reconsume_times), queue_id, region)


def _is_batch(request: RemotingCommand, parsed: bool) -> bool:
    """The batch flag.  rocketmq-client-cpp (1.2.x and 2.x) writes it with ``UtilAll::to_string(bool)``,
    i.e. ``"1"``, which Java's Boolean.parseBoolean reads as false; we take ``"1"`` as true so C++ batches
    are stored as their messages, not as one message holding the encoded batch."""
    if parsed:
        return True
    raw = request.ext_fields.get("m" if request.code in _V2_CODES else "batch")
    return raw is not None and raw.strip() == "1"


def _born_host(conn: Connection) -> HostAddress | None:
    """The connection's peer as a record host, parsed once per connection (IPv4-mapped IPv6 -> IPv4)."""
    host = conn.attributes.get("born_host")
    if host is None:
        try:
            host = parse_host(conn.peer)
        except MessageError:
            return None
        conn.attributes["born_host"] = host
    return host  # type: ignore[return-value]


def _answer(request: RemotingCommand, result: PutResult, queue_id: int, region: dict[str, str]) -> RemotingCommand:
    code = _CODE_FOR_STATUS.get(result.status)
    if code is None:
        code = response_code_for_put_status(result.status.name)
    if code not in _SUCCESS_LIKE:
        remark = PUT_STATUS_REMARKS.get(result.status, "UNKNOWN_ERROR DEFAULT")
        return request.make_response(code, remark=remark, ext_fields=region)
    # queueId is the queue asked for (a delayed message really went to SCHEDULE_TOPIC_XXXX); queueOffset is
    # where it was written, as the Java broker answers
    # SendMessageResponseHeader(...).to_ext_fields() written out (a frozen dataclass per send costs more
    # than the rest of this function); tests/unit/broker/test_send_answer.py holds them equal
    ext = {"msgId": result.msg_id, "queueId": str(queue_id), "queueOffset": str(result.queue_offset),
           "MSG_REGION": region["MSG_REGION"], "TRACE_ON": region["TRACE_ON"]}
    return request.make_response(code, ext_fields=ext)

