"""A minimal async producer: route from the name servers, round-robin over the publish queues, send
(SEND_MESSAGE_V2) and send batches (SEND_BATCH_MESSAGE), with retries on another queue for retriable errors
(none for a send to a chosen ``queue_id``, which may be any id the broker takes, as Java's send(msg, mq));
oneway sends (no answer, no retry) and orderly sends (the queue chosen from a sharding key, never changed;
oneway too, ``send_oneway_orderly``).  ``service_state`` / ``is_running`` tell where the producer is in its
life (:class:`~rocketstore.client.errors.ServiceState`).

    async with Producer("127.0.0.1:9876", "my-group") as producer:
        result = await producer.send("TopicA", b"hello", tags="TagA", keys="order-1")
        await producer.send_oneway("TopicA", b"fire and forget")
        await producer.send_orderly("TopicA", b"step 1", "order-1")   # same key, same queue, in order
        await producer.send("TopicA", b"in 10 s", properties={"DELAY": "3"})   # Java's setDelayTimeLevel(3)

Connections are opened on demand and reopened after a broker restart (the pool drops closed ones), so a
producer outlives a broker that goes away and comes back on the same address: sends fail meanwhile
(RemotingError / NoRouteError) and succeed again afterwards without any call to reconnect.  As in 4.9.3,
``timeout_s`` bounds a whole send, its route look-up and retries included (spent before the
request goes out: SendCallTimeoutError, a RequestTimeoutError, "... call timeout", nothing sent), and a body
of 4 KiB or more goes out zlib-compressed with sysFlag COMPRESSED (``compress_msg_body_over_howmuch``; never a
batch's).

Errors of a send, as 4.9.3's DefaultMQProducerImpl throws them: what the client refuses before sending
(MessageIllegalError, ClientError) and a topic without route (NoRouteError) at once; a broker's answer that
is not among the codes a send retries (4.9.3's retryResponseCodes: SYSTEM_ERROR, SERVICE_NOT_AVAILABLE,
NO_PERMISSION, TOPIC_NOT_EXIST, NO_BUYER_ID, NOT_IN_CURRENT_UNIT; so SYSTEM_BUSY and the flow-control
answers are not retried) as its
BrokerError at once.  When every try of a plain send, batch or oneway send (``retry_times`` + 1 of them; a
oneway one try) fails on a connection, a time-out or a retried code, the send raises
:class:`~rocketstore.client.errors.SendFailedError` (Java's MQClientException "Send [n] times, still failed,
cost [x]ms, Topic: t, BrokersSent: [...]"), which is also of the last error's class (``except
ServiceNotAvailableError`` / ``except RemotingError`` go on catching it) and has it as ``__cause__`` and
``last_error``.  A send to a chosen ``queue_id`` and an orderly send (Java's send(msg, mq) and
send(msg, selector, arg)) raise their one error as it is.  ``mq_client_api_timeout_s`` (Java's
mqClientApiTimeout, 3 s) bounds each route look-up from the name servers, each heartbeat and each
unregistration, as 4.9.3's MQClientInstance bounds them; a send's look-up still counts against its own
timeout.

Each message gets a client-generated UNIQ_KEY (RocketMQ's MessageClientIDSetter layout: IP, pid, a random
instance word, ms since the start of the month, a counter), which is ``SendResult.msg_id``; the broker's
offset message id is ``offset_msg_id``.  Loop-bound: a send from another event loop than the one its
connections were opened on (another thread's, or a forked child's) raises LoopBoundError at once, never
retried (:mod:`rocketstore.client.blocking_producer` is for code without a loop).

Per-message client CPU is part of every round trip, so the send paths avoid per-message Python work where
the bytes allow: a batch's keys come from one struct pack and hex of their counters and the usual batch (one
tags value, flag and body length, no keys or user properties) is one join of the bodies with the parts
every entry shares, the keys' counters written in as byte columns, without BatchEntry objects or a pack
per entry; the request's
frame comes from a per-(topic, queue) JsonRequestTemplate with only the born timestamp, the properties and
the opaque filled in per send (Connection.request_encoded numbers it); the route, publish queues, master
addresses and the pool's connection are looked up without a coroutine while they stay valid.

With ``credentials`` (ACL) every request is signed by its connection, which needs the request's extFields:
sends then build a RemotingCommand (the path bodies of 16 KiB and more always take), never a template's frame.

Heartbeats, route refreshes, the producer's life (start, close, ``service_state``) and the requests brokers
send on its connections are its client instance's: the base class
:class:`~rocketstore.client.producer_instance.ProducerInstance` says how.  The messages and their encoding
(UNIQ_KEYs, property text, batch bodies, the checks before a send, :class:`SendResult`) are
:mod:`rocketstore.client.outgoing_message`'s; every name of theirs this module had is importable from here.
Which queue a send goes to (a route's publish queues and master addresses, a chosen queue id's queues,
:func:`hash_queue_selector`) is :mod:`rocketstore.client.queue_choice`'s, re-exported here likewise.
The Producer's base classes hold the rest of its sends: the checks before a send, the request it writes
(compression, extFields, frame templates) and the :class:`SendResult` of its answer are
:class:`~rocketstore.client.send_request.SendRequests`' (``send_call_timeout`` too, importable from here);
the sends tried once, oneway and orderly, :class:`~rocketstore.client.single_try_sends.SingleTrySends`'.
The retried sends, plain and batch, are this module's.

With ``enable_trace`` each send, orderly send and batch is wrapped by the trace's ``pub`` (a Pub record once
its result is known, see :mod:`rocketstore.client.trace_producer`); without it a send path tests
``self.trace`` once and nothing more.
"""

from __future__ import annotations

import itertools
import logging
import random
import struct
import time
import zlib
from collections.abc import Sequence
from functools import partial

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import (
    BrokerError,
    ClientError,
    MessageIllegalError,
    NoRouteError,
    send_failed,
    state_not_ok,
)
from rocketstore.client.latency_fault import (
    DEFAULT_LATENCY_MAX,
    DEFAULT_NOT_AVAILABLE_DURATION,
    LatencyFaultTolerance,
)
from rocketstore.client.namespace import queues_without_namespace, with_namespace
from rocketstore.client.outgoing_message import (
    DEFAULT_COMPRESS_LEVEL,
    DEFAULT_COMPRESS_OVER,
    _BATCH_PROPERTIES,
    _SEND_BATCH_MESSAGE,
    _SEND_MESSAGE_V2,
    _SEND_REPLY_MESSAGE_V2,
    _TAGGED_PROPERTIES,
    _UNTAGGED_PROPERTIES,
    REPLY_MESSAGE_FLAG,
    REPLY_TOPIC_SUFFIX,
    HasProperties,
    OutgoingMessage,
    SendResult,
    _batch_problem,
    _block_batch_body,
    _check_properties,
    _check_tags,
    _flags_not_ints,
    _keys_text,
    _new_key_block,
    _property_text,
    _quoted_properties,
    _retry_header_fields,
    _uniform_batch,
    _uniform_batch_body,  # noqa: F401 (importable from here, as before)
    _uniform_batch_problem,
    _waits_store,
    new_uniq_key,
    new_uniq_keys,
    reply_properties,
    topic_name_problem,  # noqa: F401 (this module's before the split: still importable from here)
)
from rocketstore.client.producer_instance import (
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_PRODUCER_GROUP,
)
from rocketstore.client.queue_choice import (
    QueueSelector,
    _chosen_queue,
    _no_master,
    _not_a_target,
    _queue_avoiding,
    _queues_with_id,
    _Targets,
    hash_queue_selector,
)
from rocketstore.client.route import (
    AUTO_CREATE_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    MessageQueue,
    RouteCache,
    namesrv_addr_or_env,
)
from rocketstore.client.send_request import _COMPRESSED
from rocketstore.client.send_request import send_call_timeout as send_call_timeout  # (this module's before)
from rocketstore.client.single_try_sends import SingleTrySends
from rocketstore.errors import LoopBoundError, PropertiesTooLargeError, RemotingError, RequestTimeoutError
from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.message.record import body_type_error
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.bodies import TopicRouteData
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.templates import JsonRequestTemplate
from rocketstore.remoting.tls import ClientTls

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "DEFAULT_PRODUCER_GROUP", "REPLY_MESSAGE_FLAG", "REPLY_TOPIC_SUFFIX",
           "HasProperties", "OutgoingMessage", "Producer", "QueueSelector", "SendResult", "hash_queue_selector",
           "new_uniq_key", "new_uniq_keys", "reply_properties"]

log = logging.getLogger(__name__)

#: bodies from this size on go through Connection.request, which writes them beside the header uncopied
_TEMPLATE_BODY_LIMIT = 16384
#: Java DefaultMQProducer.maxMessageSize: the largest body (a batch's encoded body) a producer sends
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024


class Producer(SingleTrySends):
    """Sends (see the module's docstring); its client instance (heartbeats, routes, life) is the base
    class's."""

    def __init__(self, namesrv_addr: str | None = None, group: str = DEFAULT_PRODUCER_GROUP, *,
                 timeout_s: float = 3.0,
                 retry_times: int = 2, credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 compress_msg_body_over_howmuch: int = DEFAULT_COMPRESS_OVER,
                 compress_level: int = DEFAULT_COMPRESS_LEVEL, heartbeat_interval_s: float = 30.0,
                 instance_name: str | None = None, tls: ClientTls = None,
                 mq_client_api_timeout_s: float = 3.0, route_refresh_interval_s: float = 30.0,
                 client_ip: str | None = None, namespace: str | None = None,
                 send_latency_fault_enable: bool = False,
                 latency_max: Sequence[int] = DEFAULT_LATENCY_MAX,
                 not_available_duration: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION,
                 retry_another_broker_when_not_store_ok: bool = False, unit_name: str | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """*namesrv_addr*: ``host:port[;host:port]``; None: the environment variable ``NAMESRV_ADDR``, as
        4.9.3's clients (ClientConfig's default namesrvAddr); without either, the list is read from the
        address server *namesrv_domain* (``host[:port]``, else $ROCKETMQ_NAMESRV_DOMAIN; 4.9.3's system
        property rocketmq.namesrv.domain) names, at ``/rocketmq/<namesrv_domain_subgroup>`` (else
        $ROCKETMQ_NAMESRV_DOMAIN_SUBGROUP, else ``nsaddr``), then again every 2 minutes (see
        :mod:`rocketstore.address_server`); with none of them, ValueError "No name server address,
        please set it.".
        *credentials*: ACL access key and secret every request (name servers' too) is signed with;
        *tls*: this producer's own TLS switch (4.9.3's setUseTLS; None follows the process, see
        :data:`rocketstore.remoting.tls.ClientTls`), which its trace producer shares;
        *enable_trace*: record each send's Pub trace (see :mod:`rocketstore.client.trace_producer`) and send
        it in the background to *trace_topic* (default RMQ_SYS_TRACE_TOPIC), as DefaultMQProducer(group,
        enableMsgTrace, customizedTraceTopic).  *max_message_size* (Java's maxMessageSize, 4 MiB): a larger
        body (a batch's encoded body) is refused before anything is sent, as Java's Validators.checkMessage
        refuses it, with MessageIllegalError; so are an empty body and a topic it refuses (blank, over 127
        characters, outside ``^[%|a-zA-Z0-9_-]+$``, SCHEDULE_TOPIC_XXXX), on every send path, and a batch
        message with a delay level or for a retry topic (as MessageBatch.generateFromList).
        *compress_msg_body_over_howmuch* and *compress_level* (Java's compressMsgBodyOverHowmuch, 4 KiB, and
        zipCompressLevel, 5): a body of that many bytes or more goes out zlib-compressed with sysFlag
        COMPRESSED, as the Java producer sends it (not a batch's); consumers inflate it.
        *heartbeat_interval_s* (Java's heartbeatBrokerInterval, 30 s), *route_refresh_interval_s* (Java's
        pollNameServerInterval, 30 s, named as the consumers' setting) and *instance_name*: see "Heartbeats"
        in the module's docstring; the client id is ``ip@instance_name`` (default ``pid#nanos``).
        *mq_client_api_timeout_s* (Java's ClientConfig.mqClientApiTimeout, 3 s): the bound of each route
        look-up from the name servers, heartbeat and unregistration (4.9.3's MQClientInstance passes it to
        getTopicRouteInfoFromNameServer, sendHearbeat and unregisterClient), not *timeout_s*, which bounds
        sends.
        *client_ip*: the ``ip`` of the client id (ClientConfig.clientIP; default this host's address).
        *namespace* (ClientConfig.namespace): the group and every topic sent to go on the wire as
        ``<namespace>%<name>``, and the send results' queues name the topic without it (see
        :mod:`rocketstore.client.namespace`).
        *send_latency_fault_enable* (Java's sendLatencyFaultEnable, off): plain, batch and oneway sends
        (not those to a chosen queue, nor orderly ones) keep each broker's send latency and leave a broker
        whose last send was slow or failed out of the queue choice for a while, as 4.9.3's MQFaultStrategy
        (see :mod:`rocketstore.client.latency_fault`); *latency_max* and *not_available_duration* (ms,
        Java's setLatencyMax / setNotAvailableDuration) are its steps.  All three may be set on the
        producer later too.
        *retry_another_broker_when_not_store_ok* (Java's retryAnotherBrokerWhenNotStoreOK, off): a plain or
        batch send the broker answers with another status than SEND_OK (FLUSH_DISK_TIMEOUT,
        FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) is tried again on another queue, within ``retry_times``,
        as a failed one; when no try gets SEND_OK, the last such answer is returned (not an error), as
        4.9.3's sendDefaultImpl.  Off, that answer is returned after one try.  The attribute of that name
        changes it later.
        *unit_name* (ClientConfig.unitName, none): appended to the client id, ``ip@instance_name@unit_name``,
        as 4.9.3's buildMQClientId (a blank one is ignored).
        *create_topic_key* (Java's createTopicKey, ``TBW102``) and *default_topic_queue_nums* (Java's
        defaultTopicQueueNums, 4): a send to a topic the name servers do not know goes on the route of
        *create_topic_key*, to at most *default_topic_queue_nums* queues of each of its brokers, and every
        send names both in its request (defaultTopic, defaultTopicQueueNums), so that a broker that
        auto-creates the topic makes it after *create_topic_key*'s config (a 4.9.3 broker does so when
        that topic's perm has PERM_INHERIT, even without autoCreateTopicEnable) with at most that many
        queues.  The producer's heartbeats start with *create_topic_key*'s brokers."""
        namesrv_addr = namesrv_addr_or_env(namesrv_addr)
        super().__init__(namesrv_addr, group, timeout_s=timeout_s, credentials=credentials,
                         heartbeat_interval_s=heartbeat_interval_s, instance_name=instance_name, tls=tls,
                         mq_client_api_timeout_s=mq_client_api_timeout_s,
                         route_refresh_interval_s=route_refresh_interval_s, client_ip=client_ip,
                         namespace=namespace, unit_name=unit_name, create_topic_key=create_topic_key,
                         default_topic_queue_nums=default_topic_queue_nums, namesrv_domain=namesrv_domain,
                         namesrv_domain_subgroup=namesrv_domain_subgroup)
        self.max_message_size = max_message_size
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.timeout_s = timeout_s
        self.retry_times = retry_times
        #: bodies shorter than this go out as a template's frame; 0 with credentials (a signed request is a
        #: RemotingCommand whose extFields the connection signs), so the send path tests nothing more per send
        self._template_body_limit = 0 if credentials is not None else _TEMPLATE_BODY_LIMIT
        self._next_queue = itertools.count(random.randrange(1024))
        #: the brokers' send latencies (what was kept stays while the option is off, none is added: as
        #: 4.9.3's MQFaultStrategy) and _fault, the same or None: None while sendLatencyFaultEnable is off,
        #: so a send tests one local
        self.latency_fault = LatencyFaultTolerance(latency_max, not_available_duration)
        self._fault: LatencyFaultTolerance | None = self.latency_fault if send_latency_fault_enable else None
        #: Java's retryAnotherBrokerWhenNotStoreOK (see :meth:`__init__`); may be switched any time
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        #: topic -> where its sends go under the route last seen: recomputed only when the route changes
        self._targets: dict[str, _Targets] = {}
        #: (group, topic, queue id, batch, flag, code, with properties, sysFlag) -> the request frames' template
        self._frame_templates: dict[tuple[str, str, int, bool, int, int, bool, int], JsonRequestTemplate] = {}
        #: topics that passed topic_problem, checked again only when this set is cleared
        self._checked_topics: set[str] = set()
        if enable_trace:  # (self.trace: None, from the base class's __init__, without it)
            # imported here: the trace modules import this one
            from rocketstore.client.trace_producer import ProducerTrace

            self.trace = ProducerTrace(self, namesrv_addr, trace_topic=trace_topic, credentials=credentials,
                                       tls=self.pool.tls, namesrv_domain=namesrv_domain,
                                       namesrv_domain_subgroup=namesrv_domain_subgroup)

    @property
    def send_latency_fault_enable(self) -> bool:
        """Whether sends leave slow or failing brokers out (see :meth:`__init__`; Java's
        setSendLatencyFaultEnable, which may be switched any time: the latencies kept stay)."""
        return self._fault is not None

    @send_latency_fault_enable.setter
    def send_latency_fault_enable(self, value: bool) -> None:
        self._fault = self.latency_fault if value else None

    @property
    def latency_max(self) -> tuple[int, ...]:
        """The steps of a send's latency, ms (Java's getLatencyMax / setLatencyMax)."""
        return self.latency_fault.latency_max

    @latency_max.setter
    def latency_max(self, value: Sequence[int]) -> None:
        self.latency_fault.latency_max = value

    @property
    def not_available_duration(self) -> tuple[int, ...]:
        """How long (ms) a broker is left out after a send of each latency step (Java's
        getNotAvailableDuration / setNotAvailableDuration)."""
        return self.latency_fault.not_available_duration

    @not_available_duration.setter
    def not_available_duration(self, value: Sequence[int]) -> None:
        self.latency_fault.not_available_duration = value

    def cached_master_addr(self, topic: str, broker_name: str) -> str | None:
        """The master address of *broker_name* for *topic* from the routes this producer has cached (no
        request); None when it has none.  For the trace's storeHost, off the send path."""
        targets = self._targets.get(topic)
        if targets is not None and broker_name in targets.addrs:
            return targets.addrs[broker_name]
        route = self.routes.fresh_route(topic)
        bd = route.broker(broker_name) if route is not None else None
        return bd.master_addr() if bd is not None else None

    async def send(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | list[str] | None = None,
                   properties: dict[str, str] | None = None, queue_id: int | None = None,
                   timeout_s: float | None = None, message_queue: MessageQueue | None = None,
                   flag: int = 0) -> SendResult:
        """*timeout_s*: this send's bound instead of the producer's (Java's send(msg, timeout)).
        *flag*: the message's flag (Java's Message.setFlag), stored with it as sent.
        *queue_id*: send to that queue id (on any broker of the route that has it, in turn); *message_queue*:
        to that one queue of that one broker (Java's send(msg, mq), e.g. one of
        :meth:`fetch_publish_message_queues`); neither is retried elsewhere.  A queue the topic's route
        lacks is refused before anything is sent (QueueNotInRouteError, a NoRouteError; see
        queue_choice._not_a_target for why not the broker's refusal)."""
        if self.namespace is not None:
            topic, message_queue = self._in_namespace(topic, message_queue)
        self._check(topic, body)
        if flag.__class__ is not int or not -0x80000000 <= flag <= 0x7FFFFFFF:
            # Java's Message.setFlag takes an int.  Anything else went out, the broker refused it (each retry
            # too), and one equal to an int (True, 1.0) left its text in that int's frame template: every
            # later send of flag 1 to the queue was refused as well
            raise (TypeError(f"flag must be an int, not {type(flag).__name__}") if flag.__class__ is not int
                   else ValueError(f"flag {flag} does not fit a Java int (-2147483648 to 2147483647)"))
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        code = _SEND_MESSAGE_V2
        retry_fields = None
        if properties and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            properties = dict(properties)
            retry_fields = _retry_header_fields(topic, properties)
        quoted = None  # the properties as the frame's JSON text, for the usual send (see _quoted_properties)
        if properties or keys:
            message = OutgoingMessage(body, tags, keys, dict(properties) if properties else {})
            uniq = message.uniq_key()
            props = message.property_map(uniq)
            _check_properties(props)
            text = encode_properties(props)
            if properties and properties.get(PropertyName.MSG_TYPE) == REPLY_MESSAGE_FLAG:
                code = _SEND_REPLY_MESSAGE_V2  # as the Java client sends a reply message
        else:  # the usual send: only tags, UNIQ_KEY and WAIT, laid out once in Java's order
            _check_tags(tags)
            uniq = new_uniq_key()
            text = (_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).format(tags, uniq)
            quoted = _quoted_properties(tags, uniq)
        sys_flag = 0
        if len(body) >= self.compress_msg_body_over_howmuch:  # tryToCompressMessage (the trace too sees it)
            try:
                body, sys_flag = zlib.compress(body, self.compress_level), _COMPRESSED
            except TypeError as e:  # (a try costs nothing until it raises) a str body of 4 KiB or more
                raise body_type_error(body) or e from None
        if self.trace is None:
            result = await self._send(topic, code, body, text, uniq, batch=False, queue_id=queue_id, flag=flag,
                                      sys_flag=sys_flag, retry_fields=retry_fields, timeout_s=timeout_s,
                                      broker_name=broker_name, quoted=quoted)
        else:
            began_ms = [0]
            sending = self._send(topic, code, body, text, uniq, batch=False, queue_id=queue_id, flag=flag,
                                 sys_flag=sys_flag, began_ms=began_ms, retry_fields=retry_fields,
                                 timeout_s=timeout_s, broker_name=broker_name, quoted=quoted)
            result = await self.trace.pub(sending, topic, len(body), tags, keys, properties,
                                          began_ms=began_ms)
        return result if self.namespace is None else self._out_of_namespace(result)

    async def send_reply(self, request: HasProperties, body: bytes, *, tags: str | None = None,
                         keys: str | list[str] | None = None, properties: dict[str, str] | None = None
                         ) -> SendResult:
        """Answer a request message (one a :class:`RequestProducer` sent, as a consumer received it): the
        reply goes to ``<CLUSTER>_REPLY_TOPIC`` of the request's cluster as SEND_REPLY_MESSAGE_V2, and the
        broker passes it on to the requester.  ValueError for a message without CLUSTER (see
        :func:`reply_properties`)."""
        topic, props = reply_properties(request, properties)
        return await self.send(topic, body, tags=tags, keys=keys, properties=props)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to *topic* goes to (its brokers' write queues), from the name servers' route,
        broker by broker (:meth:`RouteCache.publish_queues`; Java's fetchPublishMessageQueues); NoRouteError
        for a topic the name servers do not know (no auto-create template here, as 4.9.3) or without a
        writeable queue, in MQAdminImpl's words ("Can not find Message Queue for this topic, <topic>").  A
        queue of it is what :meth:`send`'s *message_queue* takes."""
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the producer is closed"))
        if self.namespace is not None:  # queues of the topic in the namespace, named without it
            topic = with_namespace(self.namespace, topic)
        words = f"Can not find Message Queue for this topic, {topic}"
        try:
            route = await self.routes.route(topic, refresh=True)
        except NoRouteError as exc:
            raise NoRouteError(topic, exc.reason, words=words) from exc
        queues = RouteCache.publish_queues(topic, route)
        if not queues:
            raise NoRouteError(topic, "no writeable queue", words=words)
        if self.namespace is not None:
            return queues_without_namespace(self.namespace, queues)
        return queues

    def _not_ok_result(self, result: SendResult, topic: str, known: bool) -> SendResult:
        """The not-OK answer a send retried with retry_another_broker_when_not_store_ok returns after all
        (the route look-up's after-send step as for a SEND_OK)."""
        if not known:
            self.routes.invalidate(topic)
        return result

    def _retries_not_store_ok(self) -> bool:
        """Whether this send goes on after an answer other than SEND_OK while
        retry_another_broker_when_not_store_ok is on: a synchronous send's does (a RequestProducer's request
        message is 4.9.3's asynchronous send, whose answer is never retried)."""
        return True

    def _chosen_queue_attempts(self) -> int:
        """How many times a send to a chosen queue id is tried: once, as Java's send(msg, mq).  (A
        RequestProducer's request message is retried on the same queue after a transport error, as 4.9.3's
        async send of request(msg, mq) is.)"""
        return 1

    async def send_batch(self, topic: str, messages: list[OutgoingMessage], *,
                         queue_id: int | None = None, timeout_s: float | None = None,
                         message_queue: MessageQueue | None = None) -> SendResult:
        """Send messages of one topic as one batch; ``msg_id`` holds their UNIQ_KEYs joined by commas.
        *queue_id*, *timeout_s* and *message_queue*: as :meth:`send`'s (Java's send(msgs, mq, timeout)).
        A batch whose encoded body is over ``max_message_size`` is refused, not split (as 4.9.3)."""
        if not messages:
            raise ValueError("a batch needs at least one message")
        if self.namespace is not None:
            topic, message_queue = self._in_namespace(topic, message_queue)
        self._check(topic, None)
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        # the usual batch (one shape, see _uniform_batch) checked and encoded column-wise
        uniform = None if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else _uniform_batch(messages)
        problem = (_batch_problem(topic, messages, self.max_message_size) if uniform is None  # as Java's
                   else _uniform_batch_problem(uniform, self.max_message_size))  # DefaultMQProducer.batch
        if problem is not None:
            raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, f"Failed to initiate the MessageBatch: {problem}")
        head, counters = _new_key_block(len(messages))
        keys_text = _keys_text(head, counters)
        try:
            body = None if uniform is None else _block_batch_body(uniform, head, counters)
        except TypeError as e:  # (a try costs nothing until it raises) a str body, say
            raise _batch_body_type_error(messages) or e from None
        except struct.error as e:  # a flag that is no Java int
            raise _batch_flag_error(messages) or e from None
        if body is None:
            # (only here can a message carry properties of its own, a UNIQ_KEY among them, which it keeps)
            keys = [m.properties.get(PropertyName.UNIQ_KEY) or k for m, k in zip(messages, keys_text.split(","))]
            keys_text = ",".join(keys)
            if _flags_not_ints(messages):  # a bool: struct would pack True as 1
                raise _batch_flag_error(messages) or TypeError("flag must be an int")
            try:
                # a body that is another buffer than bytes as its bytes (a memoryview's len() may count items;
                # Producer.send copies it the same way); no buffer at all raises TypeError, named below
                body = encode_batch([BatchEntry(m.body if m.body.__class__ is bytes else bytes(memoryview(m.body)),
                                                _property_text(m, k), m.flag)
                                     for m, k in zip(messages, keys)])
            except PropertiesTooLargeError as exc:
                # (4.9.3's encodeMessage cannot write them either: DefaultMQProducer.batch wraps the failure)
                raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL,
                                          f"Failed to initiate the MessageBatch: {exc}") from exc
            except TypeError as e:
                raise _batch_body_type_error(messages) or e from None
            except struct.error as e:  # a flag that is no Java int (a body that is none was a TypeError)
                raise _batch_body_type_error(messages) or _batch_flag_error(messages) or e from None
        batch_properties = _BATCH_PROPERTIES[_waits_store(messages[0])]  # _batch_problem held the others' the same
        if self.trace is None:
            result = await self._send(topic, _SEND_BATCH_MESSAGE, body, batch_properties, keys_text,
                                      batch=True, queue_id=queue_id, flag=0, timeout_s=timeout_s,
                                      broker_name=broker_name)
        else:
            began_ms = [0]
            sending = self._send(topic, _SEND_BATCH_MESSAGE, body, batch_properties, keys_text, batch=True,
                                 queue_id=queue_id, flag=0, began_ms=began_ms, timeout_s=timeout_s,
                                 broker_name=broker_name)
            # one Pub for the batch, as 4.9.3 traces a MessageBatch: no tags or keys, the ids joined by commas
            result = await self.trace.pub(sending, topic, len(body), None, None, None, began_ms=began_ms)
        return result if self.namespace is None else self._out_of_namespace(result)

    async def _send(self, topic: str, code: int, body: bytes, properties: str, msg_id: str, *, batch: bool,
                    queue_id: int | None, flag: int, sys_flag: int = 0, began_ms: list[int] | None = None,
                    retry_fields: dict[str, str] | None = None, timeout_s: float | None = None,
                    broker_name: str | None = None, quoted: str | None = None) -> SendResult:
        """Send with retries (none for a chosen *queue_id*, but see :meth:`_chosen_queue_attempts`), on
        *broker_name*'s queue only when given (a send to a MessageQueue);
        *retry_fields* (:func:`_retry_header_fields`') go into every attempt's header; *timeout_s* bounds the
        send instead of the producer's timeout.  *quoted*: *properties* as the frame's JSON text
        (:func:`_quoted_properties`), when the send has it.
        *began_ms* (a traced send's): its one item set to the wall-clock ms at which each attempt's request
        starts, so the trace's Pub times the attempt that answered, not the failed ones before it (Java's
        SendMessageTraceHookImpl wraps each sendKernelImpl call).

        A batch's encoded body is measured against maxMessageSize here (Validators.checkMessage of the
        MessageBatch); a single message's was measured raw by :meth:`_check`, before compression, as Java's
        sendDefaultImpl does: a compressed body that came out longer (incompressible data) still goes out
        and the broker, which may allow more, decides."""
        if batch and len(body) > self.max_message_size:
            raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL,
                                      f"the message body size over max value, MAX: {self.max_message_size}")
        last_error: Exception | None = None
        failed_broker: str | None = None
        targets: _Targets | None = None
        fresh: TopicRouteData | None = None
        mq: MessageQueue | None = None
        known = True
        # sendLatencyFaultEnable's bookkeeping (None while it is off): a plain send's, not a chosen queue's
        # (4.9.3's send(msg, mq) goes to sendKernelImpl without it)
        fault = self._fault if queue_id is None else None
        # retryAnotherBrokerWhenNotStoreOK: a plain send's answer other than SEND_OK is kept in not_ok and
        # the next queue tried; sendDefaultImpl returns the last one kept rather than throw once none is left
        retry_not_ok = self.retry_another_broker_when_not_store_ok
        not_ok: SendResult | None = None
        # the timeout bounds the whole send, as sendDefaultImpl's: a retry gets what is left of it, and
        # none starts once it is spent (a broker that never answers is not waited for once per retry)
        if timeout_s is None:
            timeout_s = self.timeout_s
        deadline = time.monotonic() + timeout_s
        send_timeout_s = timeout_s
        # the broker of each failed try, in order (sendDefaultImpl's brokersSent), added to on failure only
        brokers_sent: tuple[str, ...] = ()
        # a chosen queue is sent to once, as Java's send(msg, mq) (one sendKernelImpl, no retry on another
        # broker): only the plain send retries (sendDefaultImpl's retryTimesWhenSendFailed)
        for attempt in range(self.retry_times + 1 if queue_id is None else self._chosen_queue_attempts()):
            if attempt > 0 and deadline <= time.monotonic():
                if failed_broker is not None and targets is not None and queue_id is None and targets.queues:
                    # sendDefaultImpl picks the retry's queue before it finds the time spent: the round-robin
                    # moves past the failed broker's queues all the same (see _queue_avoiding)
                    if fault is None:
                        _queue_avoiding(targets.queues, self._next_queue, failed_broker)
                    else:
                        fault.select(targets.queues, targets.route, self._next_queue)
                if not_ok is not None:  # sendDefaultImpl's call timeout returns the answer it has
                    return self._not_ok_result(not_ok, topic, known)
                raise send_call_timeout(queue_id) from last_error
            # a fresh cached route without a coroutine (the usual case), else the route cache's full path; a
            # retry goes on with the route of the attempt before, not the name servers' (sendDefaultImpl's
            # retries go on with the TopicPublishInfo it looked up once): a name server that hangs does not
            # take the time of a retry on another broker
            if targets is not None:
                route = targets.route
                timeout_s = deadline - time.monotonic()
            elif (fresh := self.routes.fresh_route(topic)) is None:
                route, known = await self.routes.publish_route(topic)
                # the look-up counts against the attempt's time (sendDefaultImpl's costTime, sendKernelImpl's
                # for a chosen queue): once it has spent the timeout, nothing is sent
                timeout_s = deadline - time.monotonic()
                if timeout_s <= 0:
                    raise send_call_timeout(queue_id) from last_error
            else:
                route = fresh
                known = True
            targets = self._targets_of(topic, route)
            if not targets.queues and fresh is not None and route is fresh:
                # a cached route without a queue to send to (a broker that had lost its master, a bad answer)
                # is asked for again, as 4.9.3's tryToFindTopicPublishInfo asks while its publish info has none
                fresh = None
                route, known = await self.routes.publish_route(topic, refresh=True)
                timeout_s = deadline - time.monotonic()
                if timeout_s <= 0:
                    raise send_call_timeout(queue_id) from last_error
                targets = self._targets_of(topic, route)
            queues = (targets.queues if queue_id is None
                      else _queues_with_id(targets, queue_id, broker_name))
            if not queues:
                if queue_id is not None and targets.queues:
                    raise _not_a_target(topic, targets, queue_id, broker_name)
                raise NoRouteError(topic, "no writeable queue")
            if queue_id is not None and mq is not None and mq in queues:
                pass  # a chosen queue's retry goes to the same queue (see _chosen_queue_attempts)
            elif fault is not None:  # a retry too: the failed broker is left out by its time, not its name
                mq = fault.select(queues, targets.route, self._next_queue)
            elif failed_broker is None:
                mq = queues[next(self._next_queue) % len(queues)]
            else:
                mq = _queue_avoiding(queues, self._next_queue, failed_broker)
            addr = targets.addrs.get(mq.broker_name)
            if addr is None:  # an order config's broker without a master (see _new_targets)
                if queue_id is not None:  # send(msg, mq): sendKernelImpl's exception as it is
                    raise _no_master(mq)
                last_error, failed_broker = _no_master(mq), mq.broker_name  # another broker is tried next
                if fault is not None:  # sendKernelImpl's "not exist" is a failed send there too
                    fault.update(mq.broker_name, 0, True)
                continue
            if began_ms is not None:
                began_ms[0] = int(time.time() * 1000)
            if fault is not None:
                begin_ms = fault.clock()
            try:
                # the pool's connection, without pool.request's two coroutines per send while it stays open
                connection = self._connections.get(addr)
                if connection is None or connection.is_closed:
                    connection = self._connections[addr] = await self.pool.get(addr)
                if retry_fields is None and len(body) < self._template_body_limit:
                    # the frame from a per-queue template (the bytes encode_command would write for the
                    # command of _ext_fields_v2's extFields), numbered by the connection
                    born = str(int(time.time() * 1000))
                    template = self._frame_template(topic, mq.queue_id, batch, flag, code, bool(properties),
                                                    sys_flag)
                    if quoted is not None:  # (born: decimal digits, written as they are)
                        encode = partial(template.encode_quoted, ('"' + born + '"', quoted), body)
                    else:
                        encode = partial(template.encode, (born, properties) if properties else (born,), body)
                    response = await connection.request_encoded(encode, code, timeout_s)
                else:
                    ext = self._ext_fields_v2(topic, mq.queue_id, properties, batch, flag, sys_flag)
                    ext.update(retry_fields or {})
                    request = RemotingCommand.request(code, ext, body)
                    response = await connection.request(request, timeout_s)
                result = self._result(response, msg_id, mq)
            except LoopBoundError:
                raise  # a programming error (another loop's or a forked parent's connection): no retry
            except RemotingError as exc:
                if fault is not None:
                    fault.update(mq.broker_name, fault.clock() - begin_ms, True)
                if isinstance(exc, RequestTimeoutError):
                    # the attempt had all the time left, by the loop's clock: uvloop's is read once an
                    # iteration, so on a loaded machine its timer fires before time.monotonic() reaches the
                    # deadline, and a retry with a few ms left went out (sendDefaultImpl: none, time spent)
                    deadline = min(deadline, time.monotonic())
                    # and the connection is closed, the next send opening another (a sync send's invokeSync
                    # closes it: a peer gone silent would time every later send on it out)
                    if connection is not None:
                        self.pool.close_timed_out(addr, connection, exc)
                last_error, failed_broker = exc, mq.broker_name
                brokers_sent += (mq.broker_name,)
                continue
            except BrokerError as error:
                if fault is not None:  # any error answer, retried or not (4.9.3's MQBrokerException)
                    fault.update(mq.broker_name, fault.clock() - begin_ms, True)
                if not error.retriable:
                    if not_ok is not None:  # sendDefaultImpl returns the answer it has, not this error
                        return self._not_ok_result(not_ok, topic, known)
                    raise
                last_error, failed_broker = error, mq.broker_name
                brokers_sent += (mq.broker_name,)
                continue
            if fault is not None:
                fault.update(mq.broker_name, fault.clock() - begin_ms, False)
            if (retry_not_ok and result.status != "SEND_OK" and queue_id is None
                    and self._retries_not_store_ok()):
                # not stored as asked (a flush or the slave timed out): another queue, as after a failure (an
                # answer, so the latency bookkeeping above counted it as one that did not fail, as 4.9.3's)
                not_ok, failed_broker = result, mq.broker_name
                continue
            if not known:
                self.routes.invalidate(topic)
            return result
        if not_ok is not None:  # no SEND_OK: the last answer, whatever later tries raised (sendDefaultImpl's)
            return self._not_ok_result(not_ok, topic, known)
        if isinstance(last_error, (BrokerError, RemotingError)):
            if queue_id is not None:  # send(msg, mq): sendKernelImpl's exception as it is
                raise last_error
            # every try failed: sendDefaultImpl's "Send [n] times, still failed" (the last error's class too)
            cost_ms = int((time.monotonic() - deadline + send_timeout_s) * 1000)
            raise send_failed(last_error, topic, len(brokers_sent), cost_ms, brokers_sent) from last_error
        raise NoRouteError(topic, str(last_error))


def _batch_body_type_error(messages: list[OutgoingMessage]) -> TypeError | None:
    """The TypeError naming the first message of a batch whose body is not bytes-like (see
    message.record.body_type_error), or None when every body is."""
    for index, message in enumerate(messages):
        error = body_type_error(message.body)
        if error is not None:
            return TypeError(f"message {index} of the batch: {error}")
    return None


def _batch_flag_error(messages: list[OutgoingMessage]) -> Exception | None:
    """The error naming the first message of a batch whose flag is no Java int (Message.setFlag takes an
    int; encoding it failed), as :meth:`Producer.send` raises it, or None when every flag is one."""
    for index, message in enumerate(messages):
        flag = message.flag
        if flag.__class__ is not int:  # (a bool too, as send refuses it)
            return TypeError(f"message {index} of the batch: flag must be an int, not {type(flag).__name__}")
        if not -0x80000000 <= flag <= 0x7FFFFFFF:
            return ValueError(f"message {index} of the batch: flag {flag} does not fit a Java int "
                              "(-2147483648 to 2147483647)")
    return None
