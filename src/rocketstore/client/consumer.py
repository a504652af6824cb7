"""A minimal async pull consumer: queues from the route, PULL_MESSAGE with explicit offsets (optionally long
polled), committed offsets on the broker, and the offset look-ups.

    async with PullConsumer("127.0.0.1:9876", "my-group") as consumer:
        for mq in await consumer.queues("TopicA"):
            result = await consumer.pull(mq, await consumer.committed_offset(mq, default=0))
            ...
            await consumer.commit_offset(mq, result.next_begin_offset)

Pulled records are decoded with the message package (compressed bodies are inflated) and re-filtered by
tag on the client, as RocketMQ clients do.  A pulled message whose body is flagged compressed but does not
inflate, one whose body fails its CRC and a record that does not decode at all are not a failed pull: the
result holds them apart (``PullResult.undecodable``), so the messages around them are still handed over and
``next_begin_offset`` goes past them.  A pull may select by SQL92 instead
(``expression=MessageSelector.by_sql("a > 5")``): the broker filters (it needs ``enablePropertyFilter=true``)
and the client does not filter again.  Loop-bound.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
import zlib
from dataclasses import dataclass
from typing import Self

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, ServiceState, broker_error_for, state_not_ok, state_of
from rocketstore.client.namespace import (
    queue_with_namespace,
    queues_without_namespace,
    with_namespace,
)
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.route import MessageQueue, RouteCache, answer_long, check, namesrv_addr_or_env
from rocketstore.errors import MessageDecodeError, RocketStoreError
from rocketstore.message.inflate import inflate_body
from rocketstore.message.names import group_problem
from rocketstore.message.record import QUEUE_OFFSET_POS, StoredMessage, SysFlag, decode_record
from rocketstore.message.record_decode import decode_records
from rocketstore.remoting.bodies import MASTER_ID, SubscriptionData, build_subscription
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketstore.remoting.tls import ClientTls, client_ssl_context
from rocketstore.remoting.transport import ConnectionPool, RequestHandler

__all__ = ["MessageSelector", "PullConsumer", "PullResult", "PullStatus", "UndecodableMessage",
           "decode_messages", "decode_pulled", "subscribed", "subscription_for"]

log = logging.getLogger(__name__)


class PullStatus:
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS: dict[int, str] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}

_SUBSCRIPTION = 0x4
_SUSPEND = 0x2
_COMMIT = 0x1


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """RocketMQ's MessageSelector: how a subscription selects messages, by tags (``TAG``, filtered by tag
    code on the broker and by tag on the client) or by an SQL92 expression over properties (``SQL92``,
    filtered by the broker only)."""

    expression_type: str
    expression: str

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        return cls("SQL92", sql)

    @classmethod
    def by_tag(cls, tag: str | None) -> MessageSelector:
        return cls("TAG", tag or "*")


def subscription_for(topic: str, expression: str | MessageSelector, sub_version: int = 0) -> SubscriptionData:
    """The subscription data a tag expression (a str) or a selector stands for.  ValueError for a tag
    expression of separators only (``"||"``), which 4.9.3's buildSubscriptionData refuses: the broker would
    match no tag code and the consumer wait forever without a word.  (An empty SQL92 one goes on to the
    broker, which refuses it with SUBSCRIPTION_PARSE_FAILED.)"""
    if isinstance(expression, MessageSelector):
        sub = build_subscription(topic, expression.expression, sub_version, expression.expression_type)
    else:
        sub = build_subscription(topic, expression, sub_version)
    if sub.names_no_tag:
        raise ValueError(f"the tag expression {sub.sub_string!r} of {topic} names no tag")
    return sub


def subscribed(topic: str, expression: str | MessageSelector, sub_version: int) -> SubscriptionData:
    """:func:`subscription_for` as a push or lite pull consumer's subscribe takes it: also ValueError for
    an empty expression of a type other than TAG (an SQL92 one), which 4.9.3's subscribe refuses
    (FilterAPI.build: "Expression can't be null!"); taken, the broker refused every pull of the topic and
    the consumer consumed nothing, for ever.  (A pull consumer's pull with one goes on to the broker,
    which answers SUBSCRIPTION_PARSE_FAILED.)"""
    if isinstance(expression, MessageSelector) and expression.expression_type != "TAG" \
            and not expression.expression:
        raise ValueError(f"the {expression.expression_type} expression of {topic} is empty")
    return subscription_for(topic, expression, sub_version)


@dataclass(frozen=True, slots=True)
class UndecodableMessage:
    """A pulled message that cannot be handed over as it was sent.  *problem* says which way: by default its
    body is flagged COMPRESSED but does not inflate (corrupt zlib data, or more than
    MAX_INFLATED_BODY_BYTES); or its body fails its CRC (bytes changed on disk after it was stored, which
    the recovery at open checks only at the commitlog's tail); or its record does not decode at all (a
    damaged header, topic or properties).  *message*: as stored (a compressed body still compressed), None
    for a record that does not decode, which is then placed by *mq* and *offset* instead; *reason*: the
    detail (zlib's words, the two CRCs, what the decoder found)."""

    message: StoredMessage | None
    reason: str
    problem: str = "has a body flagged compressed that does not inflate"
    mq: MessageQueue | None = None
    offset: int = -1

    @property
    def queue_offset(self) -> int:
        return self.message.queue_offset if self.message is not None else self.offset

    def describe(self) -> str:
        m = self.message
        if m is None:
            where = f"topic {self.mq.topic} queue {self.mq.queue_id}" if self.mq is not None else "the pull"
            return f"the record at offset {self.offset} of {where} {self.problem}: {self.reason}"
        return (f"the message at offset {m.queue_offset} of topic {m.topic} queue {m.queue_id} "
                f"(msgId {m.msg_id}) {self.problem}: {self.reason}")

    def error(self) -> MessageDecodeError:
        """The error of a caller that must not go past this message (a tool showing it, a batch job)."""
        return MessageDecodeError(self.describe())


#: UndecodableMessage.problem of a body whose CRC-32 is not the one its record holds
BODY_CRC_MISMATCH = "has a body that fails its CRC (damaged after it was stored)"
#: UndecodableMessage.problem of a record that does not decode
RECORD_DAMAGED = "does not decode (a damaged record)"
_QUEUE_OFFSET = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class PullResult:
    """A pull's answer.  *undecodable*: the messages found that cannot be handed over as sent (see
    :class:`UndecodableMessage`), left out of *messages*; *next_begin_offset* is past them.  4.9.3's
    MessageDecoder.decodes drops a message it cannot decode and, silently, every message after it in the
    pull (and hands over a body that fails its CRC as intact: it checks none); here the others are handed
    over and the bad ones named, so a caller that drives its own offsets can log, park or refuse them.  A
    typed error instead would withhold the good messages of the pull and leave the caller at an offset it
    can only pass by guessing, as the pull loops did before (stuck for good)."""

    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[StoredMessage]
    undecodable: tuple[UndecodableMessage, ...] = ()
    #: the broker's remark: the store's GetMessageStatus name (4.9.3's and ours), which tells the two answers
    #: NO_MATCHED_MSG stands for apart: NO_MATCHED_MESSAGE (filtered out) and MESSAGE_WAS_REMOVING (retention
    #: deleted the records the queue entries point at, before the queue's min offset moved past them)
    remark: str | None = None


def decode_pulled(body: bytes, mq: MessageQueue | None = None, first_offset: int = 0,
                  next_offset: int | None = None) -> tuple[list[StoredMessage], list[UndecodableMessage]]:
    """The records of a pull body (pulled from *first_offset* of *mq*; the broker's next offset
    *next_offset*), compressed bodies inflated, and apart those that cannot be handed over as sent: a body
    that fails its CRC or does not inflate, and a record that does not decode.  Where a record does not
    decode the records after it cannot be found in the body (its size may be what is damaged): decoding
    stops there, and the caller pulls again from the offset after it (UndecodableMessage.offset: the queue
    offset its header holds if that lies where the record must, else the offset after the last message
    decoded; the records after it come back in that pull).

    The CRC check (4.9.3's client checks none; its broker neither) costs about a fifth of the decode of
    1 KB bodies; without it a record damaged on disk would be handed over as if intact."""
    try:
        messages = decode_records(body)
    except MessageDecodeError:
        messages, broken = _decode_until_damaged(body, mq, first_offset, next_offset)
    else:
        broken = None
    undecodable: list[UndecodableMessage] = []
    bad_at: set[int] = set()
    crc32 = zlib.crc32
    for i, m in enumerate(messages):
        got = crc32(m.body) & 0x7FFFFFFF
        if got != m.body_crc:
            undecodable.append(UndecodableMessage(m, f"CRC {got:#x}, the record says {m.body_crc:#x}",
                                                  BODY_CRC_MISMATCH))
            bad_at.add(i)
        elif m.sys_flag & SysFlag.COMPRESSED:
            try:
                messages[i] = dataclasses.replace(m, body=inflate_body(m.body))
            except zlib.error as exc:
                undecodable.append(UndecodableMessage(m, str(exc)))
                bad_at.add(i)
    if bad_at:  # (rare: the list is only rebuilt then)
        messages = [m for i, m in enumerate(messages) if i not in bad_at]
    if broken is not None:
        undecodable.append(broken)
    return messages, undecodable


def _decode_until_damaged(body: bytes, mq: MessageQueue | None, first_offset: int,
                          next_offset: int | None) -> tuple[list[StoredMessage], UndecodableMessage | None]:
    """The records of *body* up to the first that does not decode, and that one (see decode_pulled)."""
    messages: list[StoredMessage] = []
    pos = 0
    while pos < len(body):
        try:
            m = decode_record(body, pos)
        except MessageDecodeError as exc:
            lowest = messages[-1].queue_offset + 1 if messages else first_offset
            offset = lowest
            if pos + QUEUE_OFFSET_POS + 8 <= len(body):
                held = _QUEUE_OFFSET.unpack_from(body, pos + QUEUE_OFFSET_POS)[0]
                if lowest <= held and (next_offset is None or held < next_offset):
                    offset = held  # (the broker skips entries a tag filter refuses: the header is more exact)
            return messages, UndecodableMessage(None, exc.reason, RECORD_DAMAGED, mq, offset)
        messages.append(m)
        pos += m.store_size
    return messages, None


def decode_messages(body: bytes) -> list[StoredMessage]:
    """The records of a pull / query body, compressed bodies inflated."""
    messages = decode_records(body)
    pos = 0
    for i, m in enumerate(messages):
        if m.sys_flag & SysFlag.COMPRESSED:
            try:
                messages[i] = dataclasses.replace(m, body=inflate_body(m.body))
            except zlib.error as exc:
                raise MessageDecodeError(f"compressed body does not inflate: {exc}", pos) from exc
        pos += m.store_size
    return messages


class PullConsumer:
    def __init__(self, namesrv_addr: str | None, group: str, *, timeout_s: float = 3.0,
                 handler: RequestHandler | None = None, credentials: SessionCredentials | None = None,
                 tls: ClientTls = None, mq_client_api_timeout_s: float | None = None,
                 namespace: str | None = None, namesrv_domain: str | None = None,
                 namesrv_domain_subgroup: str | None = None, unit_name: str | None = None) -> None:
        """*namesrv_addr*: ``host:port[;host:port]``; None: the environment variable ``NAMESRV_ADDR`` (as
        4.9.3's clients), else the address server *namesrv_domain* / *namesrv_domain_subgroup* name (as the
        Producer's; *unit_name*'s list there, ``<subgroup>-<unit_name>?nofix=1``).  *handler* answers
        requests the brokers send back on our connections (a push consumer's NOTIFY_CONSUMER_IDS_CHANGED); *credentials*: ACL access key and secret every request (name
        servers' too) is signed with; *tls*: this client's own TLS switch (4.9.3's useTLS; None follows
        the process, see :data:`rocketstore.remoting.tls.ClientTls`).  *mq_client_api_timeout_s* (Java's
        ClientConfig.mqClientApiTimeout) bounds each route look-up from the name servers, as 4.9.3's
        MQClientInstance (the group consumers pass theirs, 3 s by default); None: *timeout_s*, which the
        tools and the Spark source built on this class give for everything.  *timeout_s* bounds the
        requests to brokers that are given no bound of their own.
        *namespace* (4.9.3's ClientConfig.namespace on DefaultMQPullConsumer): the group is
        ``<namespace>%<group>`` on the wire, and the queues and messages given to the methods name their topic
        without it (``T``, ``%RETRY%<group>``): each goes on the wire in it, and what comes back (queues,
        pulled messages) names it without it again (see :mod:`rocketstore.client.namespace`).  The group
        consumers' inner one has none: their names are already wrapped."""
        if mq_client_api_timeout_s is None:
            mq_client_api_timeout_s = timeout_s
        if mq_client_api_timeout_s <= 0:
            raise ValueError("mq_client_api_timeout_s must be positive")
        #: the namespace, None for none (the one test each call makes then)
        self.namespace = namespace or None
        self.group = group if self.namespace is None else with_namespace(self.namespace, group)
        self.timeout_s = timeout_s
        self.pool = ConnectionPool(connect_timeout_s=timeout_s, handler=handler, credentials=credentials,
                                   ssl_context=client_ssl_context(tls))
        self.routes = RouteCache([a for a in namesrv_addr_or_env(namesrv_addr).split(";") if a], self.pool,
                                 timeout_s=mq_client_api_timeout_s, namesrv_domain=namesrv_domain,
                                 namesrv_domain_subgroup=namesrv_domain_subgroup, unit_name=unit_name)
        #: queue -> the broker id its last pull's answer suggested pulling from next (suggestWhichBrokerId:
        #: a slave when the master has slaveReadEnable and the consumer reads cold messages)
        self._pull_from: dict[MessageQueue, int] = {}
        self.started = False
        #: start() refused the group: for good START_FAILED (see service_state)
        self.start_failed = False
        self.closed = False

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def start(self) -> None:
        """Check the group as 4.9.3's DefaultMQPullConsumerImpl.start (Validators.checkGroup, not
        DEFAULT_CONSUMER): ClientError, and START_FAILED for good, for one it refuses.  Optional (nothing else
        starts: this consumer keeps no heartbeats; pulls work before it, as the tools use it); ``async with``
        calls it.  A second start raises 4.9.3's "The PullConsumer service state not OK, maybe started once,
        RUNNING" (SHUTDOWN_ALREADY once closed, START_FAILED after a failed start)."""
        self.check_startable()
        problem = group_problem(self.group)
        if problem is None and self.group == "DEFAULT_CONSUMER":  # MixAll.DEFAULT_CONSUMER_GROUP
            problem = "consumerGroup can not equal DEFAULT_CONSUMER, please specify another one."
        if problem is not None:
            self.start_failed = True
            raise ClientError(problem)
        self.started = True

    def check_startable(self) -> None:
        """ClientError unless :attr:`service_state` is CREATE_JUST, in 4.9.3's words for the PullConsumer."""
        state = self.service_state
        if state is not ServiceState.CREATE_JUST:
            cause = {ServiceState.RUNNING: "the pull consumer is already started",
                     ServiceState.SHUTDOWN_ALREADY: "the pull consumer is closed",
                     ServiceState.START_FAILED: "the first start of the pull consumer failed"}[state]
            raise ClientError(state_not_ok("PullConsumer", state, cause, started_once=True))

    @property
    def service_state(self) -> ServiceState:
        """4.9.3's getServiceState: CREATE_JUST until :meth:`start`, RUNNING after it, SHUTDOWN_ALREADY once
        closed, START_FAILED after a start that failed (for good, as in 4.9.3)."""
        return state_of(started=self.started, shut_down=self.closed, start_failed=self.start_failed)

    @property
    def is_running(self) -> bool:
        """:attr:`service_state` is RUNNING."""
        return self.service_state is ServiceState.RUNNING

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self.closed = True
        await self.routes.close()
        await self.pool.close()

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``) from now on (4.9.3's
        setNamesrvAddr on a running client; see :meth:`RouteCache.update_namesrv_addrs`)."""
        self.routes.update_namesrv_addrs(namesrv_addr)

    async def queues(self, topic: str) -> list[MessageQueue]:
        if self.namespace is not None:  # fetchSubscribeMessageQueues: the queues named without it
            wrapped = with_namespace(self.namespace, topic)
            return queues_without_namespace(
                self.namespace, RouteCache.subscribe_queues(wrapped, await self.routes.route(wrapped, refresh=True)))
        return RouteCache.subscribe_queues(topic, await self.routes.route(topic, refresh=True))

    async def _request(self, mq: MessageQueue, code: int, ext: dict[str, str], timeout_s: float | None = None,
                       *, oneway: bool = False) -> RemotingCommand | None:
        # the master, else (it is down) a slave: reads and offsets go on there, as RocketMQ's clients do
        addr = await self.routes.broker_addr(mq, master_only=False)
        request = RemotingCommand.request(code, ext, oneway=oneway)
        if oneway:
            await self.pool.oneway(addr, request)
            return None
        return await self.pool.request(addr, request, timeout_s or self.timeout_s)

    async def pull(self, mq: MessageQueue, offset: int, max_count: int = 32, *,
                   expression: str | MessageSelector = "*", suspend_ms: int = 0,
                   commit_offset: int | None = None, timeout_s: float | None = None,
                   close_if_timeout: bool = True) -> PullResult:
        """Pull from *offset*; with *suspend_ms* the broker holds the request until a message arrives.
        *expression*: a tag expression (``"TagA || TagB"``) or a :class:`MessageSelector`.  *timeout_s*:
        the bound of the request (4.9.3's pullKernelImpl timeoutMillis: consumerTimeoutMillisWhenSuspend for
        a long poll); None: *suspend_ms* plus the consumer's ``timeout_s``.  A pull that times out closes its
        connection, as 4.9.3's sync pulls do; not with *close_if_timeout* False (a push consumer's, async in
        4.9.3, which leaves the channel open).  Messages whose body fails its CRC
        or does not inflate, and a record that does not decode, come apart in ``undecodable`` (not logged
        here: the caller decides).  In a namespace the messages name their topic without it."""
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        sub = subscription_for(mq.topic, expression)
        # the broker the last answer suggested (the master, else any, when the route lacks it); a slave takes
        # no offset commit with a pull (4.9.3 clears the flag: offsets are the master's)
        addr, slave = await self.routes.subscribe_addr(mq, self._pull_from.get(mq, MASTER_ID))
        commit = commit_offset is not None and not slave
        sys_flag = _SUBSCRIPTION | (_SUSPEND if suspend_ms > 0 else 0) | (_COMMIT if commit else 0)
        header = PullMessageRequestHeader(
            consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=max_count, sys_flag=sys_flag, commit_offset=commit_offset or 0,
            suspend_timeout_ms=suspend_ms, subscription=sub.sub_string, sub_version=0,
            expression_type=sub.expression_type)
        if timeout_s is None:
            timeout_s = suspend_ms / 1000 + self.timeout_s
        response = await self.pool.request(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE,
                                                                         header.to_ext_fields()), timeout_s,
                                           close_if_timeout=close_if_timeout)
        status = _PULL_STATUS.get(response.code)
        if status is None:
            raise broker_error_for(response.code, response.remark)
        ext = response.ext_fields
        suggested = ext.get("suggestWhichBrokerId")
        if suggested is not None and suggested.lstrip("-").isdigit():
            self._pull_from[mq] = int(suggested)
        try:
            next_offset = int(ext.get("nextBeginOffset", offset))
            min_offset, max_offset = int(ext.get("minOffset", 0)), int(ext.get("maxOffset", 0))
        except ValueError:  # an answer that does not decode: a failed pull (4.9.3's onException), retried
            for name in ("nextBeginOffset", "minOffset", "maxOffset"):
                answer_long(response, name, 0)
            raise
        if status == PullStatus.FOUND and "nextBeginOffset" not in ext:
            # messages without the offset past them: taking *offset* would deliver them again and again
            answer_long(response, "nextBeginOffset")  # raises HeaderFieldError, as 4.9.3's decoding refuses it
        messages, undecodable = (decode_pulled(response.body, mq, offset, next_offset)
                                 if status == PullStatus.FOUND else ([], []))
        if undecodable and undecodable[-1].message is None:  # the records after it were not read: pull them
            next_offset = undecodable[-1].offset + 1
        if sub.tags_set:
            wanted = set(sub.tags_set)
            messages = [m for m in messages if m.tags in wanted]
            undecodable = [u for u in undecodable if u.message is None or u.message.tags in wanted]
        if self.namespace is not None and messages:  # resetTopic
            messages = queues_without_namespace(self.namespace, messages)
        return PullResult(status, next_offset, min_offset, max_offset, messages, tuple(undecodable),
                          response.remark)

    async def committed_offset(self, mq: MessageQueue, default: int = -1, *,
                               timeout_s: float | None = None) -> int:
        """The group's committed offset (the broker's QUERY_CONSUMER_OFFSET), or *default* if none;
        *timeout_s* bounds the request (None: the consumer's ``timeout_s``)."""
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = QueryConsumerOffsetRequestHeader(consumer_group=self.group, topic=mq.topic,
                                               queue_id=mq.queue_id).to_ext_fields()
        response = await self._request(mq, RequestCode.QUERY_CONSUMER_OFFSET, ext, timeout_s)
        assert response is not None
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return default
        return answer_long(check(response), "offset", default)

    async def commit_offset(self, mq: MessageQueue, offset: int, *, oneway: bool = False,
                            timeout_s: float | None = None) -> None:
        """UPDATE_CONSUMER_OFFSET; *timeout_s* bounds the request (None: the consumer's ``timeout_s``)."""
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = UpdateConsumerOffsetRequestHeader(consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id,
                                                commit_offset=offset).to_ext_fields()
        response = await self._request(mq, RequestCode.UPDATE_CONSUMER_OFFSET, ext, timeout_s, oneway=oneway)
        if response is not None:
            check(response)

    async def max_offset(self, mq: MessageQueue) -> int:
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext_fields()
        response = await self._request(mq, RequestCode.GET_MAX_OFFSET, ext)
        assert response is not None
        return answer_long(check(response), "offset")

    async def min_offset(self, mq: MessageQueue) -> int:
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext_fields()
        response = await self._request(mq, RequestCode.GET_MIN_OFFSET, ext)
        assert response is not None
        return answer_long(check(response), "offset")

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp_ms=timestamp_ms).to_ext_fields()
        response = await self._request(mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext)
        assert response is not None
        return answer_long(check(response), "offset")

    async def send_message_back(self, message: StoredMessage, broker_name: str, delay_level: int = 0, *,
                                max_reconsume_times: int = 16) -> None:
        """Give *message*, pulled from a queue of *broker_name*, back for a later retry, as 4.9.3's
        DefaultMQPullConsumer.sendMessageBack(msg, delayLevel, brokerName): CONSUMER_SEND_MSG_BACK to that
        broker, which stores it in ``%RETRY%<group>`` (*delay_level* 0: ``3 + reconsume times``), or in
        ``%DLQ%<group>`` once it was retried *max_reconsume_times* times (Java's pull consumer default, 16);
        should that fail, a copy is sent to the retry topic instead.  Pull ``%RETRY%<group>`` to get it
        back.  Raises the copy's error (BrokerError, RemotingError, NoRouteError) when both fail."""
        from rocketstore.client.send_back import resend_to_retry_topic, send_back  # (it imports this module)

        if self.namespace is not None:  # a message pulled here names its topic without it
            wrapped = with_namespace(self.namespace, message.topic)
            if wrapped != message.topic:
                message = dataclasses.replace(message, topic=wrapped)
        consumed = ConsumedMessage.from_stored(message, broker_name, self.group)
        try:
            await send_back(self, consumed, delay_level=delay_level, max_reconsume_times=max_reconsume_times)
            return
        except (RocketStoreError, OSError) as exc:
            log.warning("send-back of %s failed (%s); sending a copy to the retry topic", consumed.msg_id,
                        exc)
        await resend_to_retry_topic(self, consumed, reconsume_times=consumed.reconsume_times + 1,
                                    max_reconsume_times=max_reconsume_times)

    async def earliest_message_time(self, mq: MessageQueue) -> int:
        """The store time of the queue's oldest retained message, -1 if it has none (the broker's
        GET_EARLIEST_MSG_STORETIME, 4.9.3's MQAdmin.earliestMsgStoreTime)."""
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        ext = GetEarliestMsgStoretimeRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext_fields()
        response = await self._request(mq, RequestCode.GET_EARLIEST_MSG_STORETIME, ext)
        assert response is not None
        return answer_long(check(response), "timestamp")
