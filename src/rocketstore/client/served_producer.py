"""A producer the brokers can call back: the base of the transactional producer (CHECK_TRANSACTION_STATE)
and the requesting producer (PUSH_REPLY_MESSAGE_TO_CLIENT).

A broker reaches a producer only on a connection the producer heartbeats on: HEART_BEAT with the group in
``producerDataSet`` and the client id, as the Java client's MQClientInstance sends to every master of the
routes it knows.  This Producer does the same: its connections answer the broker's requests with a
*handler*; ``start()`` heartbeats to the masters of the auto-create topic's route (where new topics go),
``discover(topic)`` to those of a topic's route before a send that needs the broker to know it, and every
``heartbeat_interval_s`` the routes of the topics seen are re-read and every master heartbeated again.
A broker forgets a producer whose connection closed (a broker restart, a dropped socket), so
``discover`` heartbeats again a master whose heartbeated connection has closed: without that, the replies
to requests and the checks of transactions sent after a broker restart find no channel until the next
periodic heartbeat (up to 30 s; 4.9.3's Java client has that gap).
``close()`` unregisters the group from each broker heartbeated (UNREGISTER_CLIENT), then closes the
connections.

Loop-bound.  Imports remoting and message only (never store, broker or namesrv).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Self

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, logged
from rocketstore.client.process_queue import wait_event
from rocketstore.client.producer import Producer
from rocketstore.client.push_types import local_ip, new_instance_name
from rocketstore.client.route import AUTO_CREATE_TOPIC, RouteCache, check
from rocketstore.remoting.bodies import HeartbeatData, TopicRouteData
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import UnregisterClientRequestHeader
from rocketstore.remoting.transport import Connection, ConnectionPool, RequestHandler

__all__ = ["ServedProducer"]

log = logging.getLogger(__name__)


class ServedProducer(Producer):
    def __init__(self, namesrv_addr: str, group: str, handler: RequestHandler, *, timeout_s: float = 3.0,
                 retry_times: int = 2, heartbeat_interval_s: float = 30.0, instance_name: str | None = None,
                 credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None) -> None:
        """*handler* answers the requests brokers send on this producer's connections; the client id is
        ``ip@instance_name`` (default ``pid#nanos``, unique per producer); *enable_trace* / *trace_topic*
        as the Producer's."""
        if heartbeat_interval_s <= 0:
            raise ValueError("heartbeat_interval_s must be positive")
        super().__init__(namesrv_addr, group, timeout_s=timeout_s, retry_times=retry_times, credentials=credentials,
                         enable_trace=enable_trace, trace_topic=trace_topic)
        # the Producer's pool replaced, before it opened any connection, by one whose connections serve
        self.pool = ConnectionPool(handler=handler, connect_timeout_s=timeout_s, credentials=credentials)
        self.routes = RouteCache(self.routes.namesrv_addrs, self.pool, timeout_s=timeout_s)
        self.heartbeat_interval_s = heartbeat_interval_s
        self.client_id = f"{local_ip()}@{instance_name or new_instance_name()}"
        #: broker name -> master address, from every route seen (Java's brokerAddrTable)
        self._brokers: dict[str, str] = {}
        #: master address -> the connection its last heartbeat from this producer went out on
        self._heartbeated: dict[str, Connection] = {}
        #: topics sent to: their routes are re-read before each periodic heartbeat
        self._topics: set[str] = set()
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # set once, when the heartbeats stop
        self.started = False
        self.closed = False

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def start(self) -> None:
        """Heartbeat to the masters of the auto-create topic's route and start the periodic heartbeats."""
        if self.closed:
            raise ClientError("the producer is closed")
        if self.started:
            return
        self.started = True
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        await self.quietly(f"route of {AUTO_CREATE_TOPIC}", self.discover(AUTO_CREATE_TOPIC))

    async def stop_heartbeats(self) -> None:
        """No more periodic heartbeats (the first step of closing; what the producer still has in flight
        may finish before :meth:`close`)."""
        self.closed = True
        self._wake.set()
        if self._heartbeat_task is not None:
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)

    async def close(self) -> None:
        """Stop the heartbeats, unregister the group from every broker heartbeated, close the connections."""
        await self.stop_heartbeats()
        for addr in sorted(self._heartbeated):
            await self.quietly(f"unregister from {addr}", self._unregister(addr))
        self._heartbeated.clear()
        await super().close()

    async def discover(self, topic: str, *, refresh: bool = False) -> None:
        """Note the masters of *topic*'s publish route and heartbeat the ones not heartbeated yet, so that
        a broker that stores a message of *topic* knows this producer before it could call it back."""
        self._topics.add(topic)
        route, _ = await self.routes.publish_route(topic, refresh=refresh)
        for addr in self._note_masters(route):
            heartbeated = self._heartbeated.get(addr)
            if heartbeated is None or heartbeated.is_closed:
                await self.quietly(f"heartbeat to {addr}", self._heartbeat(addr))

    async def broker_addr(self, topic: str, broker_name: str) -> str:
        """The master of *broker_name* (Java's findBrokerAddressInPublish), the route re-read once if it is
        not known (a retry may have gone to a broker the route seen before the send did not show)."""
        addr = self._brokers.get(broker_name)
        if addr is None:
            await self.discover(topic, refresh=True)
            addr = self._brokers.get(broker_name)
        if addr is None:
            raise ClientError(f"broker {broker_name} has no master address")
        return addr

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(self.client_id, (self.group,), ())

    @staticmethod
    async def quietly(what: str, coro: Awaitable[None]) -> None:
        """Await *coro*; a failure is logged (the next heartbeat period or send tries again)."""
        await logged(log, what, coro)

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
        check(await connection.request(request, self.timeout_s))
        self._heartbeated[addr] = connection

    async def _unregister(self, addr: str) -> None:
        ext = UnregisterClientRequestHeader(client_id=self.client_id, producer_group=self.group).to_ext_fields()
        check(await self.pool.request(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, ext),
                                      self.timeout_s))

    async def _heartbeat_loop(self) -> None:
        while not self.closed:
            await wait_event(self._wake, self.heartbeat_interval_s)
            if self.closed:
                return
            for topic in sorted(self._topics | {AUTO_CREATE_TOPIC}):
                await self.quietly(f"route of {topic}", self._refresh_route(topic))
            for addr in sorted(set(self._brokers.values())):
                await self.quietly(f"heartbeat to {addr}", self._heartbeat(addr))

    async def _refresh_route(self, topic: str) -> None:
        route, _ = await self.routes.publish_route(topic, refresh=True)
        self._note_masters(route)
