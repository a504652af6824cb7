"""A slave's copy of its master's non-commitlog state (RocketMQ's SlaveSynchronize, ha.md section 4).

Every ``period_s`` (10 s; the first round after 3 s) the slave asks its master's remoting port for the
topic table (GET_ALL_TOPIC_CONFIG: taken whole when its data version differs), the consumer offsets
(GET_ALL_CONSUMER_OFFSET: merged key by key), the delay offsets (GET_ALL_DELAY_OFFSET: the text written to
config/delayOffset.json as it came) and the subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG: taken
whole when its version differs).  The master's address is the one the name servers answered the last
registration with; no master known, or the master being this broker, means no round.

Loop-bound (the broker's event loop).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from rocketstore.broker.config_files import FailureLog, write_text_atomically
from rocketstore.broker.task_service import TaskService
from rocketstore.errors import ConnectionClosedError, RemotingError
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.repeats import FailureRun

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["SlaveSync"]

log = logging.getLogger(__name__)

FIRST_DELAY_S = 3.0
PERIOD_S = 10.0


class SlaveSync(TaskService):
    def __init__(self, broker: Broker, master_addr: Callable[[], str | None], *, period_s: float = PERIOD_S,
                 first_delay_s: float = FIRST_DELAY_S, timeout_s: float = 3.0,
                 ssl_context: ssl.SSLContext | None | Literal["process"] = "process") -> None:
        """*ssl_context*: how the connection to the master is made (ConnectionPool's)."""
        self.broker = broker
        self.master_addr = master_addr
        self.period_s = period_s
        self.first_delay_s = first_delay_s
        self.timeout_s = timeout_s
        self.pool = ConnectionPool(connect_timeout_s=timeout_s, ssl_context=ssl_context)
        #: rounds that reached the master
        self.rounds = 0
        #: a file's path -> the log of its failed writes (a full disk: one line, not one every round)
        self._failures: dict[str, FailureLog] = {}

    async def close(self) -> None:
        await super().close()
        await self.pool.close()

    async def _run(self) -> None:
        await asyncio.sleep(self.first_delay_s)
        failures = FailureRun()  # rounds failed in a row: the first and every 1000th warn, the others debug
        while True:
            try:
                synced = await self.sync_once()
            except (RemotingError, ValueError, OSError) as exc:
                log.log(failures.failed(), "slave sync with the master failed: %s (%d in a row; trying again "
                        "every %s s)", exc, failures.count, self.period_s)
            else:
                # no master known (it died and the name servers forgot it): no round, so the run goes on
                if synced and failures.count:
                    log.info("slave sync with the master goes on after %d failed round(s)", failures.ended())
            await asyncio.sleep(self.period_s)

    async def _ask(self, addr: str, code: int) -> bytes:
        response = await self.pool.request(addr, RemotingCommand.request(code, {}), self.timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise ValueError(f"the master answered request {code} with {response.code}: {response.remark}")
        return response.body

    @staticmethod
    def _object(body: bytes) -> dict[str, Any]:
        obj = fastjson.loads(body) if body else {}
        if not isinstance(obj, dict):
            raise ValueError(f"the master's answer is not an object: {body[:100]!r}")  # noqa: TRY004
        return obj

    async def sync_once(self) -> bool:
        """One round; False when there is no master to ask.  The four tables are synced apart, as 4.9.3's
        SlaveSynchronize does: one the master answers badly or too slowly (a large topic table past the
        timeout) does not keep the others from the slave (its consumer offsets were never synced while the
        topic table failed); the round then raises the first failure.  A master that cannot be reached
        ends the round at once."""
        addr = self.master_addr()
        if not addr or addr == self.broker.address:
            return False
        first: Exception | None = None
        for part in (self._sync_topics, self._sync_offsets, self._sync_delay_offsets, self._sync_groups):
            try:
                await part(addr)
            except (ConnectionClosedError, OSError):
                raise
            except (RemotingError, ValueError) as exc:
                if first is None:
                    first = exc
        if first is not None:
            raise first
        self.rounds += 1
        return True

    async def _sync_topics(self, addr: str) -> None:
        broker = self.broker
        if broker.topics.replace_all(self._object(await self._ask(addr, RequestCode.GET_ALL_TOPIC_CONFIG))):
            log.info("slave sync: took the master's topic table")
            broker.topic_created()  # registered soon, so routes list this slave for the new topics too

    async def _sync_offsets(self, addr: str) -> None:
        broker = self.broker
        offsets = self._object(await self._ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)).get("offsetTable")
        if isinstance(offsets, dict):
            broker.offsets.merge(offsets)
            await self._write(broker.offsets.path, broker.offsets.persist)

    async def _sync_delay_offsets(self, addr: str) -> None:
        try:
            delay = await self._ask(addr, RequestCode.GET_ALL_DELAY_OFFSET)
        except ValueError:
            delay = b""  # a master without delayed delivery has none
        if delay:
            path = os.path.join(self.broker.store_config.config_dir, "delayOffset.json")
            await self._write(path, write_text_atomically, path, delay.decode("utf-8"))

    async def _sync_groups(self, addr: str) -> None:
        if self.broker.groups.replace_all(self._object(await self._ask(addr,
                                                                       RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))):
            log.info("slave sync: took the master's subscription groups")

    async def _write(self, path: str, write: Callable[..., object], *args: Any) -> None:
        """*write(*args)* off the loop; a failure (a full disk) logged, and the round goes on to the other
        files, as 4.9.3's SlaveSynchronize syncs each apart and its persist only logs.  The next round writes
        the file again (consumerOffset.json, kept dirty, the broker's offsets timer too); topics.json and
        subscriptionGroup.json are written by their tables' writers, which log alike."""
        failures = self._failures.get(path)
        if failures is None:
            failures = self._failures[path] = FailureLog(log, path)
        try:
            await self.broker.run_blocking(write, *args)
        except OSError as exc:
            failures.failed(exc)
        else:
            failures.succeeded()
