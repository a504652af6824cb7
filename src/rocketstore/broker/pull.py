"""PULL_MESSAGE (11): the 4.9.3 PullMessageProcessor's checks, status mapping and long polling.

Checks in RocketMQ's order (remoting.md section 5.2); the subscription comes from the request when its
sysFlag has the subscription bit (C++ and ali-ons always), else from the group's heartbeat (Java).  Tag
codes are rebuilt from the tag strings, because the C++ client's heartbeat codeSet holds ``atoi(tag)``.

SQL92 subscriptions (``enablePropertyFilter=true``; else SYSTEM_ERROR) are filtered inside the store's read
loop by the records' properties, as 4.9.3's ExpressionMessageFilter.isMatchedByCommitLog does: a skipped
message counts toward nothing but nextBeginOffset, and a scan that matched nothing answers
NO_MATCHED_MESSAGE (PULL_RETRY_IMMEDIATELY).  The expression is compiled once per text (sql_filter's cache).
A bad one: from the request (subscription flag) SUBSCRIPTION_PARSE_FAILED; from the heartbeat
FILTER_DATA_NOT_EXIST (4.9.3 keeps no filter data for an expression that did not compile).  Deliberately
unlike 4.9.3, whose request path then runs with no filter at all (an ``assert`` that production JVMs skip),
a request whose expression does not compile is refused.  A held SQL92 pull wakes only for an arriving
message that matches (or at the periodic check, as in 4.9.3).

Retry topics (4.9.3's ``filterSupportRetry``, off by default).  Off: a pull of ``%RETRY%<group>`` is filtered
by its own subscription only, which consumers make ``*``, so every retry message comes back.  On: as 4.9.3's
ExpressionForRetryMessageFilter, each record of a ``%RETRY%<group>`` pull is also checked against what
``<group>`` (from the topic's name) subscribes to on the message's original topic (its RETRY_TOPIC
property): an SQL92 subscription delivers it only if the expression is TRUE for the record's properties,
the original's plus what the retry added (RETRY_TOPIC, ORIGIN_MESSAGE_ID, DELAY, REAL_TOPIC, REAL_QID); a
TAG subscription, no subscription or one that does not compile lets it through.  The subscription is the
group's current one from its heartbeats, so a retry given back under an older expression meets the new one.
Differences kept on purpose: 4.9.3 reads the expression from its ConsumerFilterManager, which keeps a
topic's last SQL92 expression for filterDataCleanTimeSpan (a day) after the group drops the topic, and
keeps it when the group turns to a TAG subscription; this broker keeps no such table, so those retries
pass.  A retry record without RETRY_TOPIC (written to the retry topic by hand) passes, where 4.9.3's look-up
by a null topic throws and the pull fails.

consumeBroadcastEnable=false refuses every pull of a group its heartbeats register as BROADCASTING with
NO_PERMISSION "the consumer group[<g>] can not consume by broadcast way", with or without the subscription
bit.  Deliberately unlike 4.9.3, which checks the switch only on pulls without that bit (Java push
consumers'), so that lite pull consumers and the C++ and Python clients, which always send their
subscription, got through; only a group whose config has the switch off pays the look-up.

GetMessageStatus -> response code: FOUND 0; NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING 20; NO_MESSAGE_IN_QUEUE /
NO_MATCHED_LOGIC_QUEUE 21 if the requested offset is not 0, else 19; OFFSET_FOUND_NULL / OFFSET_OVERFLOW_ONE 19;
OFFSET_OVERFLOW_BADLY / OFFSET_TOO_SMALL 21.  An offset past the consume queue that the commitlog holds for the
queue (written, not dispatched yet: a consumer that read it from a slave ahead of this master) is the store's
OFFSET_OVERFLOW_ONE in place (store/reads.py), so 19 with the requested offset, where 4.9.3 corrects it (to 0
while the queue keeps its first message) and the consumer reads the queue again.  A 19 with the suspend bit
waits (long polling) until a message for the queue is dispatched or ``suspendTimeoutMillis`` passes, then runs
once more without suspension, every check again (4.9.3's executeRequestWhenWakeup), so a topic deleted
meanwhile is answered TOPIC_NOT_EXIST.
The commit-offset bit stores ``commitOffset`` for the group whatever the outcome.

Statistics (broker_stats.py): every store get counts as found or missed (with its time and the messages
handed out); a pull answered with messages adds to GROUP_GET_NUMS / GROUP_GET_SIZE / BROKER_GET_NUMS and
its time (from the request, or from the end of a long-poll wait, to the answer) to GROUP_GET_LATENCY, as
4.9.3's PullMessageProcessor counts them.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from rocketstore.broker.reply import java_socket_text
from rocketstore.broker.topics import (
    OFFSET_MOVED_EVENT,
    RETRY_GROUP_TOPIC_PREFIX,
    group_problem,
    topic_problem,
)
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message
from rocketstore.message.sql_filter import SQL92, SqlFilter, SqlSyntaxError, compile_sql
from rocketstore.remoting.bodies import MessageModel, Perm, SubscriptionData, build_subscription
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.store.config import BrokerRole
from rocketstore.store.results import GetMessageStatus, GetResult

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker
    from rocketstore.broker.clients import ConsumerGroupInfo

__all__ = ["PullSysFlag", "pull_message", "register", "response_code_for_get_status", "retry_matcher"]

#: what the store's read loop asks of each record when a pull filters by properties
PropertyMatch = Callable[[Mapping[str, str]], bool]

_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
_LONG_MAX = (1 << 63) - 1
#: getMessage statuses whose next offset 4.9.3 corrects through nextOffsetCorrection (a master's only)
_CORRECTED_ON_MASTERS_ONLY = frozenset({
    GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.OFFSET_OVERFLOW_BADLY, GetMessageStatus.OFFSET_FOUND_NULL})


class PullSysFlag:
    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10


def register(router: RequestRouter, broker: Broker) -> None:
    # pull_message itself, without a wrapping coroutine: one frame less per pull (and per parked pull)
    router.add(RequestCode.PULL_MESSAGE, functools.partial(pull_message, broker))


def response_code_for_get_status(status: GetMessageStatus, requested_offset: int) -> int:
    if status is GetMessageStatus.FOUND:
        return ResponseCode.SUCCESS
    if status in (GetMessageStatus.MESSAGE_WAS_REMOVING, GetMessageStatus.NO_MATCHED_MESSAGE):
        return ResponseCode.PULL_RETRY_IMMEDIATELY
    if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        return ResponseCode.PULL_OFFSET_MOVED if requested_offset != 0 else ResponseCode.PULL_NOT_FOUND
    if status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):
        return ResponseCode.PULL_NOT_FOUND
    return ResponseCode.PULL_OFFSET_MOVED  # OFFSET_OVERFLOW_BADLY, OFFSET_TOO_SMALL


async def pull_message(broker: Broker, conn: Connection, request: RemotingCommand, *,
                       allow_suspend: bool = True) -> RemotingCommand:
    """Answer one PULL_MESSAGE.  *allow_suspend* False is 4.9.3's run of a held pull once woken (or timed
    out): every check again, no further wait, no offset commit."""
    began_ns = time.monotonic_ns()
    h = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
    cfg = broker.config

    def fail(code: int, remark: str) -> RemotingCommand:
        return request.make_response(code, remark=remark)

    if not Perm.readable(cfg.broker_permission):
        return fail(ResponseCode.NO_PERMISSION, f"the broker[{cfg.advertised_ip()}] pulling message is forbidden")
    # before find_or_create: a bad group name must not be auto-created into subscriptionGroup.json
    problem = group_problem(h.consumer_group) or topic_problem(h.topic)
    if problem is not None:
        return fail(ResponseCode.SYSTEM_ERROR, problem)
    group_cfg = broker.groups.find_or_create(h.consumer_group)
    if group_cfg is None:
        return fail(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                    f"subscription group [{h.consumer_group}] does not exist, {_FAQ}")
    if not group_cfg.consume_enable:
        return fail(ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}")
    has_suspend = bool(h.sys_flag & PullSysFlag.SUSPEND)
    has_commit = bool(h.sys_flag & PullSysFlag.COMMIT_OFFSET)
    has_subscription = bool(h.sys_flag & PullSysFlag.SUBSCRIPTION)
    tc = broker.topics.get(h.topic)
    if tc is None:
        return fail(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please! {_FAQ}")
    if not Perm.readable(tc.perm):
        return fail(ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] pulling message is forbidden")
    if h.queue_id < 0 or h.queue_id >= tc.read_queue_nums:
        return fail(ResponseCode.SYSTEM_ERROR,
                    f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                    f"[{tc.read_queue_nums}] consumer:[{java_socket_text(None, conn.peer)}]")
    info: ConsumerGroupInfo | None = None
    if has_subscription:
        if _unparsable_subscription(h.subscription or "", h.expression_type or "TAG"):
            return fail(ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
    else:
        info = broker.clients.group(h.consumer_group)
        if info is None:
            return fail(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                        f"the consumer's group info not exist{_FAQ}")
    if not group_cfg.consume_broadcast_enable:  # (with the subscription bit too: see the module's docstring)
        if info is None:
            info = broker.clients.group(h.consumer_group)
        if info is not None and info.message_model == MessageModel.BROADCASTING:
            return fail(ResponseCode.NO_PERMISSION,
                        f"the consumer group[{h.consumer_group}] can not consume by broadcast way")
    if has_subscription:
        sub = build_subscription(h.topic, h.subscription, h.sub_version, h.expression_type)
    else:
        assert info is not None
        found = info.subscriptions.get(h.topic)
        if found is None:
            return fail(ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist{_FAQ}")
        if found.sub_version < h.sub_version:
            return fail(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        sub = found
        if sub.expression_type != "TAG" and _sql_filter(sub) is None:  # the heartbeat's did not compile
            return fail(ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!")
    if sub.expression_type != "TAG" and not cfg.enable_property_filter:
        return fail(ResponseCode.SYSTEM_ERROR,
                    f"The broker does not support consumer to filter message by {sub.expression_type}")
    codes: frozenset[int] | None = None
    match: PropertyMatch | None = None
    if sub.class_filter_mode:
        pass  # 4.9.3's filters pass everything for a classFilterMode subscription (its class filters)
    elif sub.expression_type == "TAG":
        codes = None if sub.matches_all else sub.tag_codes()
    else:
        match = _sql_filter(sub)
        if match is None:
            return fail(ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
    if (cfg.filter_support_retry and h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            and not sub.class_filter_mode):
        # the original topic's subscription decides, in place of the retry topic's own expression (its tag
        # codes, from the consume queue, still apply)
        match = retry_matcher(broker, h.topic[len(RETRY_GROUP_TOPIC_PREFIX):])

    result = _get(broker, h, codes, match)
    slave = broker.store_config.broker_role == BrokerRole.SLAVE
    # the commit offset rides on the original request only, whatever the pull finds; a slave takes its
    # offsets from the master (slave_sync.py), never from pulls
    if has_commit and not slave and allow_suspend:
        broker.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
    code = response_code_for_get_status(result.status, h.queue_offset)
    if code == ResponseCode.PULL_NOT_FOUND and has_suspend and allow_suspend:
        timeout_ms = h.suspend_timeout_ms if cfg.long_polling_enable else cfg.short_polling_time_ms
        if timeout_ms > _LONG_MAX - int(time.time() * 1000):
            # 4.9.3's hold service computes the deadline as now + timeout in a long: past 2^63-1 it wraps
            # negative and the pull's time has run out (answered at its next check, not held forever)
            timeout_ms = 0
        # a parked pull does not hold one of the connection's in-flight slots; one past the connection's
        # limit of parked requests is answered now (serving.DEFAULT_MAX_PARKED)
        if conn.park():
            del result, fail, sub  # not kept while it waits (the woken pull reads everything again)
            try:
                await broker.pull_hold.wait(h.topic, h.queue_id, h.queue_offset, codes, timeout_ms / 1000,
                                            match=_arrival_matcher(broker, h, match))
            finally:
                conn.unpark()
            if conn.holding_back:  # the peer is not reading its answers: this one waits its turn too
                await conn.wait_turn()
            # 4.9.3's executeRequestWhenWakeup runs the whole request again (its time starts anew): a topic
            # deleted, a group disabled or a subscription dropped while it waited is answered as such, not
            # read as an empty queue (which, at an offset past 0, sent the consumer back to 0 with
            # OFFSET_MOVED)
            return await pull_message(broker, conn, request, allow_suspend=False)
    # slaveReadEnable: a consumer reading beyond the in-memory share of the commitlog is sent to
    # whichBrokerWhenConsumeSlowly (a slave, so the master's page cache keeps the recent messages), any other
    # stays where the group says (brokerId); without it consumers are sent to the master
    if not cfg.slave_read_enable:
        suggest = 0
    elif result.suggest_pulling_from_slave:
        suggest = group_cfg.which_broker_when_consume_slowly
    else:
        suggest = group_cfg.broker_id
    if code == ResponseCode.PULL_OFFSET_MOVED:
        if slave:  # no correction on a slave (offsetCheckInSlave false): try again where the group says
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            suggest = group_cfg.broker_id
        else:
            _offset_moved_event(broker, h, result)
    next_begin_offset = result.next_begin_offset
    if slave and result.status in _CORRECTED_ON_MASTERS_ONLY:
        # nextOffsetCorrection: a slave (offsetCheckInSlave false) keeps the requested offset, so a consumer
        # ahead of a lagging slave waits there instead of being sent back (to 0, for OFFSET_OVERFLOW_BADLY
        # with minOffset 0), which clients do with a PULL_RETRY_IMMEDIATELY's nextBeginOffset
        next_begin_offset = h.queue_offset
    ext = PullMessageResponseHeader(suggest_which_broker_id=suggest, next_begin_offset=next_begin_offset,
                                    min_offset=result.min_offset, max_offset=result.max_offset).to_ext_fields()
    body = b""
    if code == ResponseCode.SUCCESS:
        body = b"".join(result.records)
        broker.stats.pulled(h.consumer_group, h.topic, result.message_count, len(body),
                            (time.monotonic_ns() - began_ns) // 1_000_000, queue_id=h.queue_id)
    return request.make_response(code, remark=result.status.name, ext_fields=ext, body=body)


def _unparsable_subscription(expression: str, expression_type: str) -> bool:
    """What 4.9.3's FilterAPI.build throws for (SUBSCRIPTION_PARSE_FAILED): an empty expression of a type
    other than TAG (a blank one builds, and fails later as one that does not compile), and a TAG expression
    of ``||`` pairs only (``||``, ``||||``), which Java's split (trailing empty strings dropped) cuts into no
    piece at all ("subString split error"); `` || `` cuts into blank pieces and builds, naming no tag."""
    if expression_type != "TAG":
        return not expression
    return bool(expression) and not expression.replace("||", "")


def _sql_filter(sub: SubscriptionData) -> SqlFilter | None:
    """The compiled filter of an SQL92 subscription (cached by text), None if it does not compile or the
    type is not one this broker knows (4.9.3 has SQL92 only)."""
    if sub.expression_type != SQL92:
        return None
    try:
        return compile_sql(sub.sub_string)
    except SqlSyntaxError:
        return None


def retry_matcher(broker: Broker, group: str) -> PropertyMatch:
    """filterSupportRetry's check of one ``%RETRY%<group>`` record by its properties: *group*'s current SQL92
    subscription of the record's RETRY_TOPIC decides; anything else (TAG or no subscription, an expression
    that does not compile, no RETRY_TOPIC) lets the record through."""
    def matches(properties: Mapping[str, str]) -> bool:
        original = properties.get(PropertyName.RETRY_TOPIC)
        info = broker.clients.group(group)
        sub = info.subscriptions.get(original) if info is not None and original is not None else None
        if sub is None or sub.expression_type == "TAG" or not sub.sub_string:
            return True
        compiled = _sql_filter(sub)
        return True if compiled is None else compiled.matches(properties)

    return matches


def _arrival_matcher(broker: Broker, h: PullMessageRequestHeader,
                     match: PropertyMatch | None) -> Callable[[int], bool] | None:
    """For a held SQL92 pull: does the message that arrived at a queue offset pass the filter (4.9.3's
    hold service evaluates the arriving message's properties before it wakes the pull)?"""
    if match is None:
        return None

    def arrived(queue_offset: int) -> bool:
        got = broker.store.get(h.topic, h.queue_id, queue_offset, 1, match=match)
        return got.status is GetMessageStatus.FOUND

    return arrived


def _get(broker: Broker, h: PullMessageRequestHeader, codes: frozenset[int] | None,
         match: PropertyMatch | None = None) -> GetResult:
    began_ns = time.monotonic_ns()
    result = broker.store.get(h.topic, h.queue_id, h.queue_offset, max(1, h.max_msg_nums), tags=codes,
                              match=match)
    broker.stats.store.got(result.status is GetMessageStatus.FOUND, result.message_count,
                           (time.monotonic_ns() - began_ns) // 1_000_000)
    return result


def _offset_moved_event(broker: Broker, h: PullMessageRequestHeader, result: GetResult) -> None:
    """Record the offset correction in OFFSET_MOVED_EVENT (tags = keys = the group), as a master does."""
    body = json.dumps({"consumerGroup": h.consumer_group,
                       "messageQueue": {"brokerName": broker.config.broker_name, "queueId": h.queue_id,
                                        "topic": h.topic},
                       "offsetNew": result.next_begin_offset, "offsetRequest": h.queue_offset},
                      separators=(",", ":")).encode()
    # 4.9.3 also sets delay level 0 on it: the record carries DELAY=0 (8 more bytes than without)
    message = Message.create(OFFSET_MOVED_EVENT, body, tags=h.consumer_group, keys=h.consumer_group,
                             properties={PropertyName.DELAY: "0"}, born_timestamp=int(time.time() * 1000),
                             store_host=broker.store_host, born_host=broker.store_host)
    began_ns = time.monotonic_ns()
    put = broker.store.put(message, flush="ask")  # under SYNC_FLUSH: asks for the sync, does not wait for it
    broker.count_put(put, began_ns)
