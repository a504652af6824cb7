"""The client-instance side of a :class:`~rocketstore.client.producer.Producer` (4.9.3's MQClientInstance
for a DefaultMQProducer): its life (start, close, ``service_state``), its connections and routes, the
heartbeats and route refreshes, the brokers it forgets, the requests brokers send on its connections, and
``update_namesrv_addr``.  :class:`ProducerInstance` is the Producer's base class; the sending is the
Producer's own.

Heartbeats, as 4.9.3's MQClientInstance sends them for a DefaultMQProducer: HEART_BEAT with the client id
and in ``producerDataSet`` the group and CLIENT_INNER_PRODUCER (the inner producer every MQClientInstance
has) to every master of the routes the producer has read.  A background task, started by ``start()``
(``async with`` starts) or else by the first route a send reads, heartbeats the masters of the auto-create
topic's route at once, a master new in a route as soon as it shows, and every
``heartbeat_interval_s`` (Java's heartbeatBrokerInterval, 30 s) all of them (a master that no route of its
topics names any more is forgotten then, as cleanOfflineBroker forgets it).  The same task re-reads the
routes of the topics seen every ``route_refresh_interval_s`` (Java's pollNameServerInterval, 30 s), on its
own schedule: while it runs, a send uses the route it has however old and asks the name servers only for a
topic it has none of, so one that hangs holds up no send, and a route changed reaches the sends with the
next re-read whatever the heartbeat interval.
``close()`` sends UNREGISTER_CLIENT with the group, then with CLIENT_INNER_PRODUCER, to each master
heartbeated.  So the brokers' producer tables list the producer under both groups, as they list a Java
client (GET_PRODUCER_CONNECTION_LIST, ``rocketstore producer connections``).  The heartbeats go on the
connection the sends use and never hold a send up.  A broker may call back on that connection: a reply
pushed for a RequestProducer of the same client id is handed over, a transaction check is dropped (a plain
producer has no check listener, as in Java).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Self

from rocketstore.client import group_requests
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, ServiceState, logged, state_not_ok, state_of
from rocketstore.client.namespace import with_namespace
from rocketstore.client.process_queue import wait_event
from rocketstore.client.push_types import local_ip, new_instance_name
from rocketstore.client.route import AUTO_CREATE_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, RouteCache, check
from rocketstore.errors import RequestTimeoutError, RocketStoreError
from rocketstore.message.names import group_problem
from rocketstore.remoting.bodies import HeartbeatData, TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import ClientTls, client_ssl_context
from rocketstore.remoting.transport import Connection, ConnectionPool
from rocketstore.repeats import FailureRuns

if TYPE_CHECKING:
    from rocketstore.client.trace_producer import ProducerTrace

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "DEFAULT_PRODUCER_GROUP", "ProducerInstance"]

#: the producer module's logger, as before the split: what a producer logs keeps its logger name
log = logging.getLogger("rocketstore.client.producer")

#: the group of the producer every 4.9.3 MQClientInstance starts for itself (MixAll.CLIENT_INNER_PRODUCER_GROUP):
#: its heartbeats carry it beside the user's group, so the brokers' producer tables list every Java client
#: under it; ours do the same (a Producer's heartbeats name both groups, its close unregisters both)
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
#: MixAll.DEFAULT_PRODUCER_GROUP: our Producer's default group (4.9.3's DefaultMQProducerImpl.checkConfig
#: refuses it at start; of ours only TransactionProducer refuses it)
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"


class ProducerInstance:
    """A producer's client instance: the name servers' routes, the connections to the brokers, the
    heartbeats; its subclass :class:`~rocketstore.client.producer.Producer` sends."""

    #: how a failed heartbeat or unregistration is logged: a plain producer's heartbeats only make it known to
    #: the brokers' producer tables (its sends report their own failures), so at INFO, which an application
    #: that did not configure logging does not see on stderr (Java logs them to its client log file);
    #: ServedProducer, whose callbacks depend on them, warns
    heartbeat_failure_level = logging.INFO

    def __init__(self, namesrv_addr: str, group: str, *, timeout_s: float,
                 credentials: SessionCredentials | None, heartbeat_interval_s: float,
                 instance_name: str | None, tls: ClientTls,
                 mq_client_api_timeout_s: float, route_refresh_interval_s: float,
                 client_ip: str | None = None, namespace: str | None = None, unit_name: str | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """As :class:`~rocketstore.client.producer.Producer`'s (which passes these on; *namesrv_addr* is
        given, the environment's already read); *timeout_s* (the producer's) bounds opening a connection."""
        if heartbeat_interval_s <= 0:
            raise ValueError("heartbeat_interval_s must be positive")
        if not route_refresh_interval_s > 0:
            raise ValueError("route_refresh_interval_s must be positive")
        if mq_client_api_timeout_s <= 0:
            raise ValueError("mq_client_api_timeout_s must be positive")
        if not create_topic_key or not create_topic_key.strip():
            raise ValueError("create_topic_key must name a topic")
        if default_topic_queue_nums < 1:
            raise ValueError("default_topic_queue_nums must be at least 1")
        self.mq_client_api_timeout_s = mq_client_api_timeout_s
        #: ClientConfig.unitName (None: none); createTopicKey and defaultTopicQueueNums: a topic the name
        #: servers do not know is sent to on this topic's route, with at most that many queues, and every
        #: send asks the broker to create it so (SEND_MESSAGE's defaultTopic, defaultTopicQueueNums)
        self.unit_name = unit_name
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self._default_topic_queue_nums_text = str(default_topic_queue_nums)  # for the send requests
        #: the namespace (ClientConfig.namespace), None for none: the group and the topics sent to are in it
        self.namespace = namespace or None
        self.group = with_namespace(self.namespace, group)
        self.pool = ConnectionPool(handler=self._serve_broker, connect_timeout_s=timeout_s, credentials=credentials,
                                   ssl_context=client_ssl_context(tls))
        self.routes = RouteCache([a for a in namesrv_addr.split(";") if a], self.pool,
                                 timeout_s=mq_client_api_timeout_s, on_route=self._route_seen,
                                 create_topic_key=create_topic_key,
                                 default_topic_queue_nums=default_topic_queue_nums,
                                 namesrv_domain=namesrv_domain,
                                 namesrv_domain_subgroup=namesrv_domain_subgroup, unit_name=unit_name)
        self.heartbeat_interval_s = heartbeat_interval_s
        self.route_refresh_interval_s = route_refresh_interval_s
        self.client_id = f"{client_ip or local_ip()}@{instance_name or new_instance_name()}"
        if unit_name and unit_name.strip():  # ClientConfig.buildMQClientId: ip@instance@unit
            self.client_id += f"@{unit_name}"
        #: broker name -> master address, from every route seen (Java's brokerAddrTable)
        self._brokers: dict[str, str] = {}
        #: master address -> the connection its last heartbeat from this producer went out on
        self._heartbeated: dict[str, Connection] = {}
        #: topics whose routes the name servers answered: re-read before each periodic heartbeat
        self._topics: set[str] = set()
        #: topic -> every broker address (masters and slaves) of the last route the name servers answered for
        #: it (4.9.3's topicRouteTable): a master none of them names is forgotten (cleanOfflineBroker)
        self._route_addrs: dict[str, frozenset[str]] = {}
        self._heartbeat_task: asyncio.Task[None] | None = None
        #: the failures in a row of the heartbeats and route refreshes (a broker or the name servers down fail
        #: them every round): logged once (and every 1000th), not once a round
        self.failure_runs = FailureRuns()
        #: set when a route shows a master not heartbeated yet, and when the heartbeats stop
        self._due = asyncio.Event()
        self.started = False
        #: start() failed (the group refused): a start again raises START_FAILED (see service_state)
        self.start_failed = False
        #: no more heartbeats (close() began); sends are refused from then on
        self.closed = False
        self._shut_down = False
        #: address -> the pool's connection last used there, taken again while it is open (pool.get otherwise)
        self._connections: dict[str, Connection] = {}
        #: the message trace (None: off, and then the send paths test nothing more than this): the Producer's
        #: __init__ sets it, :meth:`close` closes it
        self.trace: ProducerTrace | None = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the heartbeats, as DefaultMQProducer.start: in the background, the masters of the auto-create
        topic's route (where new topics go) are heartbeated at once, then every ``heartbeat_interval_s``;
        nothing here waits for the network.  Optional: the first route a send reads starts the heartbeats
        of a producer not started.  ClientError once closed, and for a group name 4.9.3's
        Validators.checkGroup refuses (blank, over 255 characters, outside ``^[%|a-zA-Z0-9_-]+$``), which
        every send refuses too; a start after that one raises 4.9.3's "The producer service state not OK,
        maybe started once, START_FAILED"."""
        self.check_startable()
        if self.started:
            return
        try:
            self._check_group()
        except ClientError:
            self.start_failed = True  # never again: 4.9.3 leaves such a producer START_FAILED for good
            raise
        self.started = True
        self._start_heartbeats()

    def check_startable(self) -> None:
        """ClientError in DefaultMQProducerImpl.start's words ("The producer service state not OK, maybe
        started once, SHUTDOWN_ALREADY") once closed or after a failed start (START_FAILED).  A second start
        of a running producer is let through (it does nothing), unlike 4.9.3's: a send starts the
        heartbeats of a producer never started, so callers may not know whether it was."""
        state = self.service_state
        if state in (ServiceState.SHUTDOWN_ALREADY, ServiceState.START_FAILED):
            cause = "the producer is closed" if state is ServiceState.SHUTDOWN_ALREADY else \
                "the first start of the producer failed"
            raise ClientError(state_not_ok("producer", state, cause, started_once=True))

    @property
    def service_state(self) -> ServiceState:
        """4.9.3's getServiceState: CREATE_JUST until :meth:`start` (sends work then too, as the module's
        docstring says), RUNNING after it, SHUTDOWN_ALREADY once closed, START_FAILED after a start that
        failed (for good: closing it does not change it, as in 4.9.3)."""
        return state_of(started=self.started, shut_down=self.closed, start_failed=self.start_failed)

    @property
    def is_running(self) -> bool:
        """Started and not closed (:attr:`service_state` RUNNING; 4.9.3's isRunning of its lite pull
        consumer, which every client here has)."""
        return self.service_state is ServiceState.RUNNING

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``, as the constructor's) from now
        on, its trace producer's too: 4.9.3's setNamesrvAddr on a running client (see
        :meth:`RouteCache.update_namesrv_addrs`; an empty one is ignored).  On the producer's loop, or
        before it has one."""
        self.routes.update_namesrv_addrs(namesrv_addr)
        if self.trace is not None:
            self.trace.dispatcher.producer.update_namesrv_addr(namesrv_addr)

    async def stop_heartbeats(self) -> None:
        """No more heartbeats (the first step of closing; what the producer still has in flight may finish
        before :meth:`close`)."""
        self.closed = True
        self._due.set()
        task = self._heartbeat_task
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        """Stop the heartbeats, unregister the group from every broker heartbeated (UNREGISTER_CLIENT, as
        DefaultMQProducer.shutdown), send the trace still waiting, close the connections.  A second call
        does nothing."""
        await self.stop_heartbeats()
        if self._shut_down:
            return
        self._shut_down = True
        for addr in sorted(self._heartbeated):
            await self.quietly(f"unregister from {addr}", self._unregister(addr))
        self._heartbeated.clear()
        if self.trace is not None:  # the trace waiting is sent first (it has its own producer)
            await self.trace.close()
        await self.routes.close()
        await self.pool.close()

    async def discover(self, topic: str, *, refresh: bool = False) -> None:
        """Note the masters of *topic*'s publish route and heartbeat the ones not heartbeated yet (or whose
        heartbeated connection closed), so that a broker that stores a message of *topic* knows this
        producer before it could call it back."""
        route, _ = await self.routes.publish_route(topic, refresh=refresh)
        for addr in self._note_masters(route):
            heartbeated = self._heartbeated.get(addr)
            if heartbeated is None or heartbeated.is_closed:
                await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))

    async def discover_quietly(self, topic: str) -> None:
        """:meth:`discover`, its failure logged at debug level: brokers that do not auto-create topics have
        no TBW102, and a name server away fails the sends anyway."""
        try:
            await self.discover(topic)
        except (RocketStoreError, OSError) as exc:
            log.debug("no route of %s to heartbeat its masters: %s", topic, exc)

    def heartbeat_data(self) -> HeartbeatData:
        """HEART_BEAT's body: this client id, and in producerDataSet the group and CLIENT_INNER_PRODUCER, the
        inner producer's that every 4.9.3 MQClientInstance registers beside the user's (prepareHeartbeatData)."""
        if self.group == CLIENT_INNER_PRODUCER_GROUP:
            return HeartbeatData(self.client_id, (self.group,), ())
        return HeartbeatData(self.client_id, (self.group, CLIENT_INNER_PRODUCER_GROUP), ())

    async def quietly(self, what: str, coro: Awaitable[None]) -> None:
        """Await *coro*; a failure is logged at :attr:`heartbeat_failure_level` (the next heartbeat period or
        send tries again)."""
        await logged(log, what, coro, self.heartbeat_failure_level)

    async def periodically(self, what: str, coro: Awaitable[None]) -> None:
        """Await *coro*, a round of the heartbeats or route refreshes: a failure is logged as :meth:`quietly`
        logs it, but of a run of failures of *what* (a broker down fails every round) the first and every
        1000th at that level, the others at DEBUG, and the round that works again says so at INFO."""
        await logged(log, what, coro, self.heartbeat_failure_level, runs=self.failure_runs)

    def _start_heartbeats(self) -> None:
        """Run the heartbeat loop on the running event loop, unless it runs there already: a producer used
        from one ``asyncio.run`` to the next gets a new one on each loop (the last loop's was cancelled when
        that loop ended; a task and the Event it waits on belong to one loop)."""
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        task = self._heartbeat_task
        if task is not None and task.get_loop() is loop and not task.done():
            return
        if task is not None:
            due, self._due = self._due.is_set(), asyncio.Event()
            if due:
                self._due.set()
        self._heartbeat_task = loop.create_task(self._heartbeat_loop())
        # its rounds re-read the routes: a send uses the route it has, whatever its age, meanwhile
        self.routes.refreshed_by(self._heartbeat_task)

    def _route_seen(self, topic: str, route: TopicRouteData) -> None:
        """A route the name servers answered (RouteCache's on_route): its masters join the ones heartbeated,
        a new one right away (the heartbeat loop wakes; a send does not wait for it)."""
        if self.closed:
            return
        self._topics.add(topic)
        self._route_addrs[topic] = RouteCache.broker_addrs(route)
        for addr in self._note_masters(route):
            heartbeated = self._heartbeated.get(addr)
            if heartbeated is None or heartbeated.is_closed:
                self._due.set()
        if self._due.is_set():
            self._start_heartbeats()

    def _note_masters(self, route: TopicRouteData) -> list[str]:
        addrs = []
        for bd in route.broker_datas:
            addr = bd.master_addr()
            if addr is not None:
                self._brokers[bd.broker_name] = addr
                addrs.append(addr)
        return addrs

    async def _heartbeat(self, addr: str) -> None:
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, self.heartbeat_data().encode())
        connection = await self.pool.get(addr)
        try:
            response = await connection.request(request, self.mq_client_api_timeout_s)
        except RequestTimeoutError as exc:  # closed, as 4.9.3's invokeSync closes it (see close_timed_out)
            self.pool.close_timed_out(addr, connection, exc)
            raise
        check(response)
        self._heartbeated[addr] = connection

    async def _unregister(self, addr: str) -> None:
        """UNREGISTER_CLIENT for the group, then for CLIENT_INNER_PRODUCER (4.9.3's shutdown unregisters the
        user's producer, then MQClientInstance.shutdown its inner one)."""
        for group in dict.fromkeys((self.group, CLIENT_INNER_PRODUCER_GROUP)):
            await group_requests.unregister(self.pool, addr, self.client_id, group,
                                            self.mq_client_api_timeout_s, producer=True)

    async def _heartbeat_loop(self) -> None:
        """Every route_refresh_interval_s re-read the routes of the topics seen (MQClientInstance's
        updateTopicRouteInfoFromNameServer every pollNameServerInterval), and every heartbeat_interval_s
        heartbeat every master known (sendHeartbeatToAllBroker every heartbeatBrokerInterval), each on its
        own schedule: a long heartbeat interval does not hold route changes back, nor a rare re-read the
        heartbeats; in between, as soon as a route shows a master not heartbeated yet, heartbeat that one."""
        # TBW102 (createTopicKey) first, as Java's producer puts it among its topics at start
        await self.discover_quietly(self.create_topic_key)
        next_refresh = time.monotonic() + self.route_refresh_interval_s
        next_round = time.monotonic() + self.heartbeat_interval_s
        while not self.closed:
            await wait_event(self._due, min(next_refresh, next_round) - time.monotonic())
            if self.closed:
                return
            self._due.clear()
            if time.monotonic() >= next_refresh:
                # a master new in a route is heartbeated below, in this turn, not a heartbeat round later
                await self._refresh_routes()
                next_refresh = time.monotonic() + self.route_refresh_interval_s
                if self.closed:
                    return
            if time.monotonic() >= next_round:
                next_round = time.monotonic() + self.heartbeat_interval_s
                await self._forget_offline_brokers()
                for addr in sorted(set(self._brokers.values())):
                    await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))
                continue
            for addr in sorted(set(self._brokers.values())):
                heartbeated = self._heartbeated.get(addr)
                if heartbeated is None or heartbeated.is_closed:
                    await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))

    async def _forget_offline_brokers(self) -> None:
        """4.9.3's cleanOfflineBroker, before each round of heartbeats: a master that no route of this
        producer's topics names any more (its broker left the cluster for good) is heartbeated no more, not
        unregistered from at close, and its connection is closed."""
        known = frozenset().union(*self._route_addrs.values())
        gone = (set(self._brokers.values()) | set(self._heartbeated)) - known
        if not gone:
            return
        for name, addr in list(self._brokers.items()):
            if addr in gone:
                del self._brokers[name]
        for addr in sorted(gone):
            log.info("the broker %s is in no route of this producer's topics any more: forgotten", addr)
            self._heartbeated.pop(addr, None)
            self._connections.pop(addr, None)
            await self.pool.discard(addr)

    async def _refresh_routes(self) -> None:
        """Re-read the routes of the topics seen, one after another, until a look-up finds no name server
        answering: the others keep their routes until the next round.  A name server that accepts and never
        answers makes each look-up wait mq_client_api_timeout_s; asking on would hold the round's heartbeats
        back by that once per topic, and a broker drops a client not heartbeated for 120 s."""
        for topic in sorted(self._topics):
            await self.periodically(f"route of {topic}", self._refresh_route(topic))
            if self.routes.unanswered:
                break

    async def _refresh_route(self, topic: str) -> None:
        route, _ = await self.routes.publish_route(topic, refresh=True)
        self._note_masters(route)

    async def _serve_broker(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """A request a broker sends on this producer's connection (it knows the connection by the
        heartbeats): a reply pushed for a RequestProducer of this client id is handed over (Java's one
        MQClientInstance serves both); a transaction check finds no listener and is dropped, as a plain
        DefaultMQProducer drops it; anything else is not supported."""
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            from rocketstore.client.request_producer import deliver_reply  # it imports the producer

            return deliver_reply(request)
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            log.warning("transaction check from %s for producer group %s, which has no check listener; ignored",
                        connection.peer_address, self.group)
            return None
        return None if request.is_oneway else request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported")

    def _check_group(self) -> None:
        """ClientError for a group name Validators.checkGroup refuses (DefaultMQProducerImpl.checkConfig): the
        broker would refuse its heartbeats, and Java's producer does not start with it."""
        problem = group_problem(self.group)
        if problem is not None:
            raise ClientError(problem)
