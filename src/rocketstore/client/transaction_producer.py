"""A transactional producer (RocketMQ's TransactionMQProducer): half messages, the local transaction that
decides them, and the answers to the broker's checks of transactions left undecided.

    def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        ...   # the local work; COMMIT_MESSAGE makes the message visible, ROLLBACK_MESSAGE drops it

    def check(message: TransactionMessage) -> LocalTransactionState:
        ...   # asked later by the broker when execute answered UNKNOW (or its answer was lost)

    async with TransactionProducer("127.0.0.1:9876", "tx-group", check) as producer:
        result = await producer.send_in_transaction("TopicA", b"order 7", execute, arg=order)

One transaction, in the order of the 4.9.3 Java client:

1. The message goes out as a half message: properties TRAN_MSG=true and PGROUP=<group>, the send header's
   sysFlag TRANSACTION_PREPARED (4), any DELAY property dropped (a half message is never delayed), by an
   ordinary synchronous send with the :class:`Producer`'s retries.  The broker parks it in its half topic,
   where no consumer sees it.
2. SEND_OK: ``execute(message, arg)`` decides (an exception, or None, counts as UNKNOW).  Any other send
   status (stored, but the flush or the slave failed) is a ROLLBACK without running ``execute``.
3. END_TRANSACTION goes oneway to the master that stored the half message: commit (8) has the broker write
   the message to its real topic, rollback (12) discards it, unknown (0) leaves it to the broker's check.
   Oneway: a lost END_TRANSACTION is repaired by the check, so nothing waits for an answer.
4. For a half message still undecided after ``transactionTimeOut``, the broker sends CHECK_TRANSACTION_STATE
   to one connection of the group; ``check(message)`` answers and END_TRANSACTION (fromTransactionCheck)
   goes back on that connection.

The broker only knows which connections belong to the group from heartbeats (HEART_BEAT with the group in
``producerDataSet``): one goes to every master as soon as a route shows it, then every
``heartbeat_interval_s``; close() unregisters.  Sync ``execute`` callables run on the event loop (the
caller's context, as Java runs them on the sending thread); sync ``check`` callables on one worker thread
(Java's single check thread), so a slow lookup does not stall the loop.  Async callables run on the loop.
At most ``check_request_hold_max`` checks wait besides the one being answered (4.9.3's checkRequestHoldMax,
the bound of its check thread's queue); a check arriving past that is dropped with a warning, as Java's
executor rejects it, and the broker asks again at its next check round.

Loop-bound.  Imports remoting and message only (never store, broker or namesrv).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Self

from rocketstore.client.consumer import decode_messages
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, ServiceState, state_not_ok
from rocketstore.client.latency_fault import DEFAULT_LATENCY_MAX, DEFAULT_NOT_AVAILABLE_DURATION
from rocketstore.client.namespace import with_namespace, without_namespace
from rocketstore.client.producer import DEFAULT_PRODUCER_GROUP, OutgoingMessage, Producer, SendResult
from rocketstore.client.request_producer import deliver_reply
from rocketstore.client.route import AUTO_CREATE_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, MessageQueue, RouteCache
from rocketstore.client.served_producer import ServedProducer
from rocketstore.errors import RocketStoreError
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import HasTagsAndKeys, PropertyName
from rocketstore.message.record import StoredMessage, SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.tls import ClientTls
from rocketstore.remoting.transport import Connection, ConnectionPool

__all__ = [
    "CheckListener",
    "LocalTransactionExecutor",
    "LocalTransactionState",
    "TransactionMessage",
    "TransactionProducer",
    "TransactionSendResult",
    "end_transaction_type",
    "half_message_properties",
]

log = logging.getLogger(__name__)

#: TransactionMQProducer.checkRequestHoldMax: the checks that may wait for the check listener
CHECK_REQUEST_HOLD_MAX = 2000


class LocalTransactionState(StrEnum):
    """What the local transaction decided; the names (UNKNOW included) are Java's."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


#: the commitOrRollback value END_TRANSACTION carries for each state (MessageSysFlag's transaction types)
_END_TYPES: dict[LocalTransactionState, int] = {
    LocalTransactionState.COMMIT_MESSAGE: SysFlag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: SysFlag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: SysFlag.TRANSACTION_NOT_TYPE,
}

#: the send statuses that mean "stored, but not as durably as asked": the transaction is rolled back
_ROLLBACK_STATUSES = frozenset({"FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"})


def end_transaction_type(state: LocalTransactionState) -> int:
    """END_TRANSACTION's commitOrRollback for *state*: 8 commit, 12 rollback, 0 unknown."""
    return _END_TYPES[state]


def as_state(value: object) -> LocalTransactionState:
    """A listener's answer as a state: None is UNKNOW (as Java treats a null); a state's name is accepted;
    anything else is a TypeError (the caller counts it as UNKNOW, like an exception)."""
    if value is None:
        return LocalTransactionState.UNKNOW
    if isinstance(value, LocalTransactionState):
        return value
    if isinstance(value, str) and value in LocalTransactionState.__members__:
        return LocalTransactionState[value]
    raise TypeError(f"a transaction listener answered {value!r}, not a LocalTransactionState")


def half_message_properties(group: str, properties: dict[str, str] | None) -> dict[str, str]:
    """The user properties of a half message: a copy of *properties* without DELAY (a delayed half
    message would be parked twice; Java clears it too) and with TRAN_MSG=true and PGROUP=*group*, by
    which the broker stores it as a half message and later finds the group to check it with."""
    props = dict(properties or {})
    props.pop(PropertyName.DELAY, None)
    props[PropertyName.TRAN_MSG] = "true"
    props[PropertyName.PGROUP] = group
    return props


@dataclass(frozen=True, slots=True)
class TransactionMessage(HasTagsAndKeys):
    """The message a listener decides on.  In ``execute`` it is the half message just stored
    (``stored`` None); in ``check`` it is the half message as the broker sent it back (``stored`` the
    decoded record, topic and queue id already the real ones)."""

    topic: str
    body: bytes
    #: the client's UNIQ_KEY (Java's transactionId, also SendResult.msg_id); None when the record has none
    transaction_id: str | None
    properties: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    stored: StoredMessage | None = None


#: ``execute(message, arg) -> LocalTransactionState`` (or an awaitable of one)
LocalTransactionExecutor = Callable[[TransactionMessage, Any], "LocalTransactionState | None | Awaitable[Any]"]
#: ``check(message) -> LocalTransactionState`` (or an awaitable of one)
CheckListener = Callable[[TransactionMessage], "LocalTransactionState | None | Awaitable[Any]"]


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """The half message's SendResult, the local state END_TRANSACTION carried, and the broker's
    transactionId from the send answer (4.9.3 brokers never set one: None)."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
    transaction_id: str | None = None


def end_header_after_send(group: str, result: SendResult, commit_log_offset: int, state: LocalTransactionState,
                          transaction_id: str | None) -> EndTransactionRequestHeader:
    """END_TRANSACTION's header right after a half message was sent: its queue offset and commitlog offset
    (from the offset message id) identify it to the broker, msgId is the UNIQ_KEY."""
    return EndTransactionRequestHeader(
        producer_group=group, tran_state_table_offset=result.queue_offset, commit_log_offset=commit_log_offset,
        commit_or_rollback=end_transaction_type(state), from_transaction_check=False, msg_id=result.msg_id,
        transaction_id=transaction_id)


def end_header_after_check(group: str, asked: CheckTransactionStateRequestHeader, message: StoredMessage,
                           state: LocalTransactionState) -> EndTransactionRequestHeader:
    """END_TRANSACTION's header answering a check: the offsets and transactionId the broker asked with;
    msgId the record's UNIQ_KEY, or its offset message id when it has none."""
    return EndTransactionRequestHeader(
        producer_group=group, tran_state_table_offset=asked.tran_state_table_offset,
        commit_log_offset=asked.commit_log_offset, commit_or_rollback=end_transaction_type(state),
        from_transaction_check=True, msg_id=message.uniq_key or message.msg_id,
        transaction_id=asked.transaction_id)


async def _call(fn: Callable[..., Any], *args: Any) -> LocalTransactionState:
    """Run a listener on the loop, awaiting what it returns if that is awaitable."""
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return as_state(value)


_PREPARED_TEXT = str(SysFlag.TRANSACTION_PREPARED_TYPE)


class _HalfMessageProducer(ServedProducer):
    """A ServedProducer whose every send is a half message: the header's sysFlag is TRANSACTION_PREPARED on
    each path a send takes (the frame template, the RemotingCommand built for large or signed bodies, the
    typed header) and the send answer becomes a TransactionSendResult.  The retry loop and the send path
    itself are the Producer's, unchanged."""

    def _header(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int, sys_flag: int = 0
                ) -> SendMessageRequestHeader:
        header = super()._header(topic, queue_id, properties, batch, flag, sys_flag)
        return dataclasses.replace(header, sys_flag=header.sys_flag | SysFlag.TRANSACTION_PREPARED_TYPE)

    def _ext_fields_v2(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int,
                       sys_flag: int = 0) -> dict[str, str]:
        ext = super()._ext_fields_v2(topic, queue_id, properties, batch, flag, sys_flag)
        # the Producer writes the send's sysFlag (0, or COMPRESSED); "f" keeps its place in the dict
        ext["f"] = str(sys_flag | SysFlag.TRANSACTION_PREPARED_TYPE) if sys_flag else _PREPARED_TEXT
        return ext

    @staticmethod
    def _result(response: RemotingCommand, msg_id: str, mq: MessageQueue) -> TransactionSendResult:
        r = Producer._result(response, msg_id, mq)
        return TransactionSendResult(r.status, r.msg_id, r.offset_msg_id, r.message_queue, r.queue_offset,
                                     r.region_id, r.trace_on, transaction_id=response.ext_fields.get("transactionId"))


class TransactionProducer:
    def __init__(self, namesrv_addr: str | None, group: str, check: CheckListener, *, timeout_s: float = 3.0,
                 retry_times: int = 2, heartbeat_interval_s: float = 30.0, instance_name: str | None = None,
                 credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None, tls: ClientTls = None,
                 mq_client_api_timeout_s: float = 3.0, check_request_hold_max: int = CHECK_REQUEST_HOLD_MAX,
                 route_refresh_interval_s: float = 30.0, client_ip: str | None = None,
                 namespace: str | None = None, send_latency_fault_enable: bool = False,
                 latency_max: Sequence[int] = DEFAULT_LATENCY_MAX,
                 not_available_duration: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION,
                 retry_another_broker_when_not_store_ok: bool = False, unit_name: str | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """*check*: answers the broker's checks of this group's undecided transactions (at most
        *check_request_hold_max* waiting besides the one answered, see the module docstring); *credentials*: ACL
        access key and secret every request (name servers' too) is signed with; *tls* and
        *mq_client_api_timeout_s* (the bound of route look-ups, heartbeats, unregistrations) and
        *route_refresh_interval_s* (how often the routes are re-read) as the Producer's;
        the client id is ``ip@instance_name`` (default ``pid#nanos``, unique per producer); *enable_trace*: trace the half
        messages' sends (Pub, Trans_Msg_Half) and each end of a transaction (EndTransaction) to
        *trace_topic* (default RMQ_SYS_TRACE_TOPIC), as TransactionMQProducer with enableMsgTrace.
        *client_ip* and *namespace* as the Producer's: in a namespace the group (PGROUP, END_TRANSACTION's
        producerGroup) and the topics are ``<namespace>%<name>`` on the wire, and ``execute`` and ``check``
        get the message named with the topic as given, without it (4.9.3's checkTransactionState
        resets the topic).  *send_latency_fault_enable*, *latency_max* and *not_available_duration* as the
        Producer's, for the half messages' sends (TransactionMQProducer's go through sendDefaultImpl too);
        so is *retry_another_broker_when_not_store_ok* (a half message's send that ends without SEND_OK
        still rolls back), and *unit_name* (the client id is then ``ip@instance_name@unit_name``),
        *create_topic_key* and *default_topic_queue_nums* (for a half message to a topic not created yet),
        and *namesrv_domain* / *namesrv_domain_subgroup* (the address server read with no name server
        address)."""
        if not group:
            raise ValueError("a transactional producer needs a group: the broker checks transactions by it")
        if check_request_hold_max < 0:
            raise ValueError("check_request_hold_max must not be negative")
        self.check_request_hold_max = check_request_hold_max
        #: the namespace (ClientConfig.namespace), None for none; the group is in it
        self.namespace = namespace or None
        self.group = with_namespace(self.namespace, group)
        self.check_listener = check
        call = getattr(check, "__call__", None)  # noqa: B004 - an object with an async __call__ counts
        self._check_is_async = inspect.iscoroutinefunction(check) or inspect.iscoroutinefunction(call)
        self.timeout_s = timeout_s
        self._sender = _HalfMessageProducer(namesrv_addr, group, self._serve, timeout_s=timeout_s,
                                            retry_times=retry_times, heartbeat_interval_s=heartbeat_interval_s,
                                            instance_name=instance_name, credentials=credentials,
                                            enable_trace=enable_trace, trace_topic=trace_topic, tls=tls,
                                            mq_client_api_timeout_s=mq_client_api_timeout_s,
                                            route_refresh_interval_s=route_refresh_interval_s,
                                            client_ip=client_ip, namespace=self.namespace,
                                            send_latency_fault_enable=send_latency_fault_enable,
                                            latency_max=latency_max,
                                            not_available_duration=not_available_duration,
                                            retry_another_broker_when_not_store_ok=(
                                                retry_another_broker_when_not_store_ok),
                                            unit_name=unit_name, create_topic_key=create_topic_key,
                                            default_topic_queue_nums=default_topic_queue_nums,
                                            namesrv_domain=namesrv_domain,
                                            namesrv_domain_subgroup=namesrv_domain_subgroup)
        self.client_id = self._sender.client_id
        self.heartbeat_interval_s = heartbeat_interval_s
        self.route_refresh_interval_s = route_refresh_interval_s
        self._checks: set[asyncio.Task[None]] = set()
        self._check_executor: ThreadPoolExecutor | None = None

    @property
    def started(self) -> bool:
        return self._sender.started

    @property
    def closed(self) -> bool:
        return self._sender.closed

    @property
    def start_failed(self) -> bool:
        return self._sender.start_failed

    @property
    def service_state(self) -> ServiceState:
        """As :attr:`Producer.service_state` (CREATE_JUST, RUNNING, SHUTDOWN_ALREADY, START_FAILED): 4.9.3's
        TransactionMQProducer is a DefaultMQProducer, whose state a refused start leaves START_FAILED."""
        return self._sender.service_state

    @property
    def is_running(self) -> bool:
        """Started and not closed (:attr:`service_state` RUNNING)."""
        return self._sender.is_running

    def check_startable(self) -> None:
        """As :meth:`Producer.check_startable`: ClientError once closed or after a failed start."""
        self._sender.check_startable()

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """As :meth:`Producer.update_namesrv_addr` (its trace producer follows too)."""
        self._sender.update_namesrv_addr(namesrv_addr)

    @property
    def pool(self) -> ConnectionPool:
        return self._sender.pool

    @property
    def routes(self) -> RouteCache:
        return self._sender.routes

    # --- life cycle ------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Heartbeat to the masters of the auto-create topic's route (where new topics go), and start the
        periodic heartbeats.  send_in_transaction starts a producer that was not started.  ClientError for
        the group DEFAULT_PRODUCER, as 4.9.3's checkConfig refuses it: every Producer made without a group
        heartbeats in it, and the broker sends a transaction's check to any producer of its group, so a plain
        one (which has no check listener) could take the checks of this one."""
        if self._sender.start_failed:  # START_FAILED for good after a refused start, as 4.9.3's
            self._sender.check_startable()
        if self.closed:  # DefaultMQProducerImpl.start's words for a producer shut down
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the transactional producer is closed",
                                           started_once=True))
        if self.group == DEFAULT_PRODUCER_GROUP:
            self._sender.start_failed = True  # DefaultMQProducerImpl.start's checkConfig fails after START_FAILED
            raise ClientError(f"producerGroup can not equal {DEFAULT_PRODUCER_GROUP}, please specify another one.")
        await self._sender.start()

    async def close(self) -> None:
        """Stop the heartbeats, let checks in progress answer (for up to ``timeout_s``), unregister the
        group from every broker heartbeated, close the connections."""
        if self.closed:
            return
        await self._sender.stop_heartbeats()
        if self._checks:
            _, pending = await asyncio.wait(set(self._checks), timeout=self.timeout_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self._sender.close()
        if self._check_executor is not None:
            self._check_executor.shutdown(wait=False, cancel_futures=True)

    # --- the transaction -------------------------------------------------------------------------------

    async def send_in_transaction(self, topic: str, body: bytes, execute: LocalTransactionExecutor,
                                  arg: object = None, *, tags: str | None = None,
                                  keys: str | list[str] | None = None,
                                  properties: dict[str, str] | None = None) -> TransactionSendResult:
        """Send a half message, run ``execute(message, arg)`` on SEND_OK, and end the transaction with
        its answer (oneway; a failure to send that is logged, the broker's check settles it).  A failed
        send raises (nothing was stored, nothing is executed)."""
        if not callable(execute):  # checked before anything is sent: Java refuses a missing executor too
            raise TypeError("send_in_transaction needs a callable execute(message, arg)")
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the transactional producer is closed"))
        if self._sender.start_failed:  # makeSureStateOK's words, as a send after a failed start hears them
            raise ClientError(state_not_ok("producer", "START_FAILED", "the first start of the producer failed"))
        if not self.started:
            await self.start()
        wire_topic = topic
        if self.namespace is not None:  # execute and the trace name the topic without the namespace
            wire_topic = with_namespace(self.namespace, topic)
            topic = without_namespace(self.namespace, wire_topic)
        await self._sender.quietly(f"route of {wire_topic}", self._sender.discover(wire_topic))
        props = half_message_properties(self.group, properties)
        result = await self._sender.send(wire_topic, body, tags=tags, keys=keys, properties=props)
        if not isinstance(result, TransactionSendResult):  # the sender's _result makes one; never expected
            raise TypeError(f"the half message's send answered {type(result).__name__}")
        state = LocalTransactionState.UNKNOW
        error: Exception | None = None
        if result.status == "SEND_OK":
            if result.transaction_id is not None:  # Java hands the broker's id to execute as a property
                props["__transactionId__"] = result.transaction_id
            sent = OutgoingMessage(body, tags, keys, props).property_map(result.msg_id)
            message = TransactionMessage(topic, body, result.msg_id,
                                         {k: v for k, v in sent.items() if v is not None})
            try:
                state = await _call(execute, message, arg)
            except Exception as exc:  # the local transaction's failure is its state, not the caller's error
                log.exception("local transaction of %s failed; its state is UNKNOW", result.msg_id)
                error = exc
        elif result.status in _ROLLBACK_STATUSES:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        trace = self._sender.trace
        if trace is not None:  # the transaction id is the UNIQ_KEY, as Java's msg.getTransactionId()
            store_host = self._sender.cached_master_addr(wire_topic, result.message_queue.broker_name) or ""
            keys_text = keys if isinstance(keys, str) or keys is None else " ".join(keys)
            trace.end_transaction(topic, tags=tags, keys=keys_text, properties=props, msg_id=result.msg_id,
                                  transaction_id=result.msg_id, store_host=store_host, state=state,
                                  from_transaction_check=False)
        await self._end_after_send(wire_topic, result, state, error)
        return dataclasses.replace(result, local_transaction_state=state)

    async def _end_after_send(self, topic: str, result: TransactionSendResult, state: LocalTransactionState,
                              error: Exception | None) -> None:
        try:
            # Java decodes the offset message id, falling back to msg_id (which then fails to decode)
            _, commit_log_offset = decode_offset_message_id(result.offset_msg_id or result.msg_id)
            addr = await self._sender.broker_addr(topic, result.message_queue.broker_name)
            header = end_header_after_send(self.group, result, commit_log_offset, state, result.transaction_id)
            remark = None if error is None else f"local transaction raised {type(error).__name__}: {error}"
            request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=True,
                                              remark=remark)
            await self.pool.oneway(addr, request, self.timeout_s)
        except (RocketStoreError, OSError) as exc:
            log.warning("END_TRANSACTION (%s) of %s not sent: %s", state, result.msg_id, exc)

    # --- checks from brokers ---------------------------------------------------------------------------

    async def _serve(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            self._start_check(connection, request)
            return None  # oneway; Java answers nothing even if it were not
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            # a RequestProducer given the same instance_name shares this client id, and the broker pushes
            # its replies to whichever of them heartbeated last (Java: one MQClientInstance handles both)
            return deliver_reply(request)
        return None if request.is_oneway else request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported")

    def _start_check(self, connection: Connection, request: RemotingCommand) -> None:
        """Decode a check and answer it in a task of its own (a listener may take its time; the
        connection's other requests and answers must not wait for it)."""
        if self.closed:
            return
        if len(self._checks) > self.check_request_hold_max:  # one answered, check_request_hold_max waiting
            log.warning("transaction check from %s dropped: %d checks already wait (check_request_hold_max)",
                        connection.peer_address, len(self._checks) - 1)
            return
        try:
            asked = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
            messages = decode_messages(request.body or b"")
        except RocketStoreError as exc:
            log.warning("undecodable transaction check from %s: %s", connection.peer_address, exc)
            return
        if not messages:
            log.warning("transaction check from %s without a message", connection.peer_address)
            return
        message = messages[0]
        group = message.properties.get(PropertyName.PGROUP)
        if group != self.group:  # Java looks the group's producer up in the client and finds none
            log.debug("transaction check for group %r, not %r: ignored", group, self.group)
            return
        task = asyncio.get_running_loop().create_task(self._check(connection, asked, message))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _check(self, connection: Connection, asked: CheckTransactionStateRequestHeader,
                     stored: StoredMessage) -> None:
        props = stored.properties
        uniq = props.get(PropertyName.UNIQ_KEY) or None
        topic = stored.topic if self.namespace is None else without_namespace(self.namespace, stored.topic)
        message = TransactionMessage(topic, stored.body, uniq, props, stored)
        state = LocalTransactionState.UNKNOW
        remark = None
        try:
            state = await self._run_check(message)
        except Exception as exc:  # the listener's failure is an UNKNOW answer; the broker asks again
            log.exception("transaction check of %s failed; answering UNKNOW", uniq)
            remark = f"transaction check raised {type(exc).__name__}: {exc}"
        header = end_header_after_check(self.group, asked, stored, state)
        trace = self._sender.trace
        if trace is not None:
            trace.end_transaction(topic, tags=stored.tags, keys=stored.keys, properties=props,
                                  msg_id=header.msg_id, transaction_id=uniq, store_host=connection.peer_address,
                                  state=state, from_transaction_check=True)
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=True,
                                          remark=remark)
        try:
            await connection.oneway(request, self.timeout_s)
        except (RocketStoreError, OSError) as exc:
            log.warning("END_TRANSACTION answering the check of %s not sent: %s", uniq, exc)

    async def _run_check(self, message: TransactionMessage) -> LocalTransactionState:
        listener = self.check_listener
        if self._check_is_async:
            return await _call(listener, message)
        if self._check_executor is None:
            self._check_executor = ThreadPoolExecutor(1, thread_name_prefix=f"tx-check-{self.group}")
        value = await asyncio.get_running_loop().run_in_executor(self._check_executor, listener, message)
        if inspect.isawaitable(value):
            value = await value
        return as_state(value)
