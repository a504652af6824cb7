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

import asyncio
import dataclasses
import functools
import random
import time
import zlib
from typing import TYPE_CHECKING, Any

from rocketstore.broker.retry import register_created, routed
from rocketstore.broker.stats_admin import disk_used_ratio
from rocketstore.broker.topics import (
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    dlq_topic,
    topic_problem,
)
from rocketstore.broker.transactions import half_message
from rocketstore.errors import MessageDecodeError, MessageError
from rocketstore.message.batch import MessageBatch
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.inflate import inflate_body
from rocketstore.message.java_numbers import java_int_problem
from rocketstore.message.properties import (
    HasTagsAndKeys,
    PeakProperties,
    PropertyName,
    encode_properties,
    parse_properties,
)
from rocketstore.message.record import Message, SysFlag, record_size
from rocketstore.remoting.bodies import Perm, TopicConfig
from rocketstore.remoting.codes import MQVersion, RequestCode, ResponseCode, response_code_for_put_status
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import send_message_header_fields
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.templates import JsonResponseTemplate
from rocketstore.remoting.transport import ANSWER_LATER, Connection
from rocketstore.store.results import PutMessageStatus, PutResult

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker
    from rocketstore.broker.config import BrokerConfig
    from rocketstore.store.config import StoreConfig

__all__ = ["PUT_STATUS_REMARKS", "check_topic_and_queue", "peer_host", "register", "send_message", "send_message_frame",
           "send_message_now"]

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
#: the success-like statuses' response codes as plain ints (what the answer template takes)
_SUCCESS_CODE_FOR_STATUS = {status: int(code) for status, code in _CODE_FOR_STATUS.items() if code in _SUCCESS_LIKE}
_monotonic_ns = time.monotonic_ns
#: (a module name: an Enum member's lookup costs ~250 ns a send)
_ILLEGAL = PutMessageStatus.MESSAGE_ILLEGAL
#: the answer's extFields that change per send, in _answer's order; MSG_REGION and TRACE_ON follow
_ANSWER_KEYS = ("msgId", "queueId", "queueOffset")
#: (region id, trace on) -> the region extFields / the answer frames' template
_REGIONS: dict[tuple[str, bool], dict[str, str]] = {}
_ANSWER_TEMPLATES: dict[tuple[str, bool], JsonResponseTemplate] = {}


def register(router: RequestRouter, broker: Broker) -> None:
    async def handle(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return await send_message(broker, conn, request)

    handle_now = functools.partial(send_message_frame, broker)  # a C-level call, once per send
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        router.add(code, handle, immediate=handle_now)


def _region_fields(config: BrokerConfig) -> dict[str, str]:
    """MSG_REGION and TRACE_ON, which every send answer carries (one dict per config: not to be changed)."""
    key = (config.region_id, config.trace_on)
    region = _REGIONS.get(key)
    if region is None:
        region = _REGIONS[key] = {"MSG_REGION": config.region_id, "TRACE_ON": "true" if config.trace_on else "false"}
    return region


def _answer_template(config: BrokerConfig) -> JsonResponseTemplate:
    """The frames of :func:`_answer`'s success-like responses (msgId, queueId, queueOffset, then the region
    fields), one template per region."""
    key = (config.region_id, config.trace_on)
    template = _ANSWER_TEMPLATES.get(key)
    if template is None:
        template = _ANSWER_TEMPLATES[key] = JsonResponseTemplate(_ANSWER_KEYS, _region_fields(config))
    return template


async def send_message(broker: Broker, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    changes = broker.config_changes()
    registering: list[asyncio.Task[None]] = []
    prepared = _prepare(broker, conn, request, registering)
    if isinstance(prepared, RemotingCommand):
        return prepared
    assert prepared is not None  # (None only without *registering*)
    item, queue_id, region, wait = prepared
    result = await (broker.put_batch(item, wait=wait, sent=True) if isinstance(item, MessageBatch)
                    else broker.put(item, wait=wait, sent=True))
    if broker.config_changes() != changes:  # the send created its topic (or group): answered once it is written
        await broker.config_written_quietly()
        await routed(registering)  # and a %DLQ% topic it created once the name servers route it
    if result.status is _ILLEGAL and isinstance(item, MessageBatch):
        refused = _batch_size_refusal(broker, request, item, region)
        if refused is not None:
            return refused
    return _answer(request, result, queue_id, region, broker.store.config)


def _put_now(broker: Broker, conn: Connection, request: RemotingCommand
             ) -> RemotingCommand | tuple[PutResult, int, dict[str, str]] | None:
    """The checks and the put on the calling thread: the refusal, or (result, queue id, region); None under
    SYNC_FLUSH, where a put waits for the disk and so must run off the loop."""
    if broker.store.config.is_sync_flush or broker.sync_master:
        return None
    prepared = _prepare(broker, conn, request)
    if not isinstance(prepared, tuple):  # a refusal, or None: send_message's task
        return prepared
    item, queue_id, region, _wait = prepared
    result = broker.put_batch_now(item, sent=True) if isinstance(item, MessageBatch) else broker.put_now(item, sent=True)
    if result.status is _ILLEGAL and isinstance(item, MessageBatch):
        refused = _batch_size_refusal(broker, request, item, region)
        if refused is not None:
            return refused
    return result, queue_id, region


def send_message_now(broker: Broker, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
    """:func:`send_message` run to the end synchronously (no task per send); None under SYNC_FLUSH."""
    done = _put_now(broker, conn, request)
    if done is None or isinstance(done, RemotingCommand):
        return done
    return _answer(request, *done, broker.store.config)


def send_message_frame(broker: Broker, conn: Connection, request: RemotingCommand
                       ) -> RemotingCommand | bytes | object | None:
    """:func:`send_message_now` for the transport's immediate path: a success-like answer comes back as
    its encoded frame, written from a template (the bytes encode_command would give for _answer's
    response), the rest as :func:`send_message_now` answers.  Under SYNC_FLUSH the put is made here too
    and the answer waits for the disk on the broker's DurableWaits (ANSWER_LATER)."""
    if broker.sync_master:
        return None  # the answer waits for a slave: send_message's task
    changes = broker.config_changes()
    if broker.store.config.is_sync_flush:
        return _send_sync_flush(broker, conn, request, changes)
    done = _put_now(broker, conn, request)
    if done is None or isinstance(done, RemotingCommand):
        return done
    frame = _answer_frame(broker.config, request, *done, broker.store.config)
    if broker.config_changes() != changes:
        # the send created its topic (or group): answered once topics.json has it, as 4.9.3 persists first
        broker.answer_when_config_written(conn.answer_later(request), frame)
        return ANSWER_LATER
    return frame


def _answer_frame(config: BrokerConfig, request: RemotingCommand, result: PutResult, queue_id: int,
                  region: dict[str, str], store_config: StoreConfig | None = None) -> RemotingCommand | bytes:
    """:func:`_answer`, as its encoded frame from the template when the answer is success-like."""
    code = _SUCCESS_CODE_FOR_STATUS.get(result.status)
    if code is None:
        return _answer(request, result, queue_id, region, store_config)
    # (plain values: a message id is hex, a batch's ids joined by commas)
    return _answer_template(config).encode_plain(code, request.opaque,
                                                 (result.msg_id, str(queue_id), str(result.queue_offset)))


def _send_sync_flush(broker: Broker, conn: Connection, request: RemotingCommand,
                     changes: int) -> RemotingCommand | bytes | object:
    """A send under SYNC_FLUSH without a task: the checks and the put now, the answer once the group commit
    covers the record (the broker's DurableWaits asks for the sync), or at once for WAIT=false and
    refusals; a send that created its topic or group (*changes*: Broker.config_changes before it) is also
    answered only once that is written."""
    prepared = _prepare(broker, conn, request)
    if not isinstance(prepared, tuple):  # a refusal, or None: send_message's task
        return prepared
    item, queue_id, region, wait = prepared
    began_ns = _monotonic_ns()
    result = broker.put_unsynced(item)
    config = broker.config
    if not wait or result.status is not PutMessageStatus.PUT_OK:
        if result.status is PutMessageStatus.PUT_OK:
            broker.durable_waits.ask_sync(result.commit_log_offset + result.wrote_bytes)
        broker.count_put(result, began_ns, True)
        frame: RemotingCommand | bytes | None = None
        if result.status is _ILLEGAL and isinstance(item, MessageBatch):
            frame = _batch_size_refusal(broker, request, item, region)
        if frame is None:
            frame = _answer_frame(config, request, result, queue_id, region, broker.store.config)
        if broker.config_changes() != changes:
            broker.answer_when_config_written(conn.answer_later(request), frame)
            return ANSWER_LATER
        return frame
    reply = conn.answer_later(request)
    created = broker.config_changes() != changes

    def durable(status: PutMessageStatus) -> None:
        final = result if status is PutMessageStatus.PUT_OK else result._replace(status=status)
        broker.count_put(final, began_ns, True)
        frame = _answer_frame(config, request, final, queue_id, region, broker.store.config)
        if created:
            broker.answer_when_config_written(reply, frame)
        else:
            reply(frame)

    broker.durable_waits.add(result.commit_log_offset + result.wrote_bytes, durable)
    return ANSWER_LATER


#: what to store (one message, or a batch), the queue id asked for, the region extFields, and whether the
#: answer waits for the disk under SYNC_FLUSH (the request has no WAIT property, or one Java reads as true)
_Prepared = tuple[Message | MessageBatch, int, dict[str, str], bool]


def _prepare(broker: Broker, conn: Connection, request: RemotingCommand,
             registering: list[asyncio.Task[None]] | None = None) -> RemotingCommand | _Prepared | None:
    """Everything before the put: the checks (a failure is returned as the response) and the messages.
    A dead letter whose ``%DLQ%`` topic is to be created is registered with the name servers at once, as
    the send-back's, its registration added to *registering* (send_message's task waits for it, see
    retry.routed); without *registering* (the immediate paths) None: the send goes to that task."""
    (_, topic, default_topic, default_topic_queue_nums, queue_id, sys_flag, born_timestamp, flag, properties,
     reconsume_times, unit_mode, batch, max_reconsume_times) = send_message_header_fields(request.code,
                                                                                          request.ext_fields)
    config = broker.config
    region = _region_fields(config)

    def fail(code: int, remark: str | None) -> RemotingCommand:
        return request.make_response(code, remark=remark, ext_fields=region)

    tc, queue_id, remark = check_topic_and_queue(broker, conn, topic, default_topic, default_topic_queue_nums,
                                                 queue_id, unit_mode)
    if tc is None:
        return fail(queue_id, remark)

    if not batch:
        batch = _is_batch(request)
    if reconsume_times is None:
        reconsume_times = 0
    answer_queue_id = queue_id  # handlePutMessageResult answers the queue asked for, even for a dead letter
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and not batch:
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        # findSubscriptionGroupConfig: a group not seen yet is created when autoCreateSubscriptionGroup is on
        group_cfg = broker.groups.find_or_create(group)
        if group_cfg is None:
            return fail(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                        f"subscription group not exist, {group} {_FAQ}")
        max_reconsume = group_cfg.retry_max_times
        if request.version >= MQVersion.V3_4_9 and max_reconsume_times is not None:
            max_reconsume = max_reconsume_times
        if reconsume_times >= max_reconsume:
            topic = dlq_topic(group)
            dlq = broker.topics.get(topic)
            if dlq is None:
                if registering is None:
                    return None
                before = broker.topics.data_version
                dlq = broker.topics.create_retry_or_dlq(topic, 1, Perm.READ | Perm.WRITE)
                register_created(broker, topic, before, registering)
            # as 4.9.3's handleRetryAndDLQ, the perm of an existing %DLQ% topic is not checked, and its
            # filter type, not the %RETRY% topic's, decides the dead letter's MULTI_TAGS flag
            tc = dlq
            queue_id = 0
            # no DELAY=0 here: 4.9.3's setDelayTimeLevel(0) goes to a properties map that the request's own
            # properties then replace, so the DELAY sent stays (a level > 0 schedules the dead letter first)
        elif queue_id >= tc.read_queue_nums:
            # a retry past the read queues (an admin left the %RETRY% topic fewer read queues than write ones,
            # or none) would never be consumed: put in a read queue, or refused when there is none (the
            # client keeps the message), as the send-back does (retry.py); 4.9.3 stores it there, unread
            if tc.read_queue_nums <= 0:
                return fail(ResponseCode.SYSTEM_ERROR,
                            f"the topic[{topic}] has no read queue: no consumer would ever get the retry")
            queue_id %= tc.read_queue_nums
            answer_queue_id = queue_id  # the queue it is in (our own move: no 4.9.3 answer to keep)

    if tc.topic_filter_type == "MULTI_TAG":
        sys_flag |= SysFlag.MULTI_TAGS
    props = parse_properties(properties) if properties else {}
    # TRAN_MSG makes a single message a half message (a batch's header property is not looked at: only its
    # sysFlag, refused by the store), except a retried one with a delay level: a committed message keeps
    # TRAN_MSG in its properties, and a Java client before 4.6.1 resends it so.  That exception is in 4.9.3's
    # sendMessage, which 4.9.3 never calls (its asyncSendMessage has none, and files such a resend as a half
    # message whose DELAY then parks it in the schedule topic, where it is dropped); 5.0 serves it so
    tran_msg = props.get(PropertyName.TRAN_MSG)
    half = not batch and tran_msg is not None and tran_msg.lower() == "true"  # Boolean.parseBoolean
    # 4.9.3's CommitLog reads DELAY with Integer.parseInt: text that is not a Java int ("1.5", "2 ") throws,
    # and the send is answered SYSTEM_ERROR (neither stored at once nor scheduled); a batch's own DELAY (the
    # header's) is read so too, after its own checks below
    delay_text = props.get(PropertyName.DELAY)
    delay_problem = java_int_problem(delay_text)
    if half and reconsume_times > 0 and delay_problem is None and int(delay_text or 0) > 0:
        half = False
    if half and config.reject_transaction_message:
        return fail(ResponseCode.NO_PERMISSION,
                    f"the broker[{config.advertised_ip()}] sending transaction message is forbidden")
    if delay_problem is not None and not batch:
        return fail(ResponseCode.SYSTEM_ERROR, delay_problem)
    born_host = peer_host(conn)
    store_host = broker.store_host
    wait = props.get(PropertyName.WAIT)
    # MessageExt.isWaitStoreMsgOK: no WAIT is true, else Boolean.parseBoolean ("TRUE" true; "yes", "1" false)
    wait_durable = wait is None or wait == "true" or (wait != "false" and wait.lower() == "true")
    if batch:
        # (a batch to a %RETRY% or %DLQ% topic is stored as sent, as 4.9.3's asyncSendBatchMessage does: only
        # the Java client's batch() refuses %RETRY% topics; the broker's refusal came with 5.0)
        body = request.body
        if sys_flag & SysFlag.COMPRESSED and _is_batch(request):
            # rocketmq-client-cpp 1.2.x deflates a whole encoded batch past its compress threshold (4 MiB by
            # default) and flags it COMPRESSED.  4.9.3, which reads its "1" flag as false, stores the deflated
            # bytes as one message (its consumers get the encoded batch as one body); here it is inflated and
            # stored as its messages, as the uncompressed batches of that client are (see _is_batch)
            try:
                body = inflate_body(body, broker.store.config.max_message_size)
            except zlib.error:
                pass  # refused below as any batch body that does not decode
            else:
                sys_flag &= ~SysFlag.COMPRESSED
        if len(body) > broker.store.config.max_message_size:
            return fail(ResponseCode.MESSAGE_ILLEGAL, PUT_STATUS_REMARKS[PutMessageStatus.MESSAGE_ILLEGAL])
        if delay_problem is not None:
            # (4.9.3's putMessages reads the batch's DELAY, never an entry's: a level > 0 is MESSAGE_ILLEGAL)
            return fail(ResponseCode.SYSTEM_ERROR, delay_problem)
        # As RocketMQ 4.9.3's batch send: the header's properties as sent (WAIT too) plus CLUSTER become the
        # batch's own properties string, which the store appends to each entry's properties bytes as they
        # came (MessageExtBatchEncoder); the entries are not parsed here.
        props[PropertyName.CLUSTER] = config.broker_cluster_name
        try:
            message_batch = MessageBatch.from_body(
                topic, queue_id, body, batch_properties=encode_properties(props), sys_flag=sys_flag,
                born_timestamp=born_timestamp, born_host=born_host, store_host=store_host,
                reconsume_times=reconsume_times)
        except MessageDecodeError as exc:
            # 4.9.3's MessageExtBatchEncoder walks the body unchecked: an entry that runs past its end throws
            # (BufferUnderflowException, IndexOutOfBounds...) and the remoting layer answers SYSTEM_ERROR.
            # Properties that are not UTF-8 (which it would copy as they are) stay refused as illegal
            code = (ResponseCode.MESSAGE_ILLEGAL if isinstance(exc.__cause__, UnicodeDecodeError)
                    else ResponseCode.SYSTEM_ERROR)
            return fail(code, f"cannot decode the batch body: {exc}")
        return message_batch, queue_id, region, wait_durable
    # RocketMQ leaves WAIT out of the stored properties string (9 bytes a message) but still honours it
    peak = len(props) + (PropertyName.CLUSTER not in props)
    wait_text = props.pop(PropertyName.WAIT, None)
    props[PropertyName.CLUSTER] = config.broker_cluster_name
    if half:  # stored in the half topic until END_TRANSACTION (broker/transactions.py); WAIT stays, last
        if wait_text is not None:
            props[PropertyName.WAIT] = wait_text
        return (half_message(topic, queue_id, request.body, props, flag, sys_flag, born_timestamp, born_host,
                             store_host, reconsume_times), answer_queue_id, region, wait_durable)
    if (wait_text is not None and delay_text is not None and int(delay_text) > 0
            and sys_flag & SysFlag.TRANSACTION_MASK in (0, SysFlag.TRANSACTION_COMMIT_TYPE)):
        # 4.9.3 puts WAIT back into the map before its store moves a delayed message to the schedule topic
        # and serialises that map again (REAL_TOPIC, REAL_QID added): the scheduled record, and the message
        # delivered from it, keep WAIT (delay_problem is None here: DELAY is a Java int)
        props[PropertyName.WAIT] = wait_text
    elif wait_text is not None and peak > 12:
        # 4.9.3 adds CLUSTER before it drops WAIT: the map it serialises had one entry more at its peak,
        # which for 13, 25, 49 ... entries doubled its table (a default HashMap of 16 holds 12)
        props = PeakProperties.after_removal(props, peak)
    return (_new_message(topic, request.body, props, queue_id, flag, sys_flag, born_timestamp, born_host,
                         store_host, reconsume_times), answer_queue_id, region, wait_durable)


def check_topic_and_queue(broker: Broker, conn: Connection, topic: str, default_topic: str,
                          default_topic_queue_nums: int, queue_id: int, unit_mode: bool
                          ) -> tuple[TopicConfig, int, None] | tuple[None, int, str]:
    """4.9.3's msgCheck for a send or a reply: an order topic refused while the broker is not writable, the
    topic's name, SCHEDULE_TOPIC_XXXX refused, a missing
    topic created from the request's default topic (a %RETRY% one as a retry topic), the queue id checked,
    a negative one picked at random among the writable queues.  (topic config, queue id, None), or (None,
    response code, remark) to refuse the request with."""
    if not broker.config.broker_permission & Perm.WRITE:
        # a broker whose write perm was wiped still takes sends (clients steer clear of it by the route), but
        # not to an order topic, whose messages would then go to some other queue than their key's
        ordered = broker.topics.get(topic)
        if ordered is not None and ordered.order:
            return None, ResponseCode.NO_PERMISSION, \
                f"the broker[{broker.config.advertised_ip()}] sending message is forbidden"
    problem = topic_problem(topic)
    if problem is not None:
        return None, ResponseCode.SYSTEM_ERROR, problem
    if topic == SCHEDULE_TOPIC:
        # (TopicValidator.isNotAllowedSendTopic's remark, capital and full stop as 4.9.3 writes it)
        return None, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
    tc = broker.topics.get(topic)
    if tc is None:
        # TopicSysFlag.buildSysFlag: a unit-mode send makes a %RETRY% topic a unit-sub one (FLAG_UNIT_SUB, 2),
        # any other a unit one (FLAG_UNIT, 1)
        topic_sys_flag = (2 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 1) if unit_mode else 0
        before = broker.topics.data_version
        tc = broker.topics.create_for_send(topic, default_topic, default_topic_queue_nums, topic_sys_flag)
        if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            tc = broker.topics.create_retry_or_dlq(topic, 1, Perm.READ | Perm.WRITE, topic_sys_flag)
        if tc is None:
            return None, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{_FAQ}"
        # registered alone (4.9.3 sends its whole table, oneway, per created topic: here that was a whole
        # table encoded, sent and decoded per send, most of the time 2,000 auto-created topics took); not
        # waited for, as 4.9.3's oneway is not
        broker.topic_config_changed(topic, before)
    write_queue_nums = tc.write_queue_nums
    if queue_id >= write_queue_nums and queue_id >= tc.read_queue_nums:
        return None, ResponseCode.SYSTEM_ERROR, (f"request queueId[{queue_id}] is illegal, "
                                                 f"{_java_topic_config_text(tc)} Producer: {conn.peer_address}")
    if queue_id < 0:
        if write_queue_nums <= 0:
            return None, ResponseCode.SYSTEM_ERROR, f"topic[{topic}] has no writable queue"
        queue_id = random.randrange(write_queue_nums)
    return tc, queue_id, None


def _java_topic_config_text(tc: TopicConfig) -> str:
    """*tc* as 4.9.3's TopicConfig.toString writes it into a remark (the perm as PermName.perm2String writes
    it; order as Java's boolean)."""
    return (f"TopicConfig [topicName={tc.topic_name}, readQueueNums={tc.read_queue_nums}, writeQueueNums="
            f"{tc.write_queue_nums}, perm={Perm.to_string(tc.perm)}, topicFilterType={tc.topic_filter_type}, topicSysFlag="
            f"{tc.topic_sys_flag}, order={'true' if tc.order else 'false'}]")


class _MessageSlots(HasTagsAndKeys):
    """Message's slots without its frozen ``__setattr__`` (as message.record_decode builds StoredMessage):
    _new_message fills one with plain attribute stores and then sets its ``__class__`` to Message, which
    CPython allows because the two slot layouts (and bases) are the same; the result is an ordinary Message."""

    __slots__ = Message.__slots__


if len(dataclasses.fields(Message)) != 12:  # _new_message must set every field
    raise AssertionError(f"Message fields changed: {Message.__slots__}")
_new = object.__new__


def _new_message(topic: str, body: bytes, properties: dict[str, str], queue_id: int, flag: int, sys_flag: int,
                 born_timestamp: int, born_host: HostAddress | None, store_host: HostAddress | None,
                 reconsume_times: int) -> Message:
    """``Message(topic, ..., reconsume_times)`` (the later fields at their defaults) with the slots filled
    directly (see :class:`_MessageSlots`): the frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` by name, several times the cost, once per send.  tests/unit/broker/test_send_answer.py
    holds the two equal."""
    message: Any = _new(_MessageSlots)
    message.topic = topic
    message.body = body
    message.properties = properties
    message.queue_id = queue_id
    message.flag = flag
    message.sys_flag = sys_flag
    message.born_timestamp = born_timestamp
    message.born_host = born_host
    message.store_host = store_host
    message.reconsume_times = reconsume_times
    message.prepared_transaction_offset = 0
    message.store_timestamp = None
    message.__class__ = Message
    return message  # type: ignore[no-any-return]


def _is_batch(request: RemotingCommand) -> bool:
    """The batch flag when the header's own reading (Boolean.parseBoolean) said false.
    rocketmq-client-cpp (1.2.x and 2.x) writes it with ``UtilAll::to_string(bool)``, i.e. ``"1"``, which
    Java's Boolean.parseBoolean reads as false; we take ``"1"`` as true so C++ batches are stored as their
    messages, not as one message holding the encoded batch."""
    raw = request.ext_fields.get("m" if request.code in _V2_CODES else "batch")
    return raw is not None and raw.strip() == "1"


#: 4.9.3's answer to a batch whose body fits maxMessageSize but whose stored records do not (one of them, or
#: all together, once each has the topic, the hosts and the batch's properties): MessageExtBatchEncoder throws
#: RuntimeException("message size exceeded") and the remoting layer answers SYSTEM_ERROR with its text
_BATCH_SIZE_EXCEEDED = "java.lang.RuntimeException: message size exceeded"


def _batch_size_refusal(broker: Broker, request: RemotingCommand, batch: MessageBatch,
                        region: dict[str, str]) -> RemotingCommand | None:
    """The SYSTEM_ERROR answer when the store refused *batch* (MESSAGE_ILLEGAL) for the size of its records, as
    4.9.3 answers it; None for any other refusal.  Only called for a refused batch: no cost on a stored one."""
    limit = broker.store.config.max_message_size
    topic_bytes = len(batch.topic.encode("utf-8", "surrogatepass"))
    suffix_bytes = len(batch.batch_properties.encode("utf-8", "surrogatepass"))
    own = broker.store_host
    born = batch.born_host or own
    stored = batch.store_host or own
    born_v6 = born is not None and len(born.ip) == 16
    store_v6 = stored is not None and len(stored.ip) == 16
    total = 0
    for body, props in zip(batch.bodies, batch.properties):
        props_bytes = len(props)
        if suffix_bytes:
            # the batch's properties follow the entry's, after a separator unless it has none or ends with one
            props_bytes += suffix_bytes + (1 if props and not props.endswith(b"\x02") else 0)
        size = record_size(len(body), topic_bytes, props_bytes, born_v6, store_v6)
        total += size
        if size > limit or total > limit:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=_BATCH_SIZE_EXCEEDED,
                                         ext_fields=region)
    return None


def peer_host(conn: Connection) -> HostAddress | None:
    """The connection's peer as a record host, parsed once per connection (IPv4-mapped IPv6 -> IPv4)."""
    host = conn.attributes.get("born_host")
    if host is None:
        try:
            host = parse_host(conn.peer)
        except MessageError:
            return None
        conn.attributes["born_host"] = host
    return host  # type: ignore[return-value]


def disk_util(store_config: StoreConfig) -> str:
    """4.9.3's SendMessageProcessor.diskUtil: the used share of the commitlog's, the consume queues' and
    the index's partitions, as the SERVICE_NOT_AVAILABLE remark names them (-1.00: a directory not made)."""
    return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*(disk_used_ratio(path) for path in (
        store_config.commit_log_dir, store_config.consume_queue_dir, store_config.index_dir)))


def _answer(request: RemotingCommand, result: PutResult, queue_id: int, region: dict[str, str],
            store_config: StoreConfig | None = None) -> RemotingCommand:
    """The answer to a send; *store_config*: the running store's, whose disks a SERVICE_NOT_AVAILABLE names."""
    code = _CODE_FOR_STATUS.get(result.status)
    if code is None:
        code = response_code_for_put_status(result.status.name)
    if code not in _SUCCESS_LIKE:
        remark = PUT_STATUS_REMARKS.get(result.status, "UNKNOWN_ERROR DEFAULT")
        if result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and store_config is not None and remark:
            remark = remark.replace("[unknown]", f"[{disk_util(store_config)}]")
        return request.make_response(code, remark=remark, ext_fields=region)
    # queueId is the queue asked for (a delayed message really went to SCHEDULE_TOPIC_XXXX); queueOffset is
    # where it was written, as the Java broker answers
    # SendMessageResponseHeader(...).to_ext_fields() written out (a frozen dataclass per send costs more
    # than the rest of this function); tests/unit/broker/test_send_answer.py holds them equal
    ext = {"msgId": result.msg_id, "queueId": str(queue_id), "queueOffset": str(result.queue_offset),
           "MSG_REGION": region["MSG_REGION"], "TRACE_ON": region["TRACE_ON"]}
    return request.make_response(code, ext_fields=ext)

