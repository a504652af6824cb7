"""Broker -> name server registration: REGISTER_BROKER to every name server at start and every 30 s,
again (coalesced) whenever the topic set changes, UNREGISTER_BROKER at shutdown.

Uses remoting.transport only.  Loop-bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable

from rocketstore.errors import RemotingError, RocketStoreError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import RegisterBrokerBody
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from rocketstore.remoting.transport import ConnectionPool

__all__ = ["Registrar"]

log = logging.getLogger(__name__)


class Registrar:
    def __init__(self, namesrv_addrs: list[str], *, cluster_name: str, broker_name: str, broker_id: int,
                 broker_addr: str, ha_server_addr: str, body: Callable[[], RegisterBrokerBody],
                 period_s: float = 30.0, timeout_s: float = 6.0, compressed: bool = False,
                 on_order_topics: Callable[[dict[str, str]], object] | None = None) -> None:
        """*on_order_topics*: given the ORDER_TOPIC_CONFIG table (topic -> ``brokerName:queueNums;...``) a name
        server answers a registration with, after each round that got one (4.9.3's doRegisterBrokerAll hands
        it to TopicConfigManager.updateOrderTopicConfig, which marks exactly those topics ``order``); a name
        server without such entries answers no table and nothing is called."""
        self.namesrv_addrs = namesrv_addrs
        self.cluster_name = cluster_name
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.broker_addr = broker_addr
        self.ha_server_addr = ha_server_addr
        self.body = body
        self.period_s = period_s
        self.timeout_s = timeout_s
        self.compressed = compressed
        self.on_order_topics = on_order_topics
        self.pool = ConnectionPool(connect_timeout_s=timeout_s)
        self._task: asyncio.Task[None] | None = None
        self._again = asyncio.Event()
        #: name server address -> True when its last registration succeeded
        self.registered: dict[str, bool] = {}
        #: what the registrations answered (for a slave: its master's HA address, the last one answered;
        #: its remoting address, None while the name server knows no master of this broker name)
        self.master_ha_addr: str | None = None
        self.master_addr: str | None = None

    async def start(self) -> None:
        """Register once with every name server (failures are logged), then keep registering."""
        await self.register_all()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def request_registration(self) -> None:
        """Register again soon (topic created or changed); several requests coalesce into one."""
        self._again.set()

    async def _loop(self) -> None:
        while True:
            try:
                # (asyncio.timeout, not wait_for: 3.11's wait_for can swallow close's cancel when the event is
                # set at that moment, and the loop would register again after the unregistration)
                async with asyncio.timeout(self.period_s):
                    await self._again.wait()
            except TimeoutError:
                pass
            self._again.clear()
            try:
                await self.register_all()
            except Exception:
                log.exception("registration with the name servers failed")

    async def register_all(self) -> None:
        if not self.namesrv_addrs:
            return
        body = self.body()
        # encoded off the loop: 10,000 topics are 1.4 MB of JSON and take ~200 ms to encode, which on the
        # loop stalled every send and pull at each registration (every 30 s, and after topic changes); the
        # body holds a copy of the table (frozen configs), so the loop may change the table meanwhile
        payload = await asyncio.get_running_loop().run_in_executor(
            None, body.encode_compressed if self.compressed else body.encode)
        header = RegisterBrokerRequestHeader(
            broker_name=self.broker_name, broker_addr=self.broker_addr, cluster_name=self.cluster_name,
            ha_server_addr=self.ha_server_addr, broker_id=self.broker_id, compressed=self.compressed,
            body_crc32=zlib.crc32(payload) & 0x7FFFFFFF)
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), payload)
        answers = await asyncio.gather(*(self._register_one(addr, request) for addr in self.namesrv_addrs))
        # as 4.9.3, one answer decides (its first to arrive; here the first accepting name server's in the
        # configured order, so two name servers with different tables do not flip the flags at random)
        accepted = [table for ok, table in answers if ok]
        if accepted and accepted[0] is not None and self.on_order_topics is not None:
            self.on_order_topics(accepted[0])

    async def _register_one(self, addr: str, request: RemotingCommand) -> tuple[bool, dict[str, str] | None]:
        """Register with one name server: whether it accepted, and the ORDER_TOPIC_CONFIG table it answered
        (None: no table, or one that does not read)."""
        try:
            response = await self.pool.request(addr, request, self.timeout_s)
        except RemotingError as exc:
            if self.registered.get(addr, True):
                log.warning("cannot register with name server %s: %s", addr, exc)
            self.registered[addr] = False
            return False, None
        table: dict[str, str] | None = None
        ok = response.code == ResponseCode.SUCCESS
        if not ok:
            log.warning("name server %s refused registration: %s %s", addr, response.code, response.remark)
        else:
            answer = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
            # as 4.9.3's doRegisterBrokerAll: an answer without a master (gone for now) leaves the HA address,
            # so the HA client goes on trying it and follows the master as soon as it is back there; the
            # config sync's address follows the answer (no master, no sync)
            if answer.ha_server_addr:
                self.master_ha_addr = answer.ha_server_addr
            self.master_addr = answer.master_addr or None
            table = _order_topic_table(addr, response.body)
        self.registered[addr] = ok
        return ok, table

    async def close(self, *, unregister: bool = True) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task  # ended before the unregistration: nothing registers after it
        if unregister and self.namesrv_addrs:
            header = UnregisterBrokerRequestHeader(broker_name=self.broker_name, broker_addr=self.broker_addr,
                                                   cluster_name=self.cluster_name, broker_id=self.broker_id)
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())

            async def one(addr: str) -> None:
                try:
                    await self.pool.request(addr, request, min(self.timeout_s, 2.0))
                except RemotingError as exc:
                    log.info("cannot unregister from name server %s: %s", addr, exc)

            await asyncio.gather(*(one(a) for a in self.namesrv_addrs))
        await self.pool.close()


def _order_topic_table(addr: str, body: bytes | None) -> dict[str, str] | None:
    """The KVTable body (``{"table": {topic: conf}}``) of a registration answer; None when there is none or
    it does not read (logged: the flags then stay as they are)."""
    if not body:
        return None
    try:
        table = fastjson.loads(body).get("table") or {}
        return {str(topic): str(conf) for topic, conf in table.items()}
    except (RocketStoreError, ValueError, AttributeError) as exc:
        log.warning("name server %s answered an unreadable ORDER_TOPIC_CONFIG table: %s", addr, exc)
        return None
