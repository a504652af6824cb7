"""Request/reply (RocketMQ 4.6+): send a message and wait for the answer a consumer sends back.

    async with RequestProducer("127.0.0.1:9876", "rpc-client") as requester:
        reply = await requester.request("PriceQuery", b"sku-7", timeout_s=3.0)
        print(reply.body)

    # the serving side: any consumer, answering with any Producer
    async def handle(messages):
        for m in messages:
            await replier.send_reply(m, b"42.00")
        return ConsumeStatus.CONSUME_SUCCESS

As the 4.9.3 Java client does it:

1. ``request`` adds CORRELATION_ID (a random UUID), REPLY_TO_CLIENT (this producer's client id) and TTL (the
   timeout in ms) to the message, makes sure the masters of the topic's route know this producer (a
   heartbeat with its group, as for the transactional producer), and sends it like any message.  The broker
   stores it with CLUSTER added.
2. A consumer's reply (:meth:`Producer.send_reply`, Java's MessageUtil.createReplyMessage + send) goes to
   ``<CLUSTER>_REPLY_TOPIC`` with MSG_TYPE=reply and those properties copied, as SEND_REPLY_MESSAGE_V2.
3. The broker that takes the reply pushes it to the requester's connection with PUSH_REPLY_MESSAGE_TO_CLIENT;
   this producer answers SUCCESS and completes the request waiting on CORRELATION_ID.  A reply for a request
   no longer waiting (timed out) is dropped with a log line, as in Java.

A request whose reply does not come within ``timeout_s`` raises :class:`ReplyTimeoutError`; a send that
fails on the way (the broker's error answer, at once: as Java's async send of a request, it is not retried
even for the codes a plain send retries; a connection or timeout error, after the retries)
:class:`RequestSendError` ("send request message to <topic> fail", the error as its ``__cause__``), as
DefaultMQProducerImpl.waitResponse wraps what the send callback got.  A message or topic the client itself
refuses, a topic with no route, or a request whose time ran out before it went out (SendCallTimeoutError
"sendDefaultImpl call timeout", a route look-up that took it all) raises as :meth:`Producer.send` does
(Java throws those before sending).

The requests waiting for replies are one table for the whole process, as Java's RequestFutureHolder is a
singleton: the broker pushes a reply to the connection that last heartbeated with the REPLY_TO_CLIENT
client id, and producers given the same ``instance_name`` share that id (in Java they share one
MQClientInstance), so the reply may arrive at another producer than the one waiting, even one on another
event loop (:func:`deliver_reply` hands it over).  Loop-bound, but the table is thread-safe.  Imports
remoting and message only.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import (
    BrokerError,
    ClientError,
    SendCallTimeoutError,
    SendFailedError,
    state_not_ok,
)
from rocketstore.client.latency_fault import DEFAULT_LATENCY_MAX, DEFAULT_NOT_AVAILABLE_DURATION
from rocketstore.client.namespace import with_namespace
from rocketstore.client.producer import (
    Producer,
    QueueSelector,
    SendResult,
    hash_queue_selector,
    send_call_timeout,
)
from rocketstore.client.route import AUTO_CREATE_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, MessageQueue
from rocketstore.client.served_producer import ServedProducer
from rocketstore.errors import LoopBoundError, RemotingError
from rocketstore.message.inflate import inflate_body
from rocketstore.message.properties import HasTagsAndKeys, PropertyName, parse_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.header_fields import HeaderFieldError
from rocketstore.remoting.headers import ReplyMessageRequestHeader
from rocketstore.remoting.tls import ClientTls
from rocketstore.remoting.transport import Connection

__all__ = ["ReplyMessage", "ReplyTimeoutError", "RequestProducer", "RequestSendError", "deliver_reply"]

log = logging.getLogger(__name__)


def _timeout_ms(timeout_s: float) -> int:
    """A request's timeout in the milliseconds Java's request(msg, timeout) is given: rounded, as a float's
    seconds times 1000 may fall just short (4.02 s is 4019.999... ms)."""
    return round(timeout_s * 1000)


class ReplyTimeoutError(ClientError):
    """The request was sent, but no reply came in time (Java's RequestTimeoutException)."""

    def __init__(self, topic: str, timeout_s: float) -> None:
        super().__init__(f"send request message to <{topic}> OK, but wait reply message timeout, "
                         f"{_timeout_ms(timeout_s)} ms.")
        self.topic = topic
        self.timeout_s = timeout_s


class RequestSendError(ClientError):
    """The request message could not be sent (Java's MQClientException from waitResponse); the send's own
    error is the ``__cause__``."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"send request message to <{topic}> fail")
        self.topic = topic


@dataclass(frozen=True, slots=True)
class ReplyMessage(HasTagsAndKeys):
    """A reply as the broker pushed it: the replier's message (topic = the reply topic), the replier's
    address (``born_host``) and the broker's (``store_host``) as ``ip:port``, and ARRIVE_TIME added to its
    properties when it came."""

    topic: str
    body: bytes
    queue_id: int
    flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    reconsume_times: int
    properties: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def correlation_id(self) -> str | None:
        return self.properties.get(PropertyName.CORRELATION_ID)


#: CORRELATION_ID -> the request waiting for its reply and its event loop, for every producer of the process
_waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[ReplyMessage]]] = {}
_waiting_lock = threading.Lock()
#: set while a request message is being sent: a broker's error answer then ends the send (see _result)
_sending_request: contextvars.ContextVar[bool] = contextvars.ContextVar("rocketstore_sending_request",
                                                                        default=False)


def _complete(future: asyncio.Future[ReplyMessage], reply: ReplyMessage) -> None:
    if not future.done():
        future.set_result(reply)


def deliver_reply(request: RemotingCommand) -> RemotingCommand:
    """PUSH_REPLY_MESSAGE_TO_CLIENT, whichever producer's connection it came on: the reply completes the
    request waiting for its CORRELATION_ID in this process; one nobody waits for (timed out) is dropped
    with a log line, as in Java.  The answer is SUCCESS unless the push's header cannot be read (a body
    flagged compressed that does not uncompress is delivered as it came, as Java's)."""
    arrived_ms = int(time.time() * 1000)
    try:
        h = ReplyMessageRequestHeader.from_ext_fields(request.ext_fields)
    except HeaderFieldError as exc:
        log.warning("undecodable reply message: %s", exc)
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark="process reply message fail")
    body = request.body or b""
    if h.sys_flag & SysFlag.COMPRESSED:
        try:
            body = inflate_body(body)
        except zlib.error as exc:  # as 4.9.3's receiveReplyMessage: logged, and the body delivered as it came
            log.warning("reply body flagged compressed does not uncompress (%s): delivered as is", exc)
    props = parse_properties(h.properties or "")
    props[PropertyName.ARRIVE_TIME] = str(arrived_ms)
    reply = ReplyMessage(h.topic, body, h.queue_id, h.flag, h.born_timestamp, h.store_timestamp,
                         h.born_host.lstrip("/"), h.store_host.lstrip("/"), h.reconsume_times or 0, props)
    correlation_id = props.get(PropertyName.CORRELATION_ID)
    with _waiting_lock:
        waiting = _waiting.get(correlation_id or "")
    if waiting is None or waiting[1].done():
        log.warning("reply %s came for no request waiting (timed out?); dropped", correlation_id)
    else:
        loop, future = waiting
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _complete(future, reply)
        else:
            try:
                loop.call_soon_threadsafe(_complete, future, reply)
            except RuntimeError:  # that loop is closed: its request is gone
                log.warning("reply %s came for a request whose event loop is closed; dropped", correlation_id)
    return request.make_response(ResponseCode.SUCCESS)


class RequestProducer(ServedProducer):
    def __init__(self, namesrv_addr: str | None = None, group: str = "DEFAULT_PRODUCER", *, timeout_s: float = 3.0,
                 retry_times: int = 2, heartbeat_interval_s: float = 30.0, instance_name: str | None = None,
                 credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None, tls: ClientTls = None,
                 mq_client_api_timeout_s: float = 3.0, route_refresh_interval_s: float = 30.0,
                 client_ip: str | None = None, namespace: str | None = None,
                 send_latency_fault_enable: bool = False,
                 latency_max: Sequence[int] = DEFAULT_LATENCY_MAX,
                 not_available_duration: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION,
                 retry_another_broker_when_not_store_ok: bool = False, unit_name: str | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """*tls*, *mq_client_api_timeout_s*, *route_refresh_interval_s*, *client_ip*, *namespace*,
        *unit_name* (the client id the replies come back to carries it), *namesrv_domain* /
        *namesrv_domain_subgroup* (the address server read with no name server address), *create_topic_key* /
        *default_topic_queue_nums* and *send_latency_fault_enable* / *latency_max* /
        *not_available_duration* / *retry_another_broker_when_not_store_ok* as the Producer's (in a namespace, a request to topic ``T``
        goes to ``<namespace>%T``; the last option is for plain sends only: a request message's send answer is
        not retried, 4.9.3 sends it asynchronously).  *timeout_s*
        bounds each plain send (connecting and the broker's answer); a request message's send is bounded by
        what is left of :meth:`request`'s own timeout instead.
        *enable_trace* / *trace_topic* as the Producer's: each request message's send is
        a Pub (Normal_Msg, its CORRELATION_ID, REPLY_TO_CLIENT and TTL among the properties sent), as
        DefaultMQProducer.request goes through the send hook; the reply's arrival is not traced (Java's
        is not either)."""
        super().__init__(namesrv_addr, group, self._serve, timeout_s=timeout_s, retry_times=retry_times,
                         heartbeat_interval_s=heartbeat_interval_s, instance_name=instance_name,
                         credentials=credentials, enable_trace=enable_trace, trace_topic=trace_topic, tls=tls,
                         mq_client_api_timeout_s=mq_client_api_timeout_s,
                         route_refresh_interval_s=route_refresh_interval_s, client_ip=client_ip,
                         namespace=namespace, send_latency_fault_enable=send_latency_fault_enable,
                         latency_max=latency_max, not_available_duration=not_available_duration,
                         retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
                         unit_name=unit_name, create_topic_key=create_topic_key,
                         default_topic_queue_nums=default_topic_queue_nums, namesrv_domain=namesrv_domain,
                         namesrv_domain_subgroup=namesrv_domain_subgroup)
        #: CORRELATION_ID -> the request of this producer waiting for its reply (also in the process's table)
        self._waiting: dict[str, asyncio.Future[ReplyMessage]] = {}

    async def request(self, topic: str, body: bytes, *, timeout_s: float = 3.0, tags: str | None = None,
                      keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                      queue_id: int | None = None, message_queue: MessageQueue | None = None) -> ReplyMessage:
        """Send a request message and return its reply; ReplyTimeoutError when none comes in *timeout_s*
        (counted from the call, the send included: the send gets what is left of it, not the producer's
        send timeout).  With *queue_id* or *message_queue* (:meth:`Producer.send`'s), a transport error is
        retried on the same queue, up to retry_times more times within that time (4.9.3's async send of
        request(msg, mq))."""
        if timeout_s <= 0:
            raise ValueError("a request needs a positive timeout")
        return await self._request(topic, body, timeout_s, time.monotonic() + timeout_s, tags=tags, keys=keys,
                                   properties=properties, queue_id=queue_id, message_queue=message_queue)

    async def _request(self, topic: str, body: bytes, timeout_s: float, deadline: float, *, tags: str | None,
                       keys: str | list[str] | None, properties: dict[str, str] | None, queue_id: int | None,
                       message_queue: MessageQueue | None) -> ReplyMessage:
        """:meth:`request` ending at *deadline* (monotonic); *timeout_s* is the whole request's, as the caller
        gave it, for TTL and ReplyTimeoutError, however much of it a selector took (Java's
        prepareSendRequest and waitResponse name the full timeout)."""
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the producer is closed"))
        if not self.started:
            await self.start()
        if self.namespace is not None:  # DefaultMQProducer.request's withNamespace (send's is then a no-op)
            topic = with_namespace(self.namespace, topic)
        self._check(topic, body)  # Validators.checkMessage: its refusal comes before the send, unwrapped
        await self.quietly(f"route of {topic}", self.discover(topic))
        correlation_id = str(uuid.uuid4())
        props = dict(properties or {})
        props[PropertyName.CORRELATION_ID] = correlation_id
        props[PropertyName.REPLY_TO_CLIENT] = self.client_id
        props[PropertyName.TTL] = str(_timeout_ms(timeout_s))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ReplyMessage] = loop.create_future()
        self._waiting[correlation_id] = future
        with _waiting_lock:
            _waiting[correlation_id] = (loop, future)
        try:
            # the send is bounded by what is left of the request's timeout, not by the producer's send
            # timeout (4.9.3 sends a request with timeout - cost); none left, and sendDefaultImpl's call
            # timeout is thrown as it is
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise send_call_timeout(queue_id if message_queue is None else message_queue.queue_id)
            sending = _sending_request.set(True)
            try:
                await self.send(topic, body, tags=tags, keys=keys, properties=props, queue_id=queue_id,
                                timeout_s=left_s, message_queue=message_queue)
            except SendCallTimeoutError:
                raise  # the time ran out before the request went out: thrown as it is, as sendDefaultImpl's
            except LoopBoundError:
                raise  # a programming error (the wrong loop), not a failed send
            except (BrokerError, RemotingError) as exc:
                # the asynchronous send's callback gets the last try's error, not "Send [n] times" (4.9.3's
                # onExceptionImpl hands the exception itself on after its retries)
                cause = exc.last_error if isinstance(exc, SendFailedError) else exc
                raise RequestSendError(topic) from cause
            finally:
                _sending_request.reset(sending)
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    return await future
            except TimeoutError:
                raise ReplyTimeoutError(topic, timeout_s) from None
        finally:
            self._waiting.pop(correlation_id, None)
            with _waiting_lock:
                _waiting.pop(correlation_id, None)

    async def request_orderly(self, topic: str, body: bytes, sharding_key: object, *, timeout_s: float = 3.0,
                              tags: str | None = None, keys: str | list[str] | None = None,
                              properties: dict[str, str] | None = None,
                              selector: QueueSelector = hash_queue_selector) -> ReplyMessage:
        """:meth:`request` sent to the queue *selector* picks for *sharding_key*, as
        :meth:`Producer.send_orderly` picks it (Java's request(msg, selector, arg, timeout)); the route
        look-up and the selector count against *timeout_s*, and the send goes on as a request to that
        *message_queue*.  No route or a failing selector: send_orderly's errors."""
        if timeout_s <= 0:
            raise ValueError("a request needs a positive timeout")
        deadline = time.monotonic() + timeout_s
        if self.namespace is not None:  # the selector still sees the queues named without it
            topic = with_namespace(self.namespace, topic)
        self._check(topic, body)
        _, _, mq = await self._selected_queue(topic, sharding_key, selector)
        if deadline - time.monotonic() <= 0:  # the look-up took it all: sendSelectImpl's call timeout, none sent
            raise SendCallTimeoutError("sendSelectImpl call timeout")
        return await self._request(topic, body, timeout_s, deadline, tags=tags, keys=keys,
                                   properties=properties, queue_id=None, message_queue=mq)

    @staticmethod
    def _result(response: RemotingCommand, msg_id: str, mq: MessageQueue) -> SendResult:
        """The Producer's reading of a send answer; for a request message's send, a broker's error answer is
        not retried (the request fails with it): 4.9.3 sends a request asynchronously, and
        MQClientAPIImpl.sendMessageAsync retries a transport failure only, never an error answer (the sync
        send's retryResponseCodes do not apply)."""
        try:
            return Producer._result(response, msg_id, mq)
        except BrokerError as error:
            if error.retriable and _sending_request.get():
                error.retriable = False
            raise

    def _retries_not_store_ok(self) -> bool:
        """A request message's send answer other than SEND_OK is not retried (4.9.3's request goes through
        sendDefaultImpl asynchronously: one try, whatever the option); a plain send's is."""
        return not _sending_request.get()

    def _chosen_queue_attempts(self) -> int:
        """A request message to a chosen queue is tried again on that queue after a transport error, up to
        retry_times more times (4.9.3's request(msg, mq) sends asynchronously, and sendMessageAsync's
        retries keep to the broker of a send without a TopicPublishInfo); any other such send once."""
        return 1 + self.retry_times if _sending_request.get() else 1

    async def close(self) -> None:
        await super().close()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ClientError("the producer closed before the reply came"))
        self._waiting.clear()

    async def _serve(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            return deliver_reply(request)
        return None if request.is_oneway else request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported")
