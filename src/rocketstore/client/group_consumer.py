"""What every consumer that is a member of a consumer group does, whatever it does with the messages: the
part RocketMQ keeps in MQClientInstance and RebalanceImpl, shared by :class:`PushConsumer` and
:class:`LitePullConsumer`.

* The topics' routes (re-read every ``route_refresh_interval_s``) and the brokers they name.
* Heartbeats to those brokers, slaves too (as 4.9.3's sendHeartbeatToAllBroker for a client with
  consumers), with the group's subscriptions (CHECK_CLIENT_CONFIG first for SQL92 ones, masters only) and
  the inner producer's group CLIENT_INNER_PRODUCER, unregistered after the group at shutdown, as a Java
  client's; so a broker may push a RequestProducer's replies to a consumer of the same client id, which
  hands them over.
* Rebalance: every ``rebalance_interval_s`` and at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED,
  each member takes its share of a topic's sorted queues among the group's sorted client ids
  (CLUSTERING, by the ``allocate_strategy`` setting: :func:`allocate_averagely` unless another of
  :mod:`rocketstore.client.allocate`'s) or all of them (BROADCASTING); what a member then does with the
  queues it gained or lost is the subclass's ``_update_assignment``.
* Where a queue without a committed offset starts (RebalancePushImpl / RebalanceLitePullImpl
  computePullFromWhere: both follow the same rules).
* The offset store: the broker for CLUSTERING, ``<offset_dir>/<client id>/<group>/offsets.json`` for
  BROADCASTING.

Loop-bound, like the consumers built on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from rocketstore.client import group_requests
from rocketstore.client.allocate import (AllocateStrategy, allocate_averagely, java_queue_key,
                                         java_string_key, strategy_name)
from rocketstore.client.consume_stats import ConsumeStats
from rocketstore.client.consumer import PullConsumer
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, NoRouteError, ServiceState, logged, state_not_ok, state_of
from rocketstore.client.namespace import with_namespace
from rocketstore.client.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteOffsetStore,
    default_offset_dir,
)
from rocketstore.client.process_queue import wait_event
from rocketstore.client.producer import CLIENT_INNER_PRODUCER_GROUP
from rocketstore.client.push_types import (
    RETRY_GROUP_TOPIC_PREFIX,
    ConsumeFromWhere,
    MessageModel,
    local_ip,
    new_instance_name,
)
from rocketstore.client.request_producer import deliver_reply
from rocketstore.client.route import MessageQueue, RouteCache, namesrv_addr_or_env
from rocketstore.errors import RocketStoreError
from rocketstore.message.names import group_problem
from rocketstore.remoting.bodies import MASTER_ID, ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import MQ_VERSION, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo
from rocketstore.remoting.headers import GetConsumerRunningInfoRequestHeader
from rocketstore.remoting.tls import ClientTls
from rocketstore.remoting.transport import Connection
from rocketstore.remoting.versions import get_version_desc
from rocketstore.repeats import FailureRuns

__all__ = ["ConsumerSettingsError", "GroupConsumer", "GroupSettings", "resolve_settings"]

log = logging.getLogger(__name__)

#: MixAll.DEFAULT_CONSUMER_GROUP, which a consumer may not start with
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
#: ClientConfig's default instanceName, kept by a BROADCASTING consumer
DEFAULT_INSTANCE_NAME = "DEFAULT"


@dataclass(slots=True)
class LookupRound:
    """A round of route look-ups, one topic after another (a rebalance, a start's): once one found no name
    server answering (RouteCache.unanswered: all unreachable, or hanging until the look-up's timeout), the
    round's other topics go on with the route they know rather than wait that long each."""

    silent: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSettings:
    """The settings of group membership, pulling and offsets that every group consumer has."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: CONSUME_FROM_TIMESTAMP's start, ms since the epoch; None: half an hour before start()
    consume_timestamp_ms: int | None = None
    #: client id = ``ip@instance_name``; None: ``pid#nanos``, unique per consumer, for CLUSTERING and
    #: ``DEFAULT`` for BROADCASTING (4.9.3: the same client id, so the same offsets file, after a restart)
    instance_name: str | None = None
    #: the ``ip`` of the client id (ClientConfig.clientIP); None: this host's address (``local_ip()``)
    client_ip: str | None = None
    #: ClientConfig.unitName: appended to the client id (``ip@instance_name@unit_name``), and an address
    #: server's list is read at ``<subgroup>-<unit_name>?nofix=1`` (4.9.3's TopAddressing); None, blank:
    #: none
    unit_name: str | None = None
    #: ClientConfig.namespace: the group and the topics named go on the wire as ``<namespace>%<name>``
    #: (``%RETRY%<namespace>%<group>``), the messages and queues handed back without it (see
    #: :mod:`rocketstore.client.namespace`); None or "": none
    namespace: str | None = None
    #: with no name server address (given or in NAMESRV_ADDR): the address server the list is read from,
    #: ``host[:port]`` (else $ROCKETMQ_NAMESRV_DOMAIN; 4.9.3's rocketmq.namesrv.domain), and its path
    #: (else $ROCKETMQ_NAMESRV_DOMAIN_SUBGROUP, else ``nsaddr``): see :mod:`rocketstore.address_server`
    namesrv_domain: str | None = None
    namesrv_domain_subgroup: str | None = None
    #: Java waits 30 s / 20 s; a few seconds costs one small request and notices a lost NOTIFY sooner
    heartbeat_interval_s: float = 10.0
    rebalance_interval_s: float = 10.0
    persist_interval_s: float = 5.0
    route_refresh_interval_s: float = 30.0
    pull_threshold_for_queue: int = 1000
    pull_threshold_bytes_for_queue: int = 100 << 20
    #: stop pulling a queue while its held offsets span more than this (consumeConcurrentlyMaxSpan)
    consume_max_span: int = 2000
    pull_delay_on_error_s: float = 3.0
    #: BROADCASTING offsets go under this directory (default ``~/.rocketmq_offsets``)
    offset_dir: str | None = None
    #: the bound of the requests 4.9.3 gives no bound of their own: connecting, the offset look-ups by
    #: time / of a queue's ends, send-backs' resends (the other requests' bounds are Java's, below)
    timeout_s: float = 3.0
    #: ClientConfig.mqClientApiTimeout (3 s): the bound of each route look-up from the name servers, each
    #: heartbeat and unregistration, CHECK_CLIENT_CONFIG and GET_CONSUMER_LIST_BY_GROUP, as 4.9.3's
    #: MQClientInstance bounds them (not ``timeout_s``)
    mq_client_api_timeout_s: float = 3.0
    #: CLUSTERING: how the group shares a topic's queues (setAllocateMessageQueueStrategy); every member of
    #: the group, Java ones too, must use the same strategy: see :mod:`rocketstore.client.allocate`
    allocate_strategy: AllocateStrategy = allocate_averagely

    def __post_init__(self) -> None:
        # the members are StrEnums, so their names as plain strings ("CONSUME_FROM_FIRST_OFFSET", read from a
        # config file) look right, yet failed the consumer's identity tests: a first-offset group started at
        # the last offset, a "CLUSTERING" one consumed every queue as a broadcasting member
        object.__setattr__(self, "message_model", _member(MessageModel, "message_model", self.message_model))
        object.__setattr__(self, "consume_from_where",
                           _member(ConsumeFromWhere, "consume_from_where", self.consume_from_where))

    def check(self) -> None:
        """Raise :class:`ConsumerSettingsError` for a value out of range (the subclasses' fields)."""

    def check_group(self) -> None:
        """ConsumerSettingsError for a group setting of every consumer out of range (after ``check``)."""
        for name in ("timeout_s", "mq_client_api_timeout_s"):
            if not getattr(self, name) > 0:
                raise ConsumerSettingsError(f"{name} must be positive: {getattr(self, name)!r}")
        stamp = self.consume_timestamp_ms  # milliseconds, not 4.9.3's "yyyyMMddHHmmss" string
        if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int) or stamp < 0):
            raise ConsumerSettingsError(
                f"consume_timestamp_ms must be milliseconds since the epoch (a non-negative int): {stamp!r}")

    def check_range(self, name: str, low: float, high: float, java_name: str, *, off: int | None = None,
                    unit: float = 1) -> None:
        """ConsumerSettingsError unless setting *name* is within *low* .. *high* times *unit* (or is *off*):
        the range 4.9.3's checkConfig keeps *java_name* within (in Java's unit; *unit* of ours make one)."""
        value = getattr(self, name)
        if value == off or low * unit <= value <= high * unit:
            return
        java = f"{java_name} Out of range [{low:g}, {high:g}]" + ("" if off is None else f" or {off}")
        ours = f"[{_number(low * unit)}, {_number(high * unit)}]" + ("" if off is None else f" or {off}")
        raise ConsumerSettingsError(f"{name} out of range {ours}: {value!r} (4.9.3: {java})")


E = TypeVar("E", MessageModel, ConsumeFromWhere)


def _member(kind: type[E], name: str, value: object) -> E:
    """*value* as a member of *kind* (given as one or by its name); ConsumerSettingsError for others."""
    if isinstance(value, str) and value in kind.__members__:
        return kind[value]
    raise ConsumerSettingsError(f"{name} must be one of {', '.join(kind.__members__)}: {value!r}")


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class ConsumerSettingsError(ClientError, ValueError):
    """A consumer setting out of the range 4.9.3's checkConfig allows (MQClientException at start there);
    raised when the consumer is made.  A ValueError too, as the settings' other checks raise."""


S = TypeVar("S", bound=GroupSettings)


def resolve_settings(cls: type[S], settings: S | None, settings_kw: dict[str, Any]) -> S:
    """A consumer's settings: *settings*, or *cls* built from the keyword arguments; checked."""
    if settings is None:
        settings = cls(**settings_kw)
    elif settings_kw:
        raise ValueError("pass settings or keyword settings, not both")
    settings.check()
    settings.check_group()
    return settings


class GroupConsumer:
    """The base of the group consumers; subclasses set ``subscriptions`` and implement ``start``,
    ``shutdown``, ``_update_assignment``, ``running_info`` and, for more requests from brokers than
    NOTIFY_CONSUMER_IDS_CHANGED and GET_CONSUMER_RUNNING_INFO, ``_serve_more``."""

    #: what the heartbeat says this consumer is (a ConsumeType: PASSIVELY for push, ACTIVELY for pull)
    consume_type: ClassVar[str]
    #: what this consumer is called in our words (``"push consumer"``) and in 4.9.3's state errors
    #: (``"PushConsumer"``: "The PushConsumer service state not OK, ...")
    what: ClassVar[str]
    kind: ClassVar[str]

    def __init__(self, namesrv_addr: str | None, group: str, settings: GroupSettings,
                 credentials: SessionCredentials | None, tls: ClientTls = None) -> None:
        if not callable(settings.allocate_strategy):  # else every rebalance would fail, and nothing be consumed
            raise TypeError(f"allocate_strategy is not callable: {settings.allocate_strategy!r:.80}")
        self.settings = settings
        #: the namespace, None for none (the one test the per-message paths make)
        self.namespace = settings.namespace or None
        if self.namespace is not None:
            group = with_namespace(self.namespace, group)
        self.group = group
        #: as given, or (None) the environment variable NAMESRV_ADDR, as 4.9.3's ClientConfig
        self.namesrv_addr = namesrv_addr = namesrv_addr_or_env(namesrv_addr)
        self.clustering = settings.message_model is MessageModel.CLUSTERING
        # 4.9.3 turns the default instance name into pid#nanos for CLUSTERING only (changeInstanceNameToPID),
        # "DEFAULT" given outright too (members of a group on one host would share one client id, each own the
        # same share of the queues, consumed twice, and nobody the rest): a BROADCASTING member stays
        # <ip>@DEFAULT, so a restart finds its offsets file again
        instance = settings.instance_name
        if not instance or (self.clustering and instance == DEFAULT_INSTANCE_NAME):
            instance = new_instance_name() if self.clustering else DEFAULT_INSTANCE_NAME
        self.instance_name = instance
        self.client_id = f"{settings.client_ip or local_ip()}@{instance}"
        if settings.unit_name and settings.unit_name.strip():  # ClientConfig.buildMQClientId
            self.client_id += f"@{settings.unit_name}"
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.consumer = PullConsumer(namesrv_addr, group, timeout_s=settings.timeout_s, handler=self._serve,
                                     credentials=credentials, tls=tls,
                                     mq_client_api_timeout_s=settings.mq_client_api_timeout_s,
                                     namesrv_domain=settings.namesrv_domain,
                                     namesrv_domain_subgroup=settings.namesrv_domain_subgroup,
                                     unit_name=settings.unit_name)
        self.offsets: OffsetStore
        if self.clustering:
            self.offsets = RemoteOffsetStore(self.consumer)
        else:
            base = Path(settings.offset_dir) if settings.offset_dir else default_offset_dir()
            self.offsets = LocalFileOffsetStore(base / self.client_id / group / "offsets.json")
        self._background: list[asyncio.Task[None]] = []
        self._rebalance_wanted = asyncio.Event()
        self._wake = asyncio.Event()  # set once, at shutdown
        self._rebalance_lock = asyncio.Lock()
        self._route_at: dict[str, float] = {}
        #: the look-ups of the rebalance round under way (under _rebalance_lock), None between rounds
        self._lookups: LookupRound | None = None
        self._brokers: dict[str, str] = {}  # broker name -> master address, from the subscribed routes
        #: broker name -> its slaves' addresses in the last route read that named it (they get heartbeats too)
        self._slaves: dict[str, tuple[str, ...]] = {}
        #: topic -> by broker name, the address its route has now to ask for the group's members: the
        #: master, else (it is down) a slave (4.9.3's BrokerData.selectBrokerAddr); and whether it is a master
        self._route_brokers: dict[str, dict[str, tuple[str, bool]]] = {}
        #: topic -> every broker address (masters and slaves) of its last route read (4.9.3's topicRouteTable):
        #: an address none of them names is forgotten before the next heartbeats (cleanOfflineBroker)
        self._route_addrs: dict[str, frozenset[str]] = {}
        #: subscribe / unsubscribe after start: the next rebalance re-reads the routes and heartbeats first
        self._subscriptions_changed = False
        self._timestamp_ms = settings.consume_timestamp_ms
        self.started = False
        self.stopping = False
        #: a start failed (a refused group, or joining it failed): for good START_FAILED (see service_state)
        self.start_failed = False
        self.start_timestamp_ms = 0
        #: per-topic pull and consume figures (GET_CONSUMER_RUNNING_INFO)
        self.stats = ConsumeStats()
        #: rebalances done (tests and callers wait on it)
        self.rebalance_count = 0
        #: the failures in a row of the periodic jobs (heartbeats, rebalances, offset commits): a broker down
        #: fails them every round, logged once (and every 1000th), not once a round
        self.failure_runs = FailureRuns()

    async def start(self) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        raise NotImplementedError

    async def _update_assignment(self, topic: str, mine: set[MessageQueue]) -> None:
        """Take the queues of *topic* in *mine* that are not held yet, give up the held ones not in it."""
        raise NotImplementedError

    def running_info(self, *, jstack: bool = False) -> ConsumerRunningInfo:
        raise NotImplementedError

    # --- life cycle helpers --------------------------------------------------------------------------------

    @property
    def service_state(self) -> ServiceState:
        """4.9.3's getServiceState: CREATE_JUST before :meth:`start`, RUNNING after it, SHUTDOWN_ALREADY once
        shut down (from the moment the shutdown begins), START_FAILED after a start that failed (for good,
        as in 4.9.3: a failed start already closed what it had opened)."""
        return state_of(started=self.started, shut_down=self.stopping, start_failed=self.start_failed)

    @property
    def is_running(self) -> bool:
        """:attr:`service_state` is RUNNING (4.9.3's LitePullConsumer.isRunning)."""
        return self.service_state is ServiceState.RUNNING

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``, as the constructor's) from now
        on: 4.9.3's setNamesrvAddr on a running client (see :meth:`RouteCache.update_namesrv_addrs`; an
        empty one is ignored).  On the consumer's loop, or before it has one."""
        if self.consumer.routes.update_namesrv_addrs(namesrv_addr):
            self.namesrv_addr = ";".join(self.consumer.routes.namesrv_addrs)  # what running_info reports

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def check_startable(self) -> None:
        """ClientError unless a start may begin (CREATE_JUST), in the words of 4.9.3's start of the
        :attr:`kind` (``"PushConsumer"``): "The PushConsumer service state not OK, maybe started once,
        RUNNING" (SHUTDOWN_ALREADY once shut down, START_FAILED after a start that failed).  A blocking
        wrapper asks it too: after a failed start its loop thread is gone."""
        state = self.service_state
        if state is not ServiceState.CREATE_JUST:
            what = self.what
            cause = {ServiceState.RUNNING: f"the {what} is already started",
                     ServiceState.SHUTDOWN_ALREADY: f"the {what} is shut down",
                     ServiceState.START_FAILED: f"the first start of the {what} failed"}[state]
            raise ClientError(state_not_ok(self.kind, state, cause, started_once=True))

    def _mark_started(self) -> None:
        """The consumer is started now (see :meth:`check_startable`); its group is checked first."""
        self.check_startable()
        # checkConfig's group checks: a bad name would otherwise fail every heartbeat in the background
        problem = group_problem(self.group)
        if problem is None and self.group == DEFAULT_CONSUMER_GROUP:
            problem = f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one."
        if problem is not None:
            self.start_failed = True
            self.stopping = True  # it can never start (a blocking wrapper's loop thread goes too)
            raise ClientError(problem)
        self.started = True
        self.start_timestamp_ms = int(time.time() * 1000)
        if self._timestamp_ms is None:
            self._timestamp_ms = int(time.time() * 1000) - 30 * 60_000

    async def _join_group(self) -> None:
        """Read the subscribed routes, have non-TAG subscriptions checked, heartbeat, rebalance once."""
        lookups = LookupRound()
        for topic in self.subscriptions:
            await self._queues(topic, refresh=True, lookups=lookups)
        await self._check_client_config()
        await self._heartbeat_all()
        await self.rebalance()

    def _group_tasks(self) -> list[asyncio.Task[None]]:
        """The heartbeat and rebalance loops (they end once ``stopping`` is set and ``_wake`` woke them)."""
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._every(self.settings.heartbeat_interval_s, self._heartbeat_all)),
                 loop.create_task(self._rebalance_loop())]
        # they re-read the routes every route_refresh_interval_s (the rebalances the subscribed topics', the
        # heartbeats an assign-mode lite consumer's): pulls and offset commits use the route they have meanwhile
        for task in tasks:
            self.consumer.routes.refreshed_by(task)
        return tasks

    async def _unregister_all(self) -> None:
        """UNREGISTER_CLIENT for the group, then for CLIENT_INNER_PRODUCER, to every broker: 4.9.3's shutdown
        unregisters the consumer, then MQClientInstance.shutdown its inner producer."""
        for addr in self._all_broker_addrs():
            await self.quietly(f"unregister from {addr}", self._unregister(addr))

    async def _unregister(self, addr: str) -> None:
        """The group, then CLIENT_INNER_PRODUCER (not tried once the first failed: one log line a broker)."""
        pool, timeout_s = self.consumer.pool, self.settings.mq_client_api_timeout_s
        await group_requests.unregister(pool, addr, self.client_id, self.group, timeout_s)
        await group_requests.unregister(pool, addr, self.client_id, CLIENT_INNER_PRODUCER_GROUP, timeout_s,
                                        producer=True)

    async def _every(self, interval_s: float, fn: Callable[[], Awaitable[None]]) -> None:
        while not self.stopping:
            await wait_event(self._wake, interval_s)
            if not self.stopping:
                await self.periodically(getattr(fn, "__name__", "periodic task"), fn())

    @staticmethod
    async def quietly(what: str, coro: Awaitable[None]) -> None:
        """Await *coro*; a client-side failure is logged (the next period tries again)."""
        await logged(log, what, coro)

    async def periodically(self, what: str, coro: Awaitable[None]) -> None:
        """Await *coro*, a round of the periodic job *what*: a failure is logged as :meth:`quietly` logs it,
        but of a run of failures (a broker down fails every round) the first and every 1000th are warnings,
        the others debug lines, and the round that works again says so at INFO."""
        await logged(log, what, coro, runs=self.failure_runs)

    # --- requests from brokers -----------------------------------------------------------------------

    async def _serve(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self._rebalance_wanted.set()
            return None if request.is_oneway else request.make_response(ResponseCode.SUCCESS)
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group != self.group:
                return request.make_response(ResponseCode.SYSTEM_ERROR, remark=(
                    f"The Consumer Group <{header.consumer_group}> not exist in this consumer"))
            body = self.running_info(jstack=header.jstack_enable).encode()
            return request.make_response(ResponseCode.SUCCESS, body=body)
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            # the heartbeats register CLIENT_INNER_PRODUCER under this client id, so a broker may push the
            # replies of a RequestProducer of the same instance name here (Java: one MQClientInstance
            # serves both)
            return deliver_reply(request)
        return await self._serve_more(request)

    async def _serve_more(self, request: RemotingCommand) -> RemotingCommand | None:
        """The requests a subclass answers besides those of ``_serve``; REQUEST_CODE_NOT_SUPPORTED here."""
        return None if request.is_oneway else request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported")

    def _common_properties(self) -> dict[str, str]:
        """The running-info properties (Java's names) every group consumer reports."""
        s = self.settings
        return {
            "consumerGroup": self.group, "namesrvAddr": self.namesrv_addr, "messageModel": str(s.message_model),
            "consumeFromWhere": str(s.consume_from_where),
            "pullThresholdForQueue": str(s.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(s.pull_threshold_bytes_for_queue >> 20),
            "clientIP": self.client_id.split("@", 1)[0], "instanceName": self.instance_name,
            # Java shows the strategy object's toString; its getName tells an operator the same: whether the
            # members of a group share the queues the same way
            "allocateMessageQueueStrategy": strategy_name(s.allocate_strategy),
            "consumeTimestamp": time.strftime("%Y%m%d%H%M%S", time.localtime((self._timestamp_ms or 0) / 1000)),
            "unitMode": "false",
            ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP: str(self.start_timestamp_ms),
            # what 4.9.3's MQClientInstance adds to every consumer's answer (each name server followed by ";"):
            # the list in use, an address server's too
            ConsumerRunningInfo.PROP_NAMESERVER_ADDR: "".join(f"{a};" for a in self.consumer.routes.namesrv_addrs),
            ConsumerRunningInfo.PROP_CONSUME_TYPE: self.consume_type,
            ConsumerRunningInfo.PROP_CLIENT_VERSION: get_version_desc(MQ_VERSION),
        }

    # --- routes and heartbeats -------------------------------------------------------------------------

    async def _queues(self, topic: str, *, refresh: bool = False,
                      lookups: LookupRound | None = None) -> list[MessageQueue]:
        """The topic's subscribe queues, the route re-read every ``route_refresh_interval_s``; [] while
        the name servers do not know the topic (a retry topic right after the group's first heartbeat).
        In a round of *lookups* that found no name server answering, the route known is used without asking
        (none known: [] this round); the next round asks again."""
        now = time.monotonic()
        routes = self.consumer.routes
        stale = refresh or now - self._route_at.get(topic, -1e9) > self.settings.route_refresh_interval_s
        if stale and lookups is not None and lookups.silent:
            known = routes.fresh_route(topic)
            if known is None:
                return []
            route = known
        else:
            try:
                # the name servers asked when due; the known route kept when they cannot answer, so the
                # rebalance goes on through their outage (4.9.3's updateTopicRouteInfoFromNameServer keeps
                # its tables)
                route = await routes.route(topic, refresh=stale, keep_known=True)
            except NoRouteError as exc:
                log.debug("no route for %s yet: %s", topic, exc)
                if stale and lookups is not None and routes.unanswered:
                    lookups.silent = True
                return []
            if stale:
                self._route_at[topic] = now
                if lookups is not None and routes.unanswered:  # (set by this look-up: nothing ran meanwhile)
                    lookups.silent = True
        members_at: dict[str, tuple[str, bool]] = {}
        for bd in route.broker_datas:
            addr = bd.master_addr()
            slaves = tuple(a for broker_id, a in sorted(bd.broker_addrs.items()) if broker_id != MASTER_ID and a)
            self._slaves[bd.broker_name] = slaves
            if addr is not None:
                self._brokers[bd.broker_name] = addr
                members_at[bd.broker_name] = (addr, True)
            elif slaves:
                members_at[bd.broker_name] = (slaves[0], False)
        self._route_brokers[topic] = members_at
        self._route_addrs[topic] = RouteCache.broker_addrs(route)
        return sorted(RouteCache.subscribe_queues(topic, route), key=java_queue_key)  # as Java members sort

    def _all_broker_addrs(self) -> list[str]:
        """Every broker known from the subscribed routes, masters and slaves: a consumer's heartbeats and
        unregistration go to them all, so a slave serving while its master is down knows the group."""
        return sorted(set(self._brokers.values()).union(*self._slaves.values()))

    async def _check_client_config(self) -> None:
        """Java's checkClientInBroker: every broker must accept each non-TAG subscription (BrokerError)."""
        for sub in self.subscriptions.values():
            if sub.expression_type != "TAG":
                for addr in sorted(set(self._brokers.values())):
                    await group_requests.check_client_config(self.consumer.pool, addr, self.group, self.client_id,
                                                             sub, self.settings.mq_client_api_timeout_s)

    def _announced_from_where(self) -> ConsumeFromWhere:
        """The consume-from-where the heartbeat carries."""
        return self.settings.consume_from_where

    def heartbeat_data(self) -> HeartbeatData:
        """HEART_BEAT's body: the group's consumer data and, in producerDataSet, CLIENT_INNER_PRODUCER:
        4.9.3's MQClientInstance registers its inner producer at start and prepareHeartbeatData lists it
        whatever else the instance holds."""
        consumer = ConsumerData(self.group, self.consume_type, str(self.settings.message_model),
                                str(self._announced_from_where()), tuple(self.subscriptions.values()))
        return HeartbeatData(self.client_id, (CLIENT_INNER_PRODUCER_GROUP,), (consumer,))

    async def _forget_offline_brokers(self) -> None:
        """4.9.3's cleanOfflineBroker: a broker address (master or slave) that no route of this consumer's
        topics names any more (the broker left the cluster for good) gets no more heartbeats, and its
        connection is closed."""
        known = frozenset().union(*self._route_addrs.values())
        gone = set(self._all_broker_addrs()) - known
        if not gone:
            return
        for name, addr in list(self._brokers.items()):
            if addr in gone:
                del self._brokers[name]
        for name, slaves in list(self._slaves.items()):
            kept = tuple(a for a in slaves if a not in gone)
            if kept:
                self._slaves[name] = kept
            else:
                del self._slaves[name]
        for addr in sorted(gone):
            log.info("the broker %s is in no route of the topics of group %s any more: forgotten", addr, self.group)
            await self.consumer.pool.discard(addr)

    async def _heartbeat_all(self) -> None:
        await self._forget_offline_brokers()
        data = self.heartbeat_data()
        for addr in self._all_broker_addrs():
            await self.periodically(f"heartbeat to {addr}", group_requests.heartbeat(
                self.consumer.pool, addr, data, self.settings.mq_client_api_timeout_s))

    # --- rebalance ------------------------------------------------------------------------------------

    async def _rebalance_loop(self) -> None:
        while not self.stopping:
            await wait_event(self._rebalance_wanted, self.settings.rebalance_interval_s)
            self._rebalance_wanted.clear()
            await self.periodically("rebalance", self.rebalance())

    def _resubscribed(self) -> None:
        """The subscriptions changed after start (as 4.9.3's subscribe / unsubscribe): the brokers learn it
        from a heartbeat and the queues are shared out again, by a rebalance woken now."""
        if self.started and not self.stopping:
            self._subscriptions_changed = True
            self._rebalance_wanted.set()

    async def rebalance(self) -> None:
        lookups = LookupRound()
        if self._subscriptions_changed and not self.stopping:
            self._subscriptions_changed = False
            for topic in list(self.subscriptions):
                await self._queues(topic, refresh=True, lookups=lookups)
            await self._heartbeat_all()
        async with self._rebalance_lock:
            if self.stopping:
                return
            self._lookups = lookups
            try:
                for topic in list(self.subscriptions):
                    try:
                        mine = await self._allocation(topic)
                    except (RocketStoreError, OSError) as exc:
                        self.failure_runs.failed(log, f"rebalance of {topic}", exc)
                        continue
                    self.failure_runs.worked(log, f"rebalance of {topic}")
                    if self.stopping:  # a shutdown began during the look-up: its ended pulls are not stalls
                        return
                    if topic not in self.subscriptions:  # unsubscribed during the look-up: its queues stay dropped
                        continue
                    if mine is not None:
                        await self._update_assignment(topic, mine)
            finally:
                self._lookups = None
            self.rebalance_count += 1

    async def _allocation(self, topic: str) -> set[MessageQueue] | None:
        """The queues of *topic* this member should own; None when that cannot be known now."""
        queues = await self._queues(topic, lookups=self._lookups)
        if not queues:
            return None
        if not self.clustering:
            return set(queues)
        # the group's members, as a broker of the topic that the route has now knows them (their heartbeats):
        # the first queue's broker, else the next; a master first, a slave for a broker whose master is down
        # (4.9.3 asks a broker of the route, its master or else a slave): a master being down must not stop
        # the rebalance, and a topic whose only master is down is still consumed from its slave
        members_at = self._route_brokers.get(topic, {})
        found = [members_at[name] for name in sorted({q.broker_name for q in queues}) if name in members_at]
        addrs = [addr for addr, master in found if master] + [addr for addr, master in found if not master]
        if not addrs:
            return None
        ids: list[str] = []
        for i, addr in enumerate(addrs):
            try:
                ids = await group_requests.consumer_ids(self.consumer.pool, addr, self.group,
                                                        self.settings.mq_client_api_timeout_s)
                break
            except (RocketStoreError, OSError):
                if i == len(addrs) - 1:
                    raise
        if not ids:
            return None
        strategy = self.settings.allocate_strategy
        try:
            mine = strategy(self.client_id, queues, sorted(ids, key=java_string_key))  # as Java members sort
        except Exception as exc:  # noqa: BLE001 -- a user's strategy; Java logs it and skips the topic too
            log.error("allocate strategy %s failed for %s: %r", strategy_name(strategy), topic, exc)
            return None
        # a fixed list (AllocateByConfig) may name other topics' queues: this rebalance is of *topic*
        return {mq for mq in mine if mq.topic == topic}

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """computePullFromWhere: the stored offset, else by ``consume_from_where`` (a retry topic starts at
        0 for LAST and at its end for TIMESTAMP)."""
        last = await self.offsets.read_store(mq)
        if last >= 0:
            return last
        where = self.settings.consume_from_where
        is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            if is_retry:
                return await self.consumer.max_offset(mq)
            assert self._timestamp_ms is not None
            return await self.consumer.search_offset(mq, self._timestamp_ms)
        return 0 if is_retry else await self.consumer.max_offset(mq)
