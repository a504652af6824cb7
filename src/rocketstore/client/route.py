"""Routes from the name servers, cached per topic, and the message queues they imply.

Publish queues: for each writeable QueueData (sorted by broker name) whose broker has a master address,
queue ids 0..writeQueueNums-1; subscribe queues: readable QueueData, 0..readQueueNums-1 (routing.md 6).
A topic the name server does not know falls back to TBW102's route (capped to 4 queues), as every RocketMQ
client does, so the broker auto-creates it on the first send (a producer's ``create_topic_key`` and
``default_topic_queue_nums`` name another template and cap).

Loop-bound.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketstore.address_server import AddressServerWatcher, address_server_url, domain_from_env
from rocketstore.client.errors import FAQ_SUFFIX, BrokerError, NoRouteError, broker_error_for
from rocketstore.errors import LoopBoundError, RemotingError, RequestTimeoutError
from rocketstore.remoting.bodies import MASTER_ID, Perm, QueueData, TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.header_fields import HeaderFieldError, parse_java_long
from rocketstore.remoting.headers import MAX_QUEUE_NUMS, GetRouteInfoRequestHeader
from rocketstore.remoting.transport import Connection, ConnectionPool

__all__ = ["AUTO_CREATE_TOPIC", "DEFAULT_TOPIC_QUEUE_NUMS", "NAMESRV_ADDR_ENV", "MessageQueue", "RouteCache",
           "check", "namesrv_addr_or_env", "namesrv_addr_list"]

log = logging.getLogger(__name__)

AUTO_CREATE_TOPIC = "TBW102"
DEFAULT_TOPIC_QUEUE_NUMS = 4
#: how long a route is used before a look-up asks the name servers again, unless a client's background task
#: re-reads the routes it uses (see :meth:`RouteCache.refreshed_by`): then a cached route is used however old
ROUTE_TTL_S = 30.0
#: after a look-up the name servers could not answer, the old route is used this long before they are asked
#: again, so sends and pulls during an outage neither ask (a wasted connect each) nor wait for a hanging name
#: server each time (a client whose background refresh runs does not ask at all: see RouteCache.refreshed_by)
STALE_RETRY_S = 5.0
#: where a client given no name server address finds it (4.9.3's MixAll.NAMESRV_ADDR_ENV)
NAMESRV_ADDR_ENV = "NAMESRV_ADDR"
#: the time a route :meth:`RouteCache.expire` made out of date was answered at
_EXPIRED = float("-inf")


def namesrv_addr_or_env(namesrv_addr: str | None) -> str:
    """*namesrv_addr*, or when it is None the environment variable ``NAMESRV_ADDR`` ("" when unset), as a
    4.9.3 client whose namesrvAddr was never set (ClientConfig's default,
    NameServerAddressUtils.getNameServerAddresses; there is no Java system property rocketmq.namesrv.addr
    here).  An address given, even "", is used as given."""
    return os.environ.get(NAMESRV_ADDR_ENV, "") if namesrv_addr is None else namesrv_addr


def namesrv_addr_list(namesrv_addr: str | list[str]) -> list[str]:
    """The addresses of ``host:port[;host:port]`` (or of a list of them), in order, without blanks or
    repeats: what :meth:`RouteCache.update_namesrv_addrs` takes."""
    parts = namesrv_addr.split(";") if isinstance(namesrv_addr, str) else namesrv_addr
    return list(dict.fromkeys(a.strip() for a in parts if a.strip()))


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int


class RouteCache:
    def __init__(self, namesrv_addrs: list[str], pool: ConnectionPool, *, timeout_s: float = 3.0,
                 on_route: Callable[[str, TopicRouteData], None] | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None,
                 unit_name: str | None = None) -> None:
        """*on_route(topic, route)*: told of each route the name servers answer (a producer learns its
        brokers from them, as MQClientInstance's brokerAddrTable), on the loop; it must not raise.
        *create_topic_key* and *default_topic_queue_nums*: see :meth:`publish_route`.
        With no *namesrv_addrs*, the list comes from the address server of *namesrv_domain* (else the
        environment variable ROCKETMQ_NAMESRV_DOMAIN; 4.9.3's rocketmq.namesrv.domain) and
        *namesrv_domain_subgroup* (else ROCKETMQ_NAMESRV_DOMAIN_SUBGROUP, else ``nsaddr``), *unit_name*'s
        variant of it: asked before the first look-up, 10 s later and every 2 minutes after (see
        :mod:`rocketstore.address_server`).  Without either: ValueError."""
        #: the address server's reader (None: the list is the one given, or set by update_namesrv_addrs)
        self._address_server: AddressServerWatcher | None = None
        self._fetching: asyncio.Future[list[str]] | None = None
        if not namesrv_addrs:
            env_domain, env_subgroup = domain_from_env()
            if not (namesrv_domain or env_domain):  # (4.9.3 would try jmenv.tbsite.net, unlikely to be meant)
                raise ValueError(f"No name server address, please set it.{FAQ_SUFFIX}")  # 4.9.3's words
            self._address_server = AddressServerWatcher(
                address_server_url(namesrv_domain or env_domain, namesrv_domain_subgroup or env_subgroup,
                                   unit_name), self.update_namesrv_addrs)
        self.namesrv_addrs = namesrv_addrs
        self.pool = pool
        self.timeout_s = timeout_s
        self.on_route = on_route
        #: the topic whose route an unknown topic's publish route is made of, and the most queues it keeps
        #: (a producer's createTopicKey and defaultTopicQueueNums)
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self._routes: dict[str, tuple[float, TopicRouteData]] = {}
        self._stale: set[str] = set()  # topics running on an old route since the name servers went away
        #: the name server asked first: one picked at random, kept while it answers and its connection stays
        #: open (4.9.3's NettyRemotingClient: namesrvIndex starts random, namesrvAddrChoosed sticks), so a
        #: fleet of clients spreads over the name servers and a dead one is not tried first on every look-up
        self._namesrv_index = random.randrange(len(namesrv_addrs)) if namesrv_addrs else 0
        self._namesrv_connection: Connection | None = None
        #: the client's tasks that re-read its topics' routes in the background (see refreshed_by)
        self._refreshers: list[asyncio.Task[None]] = []
        #: the last look-up found no route because a name server it ended on did not answer (unreachable, or
        #: timed out): a round of look-ups stops there rather than wait that once per topic (see the
        #: Producer's route re-reads)
        self.unanswered = False

    def update_namesrv_addrs(self, namesrv_addr: str | list[str]) -> bool:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``) from the next look-up on, as
        4.9.3's updateNameServerAddressList (a client's setNamesrvAddr, its fetchNameServerAddr task): the
        chosen one stays chosen while it is listed; otherwise one of the new list, picked at random, is asked
        first.  The connections to the name servers no longer listed are closed (4.9.3 keeps them until the
        client shuts down): a look-up waiting on one fails over to the next name server, as on any
        connection that drops.  An empty list, or the same addresses, change nothing (False).
        The cached routes stay: they are the brokers', whichever name server told them."""
        addrs = namesrv_addr_list(namesrv_addr)
        if not addrs or set(addrs) == set(self.namesrv_addrs):
            return False
        log.info("name server addresses updated: %s (were %s)", ";".join(addrs), ";".join(self.namesrv_addrs))
        previous = self.namesrv_addrs
        chosen = previous[self._namesrv_index] if previous else None
        self.namesrv_addrs = addrs  # a new list: a look-up under way goes on with its names not asked yet
        if chosen in addrs:
            self._namesrv_index = addrs.index(chosen)
        else:
            self._namesrv_index = random.randrange(len(addrs))
            self._namesrv_connection = None
        for gone in previous:
            if gone not in addrs:
                self.pool.drop(gone)
        return True

    async def start_address_server(self) -> None:
        """With an address server (see :meth:`__init__`): read the list from it now if none was read yet (a
        client's start, or its first look-up), and go on reading it on its schedule."""
        watcher = self._address_server
        if watcher is None:
            return
        if not self.namesrv_addrs:  # (look-ups at once share one fetch)
            fetching = self._fetching
            if fetching is None or fetching.done() or fetching.get_loop() is not asyncio.get_running_loop():
                fetching = self._fetching = asyncio.ensure_future(watcher.fetch_now())
            await asyncio.shield(fetching)
        watcher.start()

    async def close(self) -> None:
        """Stop reading the address server (the client closes)."""
        if self._address_server is not None:
            await self._address_server.close()

    def refreshed_by(self, task: asyncio.Task[None]) -> None:
        """*task* re-reads the routes of the topics its client uses, in the background and on its own
        schedule (a producer's heartbeat task, a group consumer's rebalances), as 4.9.3's MQClientInstance
        does every pollNameServerInterval.  While it runs, a cached route is used however old, so a send or a
        pull never waits for the name servers when it has a route (one that hangs would make each wait its
        look-up's timeout; DefaultMQProducerImpl.tryToFindTopicPublishInfo asks only for a topic it has no
        usable route of); a route changed reaches them with the task's next round.  Without one running (it
        ended at shutdown, or belongs to a loop that ended), a route is fresh for ROUTE_TTL_S."""
        self._refreshers = [t for t in self._refreshers if not t.done()]
        self._refreshers.append(task)

    def _kept(self, checked_at: float) -> bool:
        """A route the name servers answered at *checked_at*, no longer fresh, is used on without asking
        them: a background task keeps it (not after :meth:`expire`, which wants them asked now)."""
        return checked_at != _EXPIRED and any(not t.done() for t in self._refreshers)

    def _warn_stale(self, topic: str, exc: Exception) -> None:
        if topic not in self._stale:  # once per outage, not per send
            self._stale.add(topic)
            log.warning("the name servers give no route for %s, using the last one known: %s", topic, exc)

    def _keep_stale(self, topic: str, cached: tuple[float, TopicRouteData], exc: Exception) -> TopicRouteData:
        """The old route *cached*, used on since the name servers gave none: it counts as fresh for another
        STALE_RETRY_S, or as long as it was fresh for (unless a look-up meanwhile replaced or dropped it)."""
        self._warn_stale(topic, exc)
        if self._routes.get(topic) is cached:
            self._routes[topic] = (max(cached[0], time.monotonic() - ROUTE_TTL_S + STALE_RETRY_S), cached[1])
        return cached[1]

    def _answered(self, topic: str) -> None:
        """The name servers answered *topic*'s route: the end of an outage :meth:`_warn_stale` told of."""
        if topic in self._stale:
            self._stale.discard(topic)
            log.info("the name servers give a route for %s again", topic)

    async def fetch(self, topic: str) -> TopicRouteData | None:
        """The name servers' route for *topic* (None when they say TOPIC_NOT_EXIST).  The chosen name server
        is asked first, then the others in turn; the first that answers is chosen from then on.  A chosen one
        whose connection closed meanwhile (it went down, or restarted and knows no broker yet) is left for
        the next, as 4.9.3 moves on from a name server channel that is no longer open."""
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                          GetRouteInfoRequestHeader(topic=topic).to_ext_fields())
        if self._address_server is not None:
            await self.start_address_server()
        addrs = self.namesrv_addrs
        count = len(addrs)
        if not count:  # the address server gave none yet
            self.unanswered = True
            raise NoRouteError(topic, f"No name server address, please set it.{FAQ_SUFFIX}")
        if self._namesrv_connection is not None and self._namesrv_connection.is_closed:
            self._namesrv_connection = None
            self._namesrv_index = (self._namesrv_index + 1) % count
        first = self._namesrv_index
        last_error: Exception | None = None
        tried: set[str] = set()
        while True:
            for step in range(count):
                index = (first + step) % count
                addr = addrs[index]
                if addr in tried or (addrs is not self.namesrv_addrs and addr not in self.namesrv_addrs):
                    continue  # a name server the list updated meanwhile no longer has is not asked (again)
                tried.add(addr)
                try:
                    connection = await self.pool.get(addr)
                    response = await connection.request(request, self.timeout_s)
                except LoopBoundError:
                    raise  # the client is used from the wrong loop: every name server would refuse the same
                except RequestTimeoutError as exc:
                    # closed, as 4.9.3's invokeSync closes a channel whose request timed out: a name server
                    # gone silent (no FIN, no RST) is not asked on it again, the next look-up moves on
                    self.pool.close_timed_out(addr, connection, exc)
                    last_error = exc
                    continue
                except RemotingError as exc:
                    last_error = exc
                    continue
                self.unanswered = False
                if addrs is self.namesrv_addrs:  # (not if the list was updated meanwhile: see below)
                    self._namesrv_index, self._namesrv_connection = index, connection
                if response.code == ResponseCode.SUCCESS:
                    return TopicRouteData.decode(response.body)
                if response.code == ResponseCode.TOPIC_NOT_EXIST:
                    return None
                last_error = broker_error_for(response.code, response.remark)
            if addrs is self.namesrv_addrs:
                break
            # the list was updated during the look-up (update_namesrv_addrs closed the connections of the
            # name servers it dropped): it goes on with the new list's name servers not asked yet
            addrs, count, first = self.namesrv_addrs, len(self.namesrv_addrs), self._namesrv_index
        self.unanswered = not isinstance(last_error, BrokerError)
        raise NoRouteError(topic, str(last_error))

    async def route(self, topic: str, *, refresh: bool = False, keep_known: bool = False) -> TopicRouteData:
        """The topic's route: the cached one while fresh (ROUTE_TTL_S) or kept by a background refresh
        (:meth:`refreshed_by`), else the name servers'.  When they
        cannot be asked (all unreachable, or erring), a cached route, however old, is used again, as a Java
        client keeps its route table through a name server outage, and they are asked again only
        STALE_RETRY_S later; *refresh* (an admin's look-up) wants
        the name servers' answer and never falls back, unless *keep_known* (a consumer's periodic refresh,
        4.9.3's updateTopicRouteInfoFromNameServer: ask now, keep the known route when there is no answer)."""
        cached = self._routes.get(topic)
        if cached is not None and not refresh and (
                time.monotonic() - cached[0] < ROUTE_TTL_S or self._kept(cached[0])):
            return cached[1]
        strict = refresh and not keep_known
        try:
            route = await self.fetch(topic)
        except NoRouteError as exc:
            if cached is None or strict:
                raise
            return self._keep_stale(topic, cached, exc)
        if route is None:
            if cached is None or strict:
                raise NoRouteError(topic, "the name servers do not know it")
            # a name server that restarted knows no broker until their next registration (up to 30 s):
            # the route known stays, as 4.9.3's updateTopicRouteInfoFromNameServer keeps its tables when
            # the answer is TOPIC_NOT_EXIST
            return self._keep_stale(topic, cached, NoRouteError(topic, "the name server does not know it"))
        self._routes[topic] = (time.monotonic(), route)
        self._answered(topic)
        if self.on_route is not None:
            self.on_route(topic, route)
        return route

    def fresh_route(self, topic: str) -> TopicRouteData | None:
        """The cached route of *topic* while it is usable (fresh, or kept by a background refresh; see
        :meth:`refreshed_by`), else None: a send's check without a coroutine."""
        cached = self._routes.get(topic)
        if cached is not None and (time.monotonic() - cached[0] < ROUTE_TTL_S or self._kept(cached[0])):
            return cached[1]
        return None

    async def publish_route(self, topic: str, *, refresh: bool = False) -> tuple[TopicRouteData, bool]:
        """(route, True) for a known topic; (the route of ``create_topic_key``, TBW102, capped to
        ``default_topic_queue_nums`` queues, 4, False) for an unknown one."""
        if not refresh:
            cached = self.fresh_route(topic)
            if cached is not None:
                return cached, True
        try:
            route = await self.fetch(topic)
        except NoRouteError as exc:
            stale = self._routes.get(topic)
            if stale is None or refresh:
                raise
            return self._keep_stale(topic, stale, exc), True
        if route is not None:
            self._routes[topic] = (time.monotonic(), route)
            self._answered(topic)
            if self.on_route is not None:
                self.on_route(topic, route)
            return route, True
        stale = self._routes.get(topic)
        if stale is not None and not refresh:  # a restarted name server's TOPIC_NOT_EXIST (see route())
            kept = self._keep_stale(topic, stale, NoRouteError(topic, "the name server does not know it"))
            return kept, True
        try:
            template = await self.route(self.create_topic_key, refresh=refresh)
        except NoRouteError as exc:  # named after the topic asked for, not the template (as 4.9.3's error)
            raise NoRouteError(topic, f"the name servers do not know it, and it cannot be created on a send "
                                      f"({exc.topic}: {exc.reason}; brokers with autoCreateTopicEnable "
                                      f"register that one)") from exc
        most = self.default_topic_queue_nums
        capped = tuple(QueueData(q.broker_name, min(q.read_queue_nums, most), min(q.write_queue_nums, most),
                                 q.perm, q.topic_sys_flag)
                       for q in template.queue_datas)
        return TopicRouteData(capped, template.broker_datas), False

    def invalidate(self, topic: str) -> None:
        self._routes.pop(topic, None)

    def expire(self) -> None:
        """Every cached route out of date: the next look-up of a topic asks the name servers, and still falls
        back to the cached route while they cannot be reached (unlike :meth:`invalidate`), even while a
        background task keeps the routes (see :meth:`refreshed_by`)."""
        self._routes = {topic: (_EXPIRED, route) for topic, (_, route) in self._routes.items()}

    @staticmethod
    def publish_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
        """The queues a producer sends to.  A route with an order config (``orderTopicConf``, the name
        server's ORDER_TOPIC_CONFIG when orderMessageEnable is on) names them, ``brokerName:count`` joined by
        ``;``, as 4.9.3's topicRouteData2TopicPublishInfo reads it; otherwise every writable queue of a
        broker with a master.  A malformed order config is ignored (the queue data then decide)."""
        if route.order_topic_conf:
            ordered = _order_conf_queues(topic, route.order_topic_conf)
            if ordered:
                return ordered
        queues: list[MessageQueue] = []
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            bd = route.broker(qd.broker_name)
            if not Perm.writeable(qd.perm) or bd is None or bd.master_addr() is None:
                continue
            count = min(qd.write_queue_nums, MAX_QUEUE_NUMS)  # a Java name server routes any int
            queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(count))
        return queues

    @staticmethod
    def broker_addrs(route: TopicRouteData) -> frozenset[str]:
        """Every broker address *route* names, masters and slaves: a client forgets a broker address no
        route of its topics names any more (4.9.3's cleanOfflineBroker, isBrokerAddrExistInTopicRouteTable)."""
        return frozenset(a for bd in route.broker_datas for a in bd.broker_addrs.values() if a)

    @staticmethod
    def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
        queues: list[MessageQueue] = []
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if Perm.readable(qd.perm):
                count = min(qd.read_queue_nums, MAX_QUEUE_NUMS)  # as publish_queues
                queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(count))
        return queues

    async def broker_addr(self, mq: MessageQueue, *, master_only: bool = True) -> str:
        route = await self.route(mq.topic)
        bd = route.broker(mq.broker_name)
        addr = None if bd is None else (bd.master_addr() if master_only else bd.any_addr())
        if addr is None:
            raise NoRouteError(mq.topic, f"broker {mq.broker_name} has no {'master ' if master_only else ''}address")
        return addr

    async def subscribe_addr(self, mq: MessageQueue, broker_id: int) -> tuple[str, bool]:
        """Where to pull *mq* from, as 4.9.3's findBrokerAddressInSubscribe chooses: broker *broker_id* of its
        broker name when the route has it, else for a slave's id the next id's (a group's
        whichBrokerWhenConsumeSlowly 1 finds the slave 2 of a master whose slaves are 2 and 3), else the
        master, else any of them; (address, it is a slave)."""
        route = await self.route(mq.topic)
        bd = route.broker(mq.broker_name)
        if bd is not None:
            addr = bd.broker_addrs.get(broker_id)
            if addr is None and broker_id != MASTER_ID:
                addr = bd.broker_addrs.get(broker_id + 1)
            if addr is not None:
                return addr, broker_id != MASTER_ID
            addr = bd.any_addr()
            if addr is not None:
                return addr, addr != bd.master_addr()
        raise NoRouteError(mq.topic, f"broker {mq.broker_name} has no address")


def _order_conf_queues(topic: str, conf: str) -> list[MessageQueue]:
    """The queues an order config (``broker-a:4;broker-b:4``) names, in its order; empty if any part of it
    is not ``name:count``.  A count above MAX_QUEUE_NUMS (the name servers' KV table takes any) makes that
    many queues at most, as a route's queue counts."""
    queues: list[MessageQueue] = []
    for part in conf.split(";"):
        name, sep, count = part.partition(":")
        if not sep or not name or not count.strip().isdigit():
            return []
        queues.extend(MessageQueue(topic, name, i) for i in range(min(int(count), MAX_QUEUE_NUMS)))
    return queues


def check(response: RemotingCommand, *ok_codes: int) -> RemotingCommand:
    """*response* if its code is SUCCESS (or one of *ok_codes*), else the matching BrokerError."""
    if response.code == ResponseCode.SUCCESS or response.code in ok_codes:
        return response
    raise broker_error_for(response.code, response.remark)


def answer_long(response: RemotingCommand, name: str, default: int | None = None) -> int:
    """The answer's extFields *name* read as 4.9.3's decodeCommandCustomHeader reads a long (Long.parseLong);
    *default* when it is missing (None: it must be there).  A value that is no number, or a required one
    missing, raises HeaderFieldError (a ProtocolError, so a RemotingError: retried where 4.9.3 retries the
    RemotingCommandException of an undecodable answer) rather than a bare ValueError."""
    text = response.ext_fields.get(name)
    if text is None:
        if default is None:
            raise HeaderFieldError(name, "is missing from the answer")
        return default
    try:
        return parse_java_long(text)
    except ValueError:
        raise HeaderFieldError(name, "is not a number", text) from None
