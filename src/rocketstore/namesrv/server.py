"""NameServer: the route table and its handlers behind a RemotingServer, plus the broker expiry scan.

Given a NamesrvConfig it keeps its KV table in the config's kvConfigPath (read at construction) and writes
its settings to configStorePath after an UPDATE_NAMESRV_CONFIG; without one (tests, embedded use) both live
in memory only.

Loop-bound: create, start and close it on one event loop.
"""

from __future__ import annotations

import asyncio
import logging

from rocketstore.namesrv.config import NamesrvConfig
from rocketstore.namesrv.handlers import KVTable, NameServerHandlers
from rocketstore.namesrv.route_table import BROKER_EXPIRY_MS, RouteTable
from rocketstore.remoting.server import DEFAULT_IDLE_TIMEOUT_S, RemotingServer
from rocketstore.remoting.tls import TlsConfig
from rocketstore.remoting.transport import Connection

__all__ = ["NameServer"]

log = logging.getLogger(__name__)

#: RocketMQ scans every 10 s, first after 5 s
SCAN_INTERVAL_S = 10.0


class NameServer:
    """A name server.  ``await start(host, port)``; ``address`` says where it listens; ``await close()``."""

    def __init__(self, config: NamesrvConfig | None = None, *, broker_expiry_ms: int = BROKER_EXPIRY_MS,
                 scan_interval_s: float = SCAN_INTERVAL_S, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
                 tls: TlsConfig | None = None) -> None:
        """*tls*: serve TLS connections too (or only) as it says (:mod:`rocketstore.remoting.tls`)."""
        self.routes = RouteTable(broker_expiry_ms)
        self.kv = KVTable(config.kv_config_path if config is not None else None)
        self.handlers = NameServerHandlers(self.routes, self.kv, config=config, persist_config=config is not None)
        self.server = RemotingServer(self.handlers.router(), idle_timeout_s=idle_timeout_s,
                                     on_connection_closed=self._connection_closed, tls=tls)
        self.scan_interval_s = scan_interval_s
        self._scan_task: asyncio.Task[None] | None = None

    @property
    def config(self) -> NamesrvConfig:
        return self.handlers.config

    @property
    def address(self) -> str:
        return self.server.address

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self, host: str = "127.0.0.1", port: int = 9876) -> None:
        await self.server.start(host, port)
        self._scan_task = asyncio.get_running_loop().create_task(self._scan())

    def _connection_closed(self, connection: Connection) -> None:
        gone = self.routes.connection_closed(connection)
        if gone:
            log.info("brokers %s gone with their connection", gone)

    async def _scan(self) -> None:
        await asyncio.sleep(min(5.0, self.scan_interval_s))
        while True:
            self.scan_brokers()
            await asyncio.sleep(self.scan_interval_s)

    def scan_brokers(self) -> list[str]:
        """One pass of 4.9.3's scanNotActiveBroker: the brokers without a registration for the expiry time
        are dropped (returned), on the handlers' liveness clock (monotonic, see handlers._now_ms)."""
        gone = self.routes.expire_connections(self.handlers.clock_ms())
        if gone:
            log.warning("brokers %s expired (no registration for %s ms)", list(gone),
                        self.routes.broker_expiry_ms)
        # as 4.9.3's scanNotActiveBroker: the expired broker's connection is closed too (its next
        # registration connects again); any other broker that registered over it goes with it
        for connection in gone.values():
            if isinstance(connection, Connection) and not connection.is_closed:
                connection.close()
        return list(gone)

    async def close(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            self._scan_task = None
        await self.server.close()
