"""Broker -> name server registration: REGISTER_BROKER to every name server at start and every 30 s,
again (coalesced) whenever the topic set changes, UNREGISTER_BROKER at shutdown.  An admin's topic creation
registers that topic alone (an increment, 4.9.3's registerIncrementBrokerData): the name server upserts the
topics it is given and keeps the others, so re-sending 10,000 topics (1.4 MB, ~100 ms to decode) for one new
topic is not needed.  Each name server gets its registrations one at a time and in the order their tables
were read (an older one that lost the race to a newer one is not sent); one that does not answer (for up
to registerBrokerTimeoutMills) holds the next registration back from none of the others.

Uses remoting.transport only.  Loop-bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from rocketstore.errors import RemotingError, RequestTimeoutError, RocketStoreError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from rocketstore.remoting.transport import Connection, ConnectionPool

__all__ = ["Registrar"]

log = logging.getLogger(__name__)


class _Answer(NamedTuple):
    """A name server's answer to a registration: whether it accepted, the ORDER_TOPIC_CONFIG table it sent,
    and (to a slave) its master's HA and remoting addresses."""
    ok: bool
    order_topics: dict[str, str] | None = None
    master_ha_addr: str | None = None
    master_addr: str | None = None


@dataclass(frozen=True, slots=True)
class _Registration:
    """One REGISTER_BROKER for the name servers.  *seq* orders them as their tables were read; *version* is
    the data version they carry.  An increment (some topics only) has *follows*: the data version the name
    server must already hold (the whole table as it was just before these topics changed) for the increment
    to leave it with the whole table at *version*."""
    seq: int
    request: RemotingCommand
    version: DataVersion
    follows: DataVersion | None = None
    #: the name servers an increment was not sent to (not known to hold its base): they get the whole table
    skipped: set[str] = field(default_factory=set)


class Registrar:
    def __init__(self, namesrv_addrs: list[str], *, cluster_name: str, broker_name: str, broker_id: int,
                 broker_addr: str, ha_server_addr: str, body: Callable[[], RegisterBrokerBody],
                 period_s: float = 30.0, timeout_s: float = 6.0, compressed: bool = False,
                 on_order_topics: Callable[[dict[str, str]], object] | None = None,
                 ssl_context: ssl.SSLContext | None | Literal["process"] = "process") -> None:
        """*ssl_context*: how the connections to the name servers are made (ConnectionPool's).
        *on_order_topics*: given the ORDER_TOPIC_CONFIG table (topic -> ``brokerName:queueNums;...``) a name
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
        self.pool = ConnectionPool(connect_timeout_s=timeout_s, ssl_context=ssl_context)
        self._task: asyncio.Task[None] | None = None
        #: set when close begins: the broker serves until it has unregistered, and a registration sent after
        #: the unregistration (a topic created meanwhile) would route the closed broker until it expires
        self._closed = False
        self._again = asyncio.Event()
        #: name server address -> the task sending registrations there, one at a time and in order
        self._senders: dict[str, asyncio.Task[None]] = {}
        #: name server address -> the registrations waiting for the one in flight there, by seq, each with the
        #: futures of everyone waiting for it (a whole table drops those read before it: it holds them)
        self._waiting: dict[str, list[tuple[_Registration, list[asyncio.Future[_Answer]]]]] = {}
        self._seq = 0
        #: name server address -> the newest seq sent there (an older registration is not sent after it)
        self._sent_seq: dict[str, int] = {}
        #: name server address -> the connection its last accepted registration went over and that one's data
        #: version: what it holds (a new connection may be a restarted name server, which holds nothing)
        self._holds: dict[str, tuple[Connection, DataVersion]] = {}
        #: rounds whose answers are still awaited (the loop goes on without them when asked to register again)
        self._rounds: set[asyncio.Task[None]] = set()
        #: name server address -> True when its last registration succeeded
        self.registered: dict[str, bool] = {}
        #: what the registrations answered (for a slave: its master's HA address, the last one answered;
        #: its remoting address, None while the name server knows no master of this broker name); each round
        #: takes both from one answer, as :meth:`_answers` says
        self.master_ha_addr: str | None = None
        self.master_addr: str | None = None

    async def start(self) -> None:
        """Register once with every name server (failures are logged), then keep registering."""
        await self.register_all()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def update_namesrv_addrs(self, addrs: list[str]) -> None:
        """Register with the name servers of *addrs* from now on (the address server's new list), now; the
        ones no longer listed get nothing more (4.9.3's updateNameServerAddressList)."""
        if addrs and addrs != self.namesrv_addrs:
            self.namesrv_addrs = list(addrs)
            self.request_registration()

    def request_registration(self) -> None:
        """Register again soon (topic created or changed); several requests coalesce into one."""
        self._again.set()

    def register_increment(self, body: RegisterBrokerBody, follows: DataVersion) -> asyncio.Task[None] | None:
        """Register *body* (the topics an admin just created or changed, at the table's new data version) with
        every name server now, as 4.9.3's registerIncrementBrokerData; *follows* is the data version the
        table had just before the change.  A name server not known to hold exactly that version (a change not
        registered yet, its last registration failed, a new connection) gets the whole table soon instead:
        it takes a registration's topics only when its data version moved, so an increment on top of an
        older view would leave the topics between them out until the next change.

        The task that ends once a name server routes the topics (it accepted the increment, or the whole table
        sent where the increment could not go), or none will (each answered, or the registration timeout
        passed): an admin's creation is answered then, as 4.9.3's once its name servers answered (a restarted
        one takes 4.9.3's increment whole), but not held back by a stopped name server while another routes
        the topic.  None when there is no name server to tell."""
        if not self.namesrv_addrs or self._closed:
            return None
        self._seq += 1
        # one or a few topics: encoded here (microseconds), so the seq is the order the table was read in
        registration = _Registration(self._seq, self._request(body, body.encode_compressed() if self.compressed
                                                              else body.encode()), body.data_version, follows)
        futures: list[asyncio.Future[_Answer]] = []
        self._answer_round(registration, futures)

        async def settled() -> None:
            if await self._one_accepts(futures) or not registration.skipped:
                return
            whole: list[asyncio.Future[_Answer]] = []
            if await self._send_round(whole) is not None:
                await self._one_accepts(whole)

        task = asyncio.get_running_loop().create_task(settled())
        self._rounds.add(task)  # (cancelled by close, as the rounds are)
        task.add_done_callback(self._round_done)
        return task

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
                answers = await self._send_round()
            except Exception:
                log.exception("registration with the name servers failed")
                continue
            if answers is None:
                continue
            # the answers are waited for, but not past the next registration wanted: a name server that does
            # not answer (stopped; its socket still accepts) must not hold a new topic back from the others for
            # registerBrokerTimeoutMills (4.9.3 registers a topic change from the thread that made it, beside
            # the periodic registration)
            again = asyncio.get_running_loop().create_task(self._again.wait())
            try:
                await asyncio.wait((answers, again), return_when=asyncio.FIRST_COMPLETED)
            finally:
                again.cancel()

    async def register_all(self) -> None:
        """Register with every name server and wait for all their answers (failures are logged).  A name server
        still busy with an earlier registration gets this one right after it."""
        answers = await self._send_round()
        if answers is not None:
            await answers

    async def _one_accepts(self, futures: list[asyncio.Future[_Answer]]) -> bool:
        """Whether one of the name servers' answers *futures* accepts, waiting until one does, all answered,
        or the registration timeout passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        pending: set[asyncio.Future[_Answer]] = set(futures)
        while pending:
            done, pending = await asyncio.wait(pending, timeout=max(0.0, deadline - loop.time()),
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                return False
            if any(not f.cancelled() and f.exception() is None and f.result().ok for f in done):
                return True
        return False

    async def _send_round(self,
                          futures: list[asyncio.Future[_Answer]] | None = None) -> asyncio.Task[None] | None:
        """Encode the registration and hand it to every name server's sender; the task that waits for their
        answers (None without name servers, or once closing: nothing is sent after the unregistration).
        *futures* receives each name server's answer."""
        if not self.namesrv_addrs or self._closed:
            return None
        self._seq += 1
        seq = self._seq
        body = self.body()
        # encoded off the loop: 10,000 topics are 1.4 MB of JSON and take ~200 ms to encode, which on the
        # loop stalled every send and pull at each registration (every 30 s, and after topic changes); the
        # body holds a copy of the table (frozen configs), so the loop may change the table meanwhile
        payload = await asyncio.get_running_loop().run_in_executor(
            None, body.encode_compressed if self.compressed else body.encode)
        if self._closed:  # closed while it was encoded
            return None
        registration = _Registration(seq, self._request(body, payload), body.data_version)
        return self._answer_round(registration, futures)

    def _request(self, body: RegisterBrokerBody, payload: bytes) -> RemotingCommand:
        header = RegisterBrokerRequestHeader(
            broker_name=self.broker_name, broker_addr=self.broker_addr, cluster_name=self.cluster_name,
            ha_server_addr=self.ha_server_addr, broker_id=self.broker_id, compressed=self.compressed,
            body_crc32=zlib.crc32(payload) & 0x7FFFFFFF)
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), payload)

    def _answer_round(self, registration: _Registration,
                      answers: list[asyncio.Future[_Answer]] | None = None) -> asyncio.Task[None]:
        """Hand *registration* to every name server's sender; the task that takes their answers (each name
        server's also added to *answers*)."""
        futures = [self._send_to(addr, registration) for addr in self.namesrv_addrs]
        if answers is not None:
            answers.extend(futures)
        task = asyncio.get_running_loop().create_task(self._answers(futures))
        self._rounds.add(task)
        task.add_done_callback(self._round_done)
        return task

    def _round_done(self, task: asyncio.Task[None]) -> None:
        self._rounds.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("registration with the name servers failed", exc_info=task.exception())

    def _send_to(self, addr: str, registration: _Registration) -> asyncio.Future[_Answer]:
        """*registration* to *addr* now, or after the registrations in flight and waiting there, in seq order
        (so a stopped name server holds one whole table in flight and at most one waiting, besides the
        increments read after it)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_Answer] = loop.create_future()
        sender = self._senders.get(addr)
        if sender is not None and not sender.done():
            queue = self._waiting.setdefault(addr, [])
            futures = [future]
            if registration.follows is None:  # the whole table holds what was read before it
                futures += [f for queued, fs in queue if queued.seq < registration.seq for f in fs]
                queue[:] = [(queued, fs) for queued, fs in queue if queued.seq > registration.seq]
            queue.append((registration, futures))
            queue.sort(key=lambda item: item[0].seq)
        else:
            self._senders[addr] = loop.create_task(self._send(addr, registration, [future]))
        return future

    async def _send(self, addr: str, registration: _Registration,
                    futures: list[asyncio.Future[_Answer]]) -> None:
        try:
            while True:
                try:
                    if registration.seq < self._sent_seq.get(addr, 0):
                        # read before one already sent there (a whole table still being encoded when an
                        # increment went): it would take the name server back to an older view
                        answer = _Answer(False)
                    else:
                        answer = await self._register_one(addr, registration)
                except Exception as exc:  # noqa: BLE001 - a bug (the network's failures are answers): to each waiter
                    for future in futures:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for future in futures:
                        if not future.done():
                            future.set_result(answer)
                queue = self._waiting.get(addr)
                if not queue:
                    self._waiting.pop(addr, None)
                    return
                registration, futures = queue.pop(0)
        finally:  # cancelled (close): nobody waits for an answer that will not come
            for future in futures:
                future.cancel()

    async def _answers(self, futures: list[asyncio.Future[_Answer]]) -> None:
        # as 4.9.3's registerBrokerAll (CountDownLatch.await(registerBrokerTimeoutMills)): the round takes
        # the answers that came within the timeout; a name server still busy with an earlier registration
        # (this one waits behind it) does not hold the round for another timeout
        await asyncio.wait(futures, timeout=self.timeout_s)
        answers = []
        for future in futures:
            if not future.done() or future.cancelled():
                continue
            if future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
            answers.append(future.result())
        # as 4.9.3's doRegisterBrokerAll, one answer decides the master's HA address, its remoting address
        # and the ORDER_TOPIC_CONFIG table together (its first to arrive; here the first accepting name
        # server's in the configured order, so two name servers that know different things do not flip them
        # at random)
        accepted = [answer for answer in answers if answer.ok]
        if not accepted:
            return
        chosen = accepted[0]
        # an answer without a master (gone for now) leaves the HA address, so the HA client goes on trying it
        # and follows the master as soon as it is back there; the config sync's address follows the answer
        # (no master, no sync)
        if chosen.master_ha_addr:
            self.master_ha_addr = chosen.master_ha_addr
        self.master_addr = chosen.master_addr
        if chosen.order_topics is not None and self.on_order_topics is not None:
            self.on_order_topics(chosen.order_topics)

    async def _register_one(self, addr: str, registration: _Registration) -> _Answer:
        """Register with one name server: whether it accepted, and the ORDER_TOPIC_CONFIG table it answered
        (None: no table, or one that does not read).  An increment the name server is not known to hold the
        base of is not sent: the whole table is registered soon instead (answered as not accepted)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            # connect and answer within one registerBrokerTimeoutMills, as 4.9.3's invokeSync gives the
            # request what the connect left of it (a slow connect took up to twice the timeout here)
            connection = await self.pool.get(addr)
            left = self.timeout_s - (loop.time() - started)
            if left <= 0:
                raise RequestTimeoutError(f"registering with {addr}: no time left after connecting "
                                          f"({self.timeout_s} s)")
            if registration.follows is not None:
                held = self._holds.get(addr)
                if held is None or held[0] is not connection or held[1] != registration.follows:
                    registration.skipped.add(addr)
                    self._again.set()
                    return _Answer(False)
            self._sent_seq[addr] = registration.seq
            self._holds.pop(addr, None)  # unknown until it answers
            try:
                response = await connection.request(registration.request, left)
            except RequestTimeoutError as exc:
                # closed, as 4.9.3's invokeSync closes a channel whose request timed out: a name server
                # gone silent (no FIN, no RST: a NAT entry dropped) is registered with on a new connection
                # next time, before it expires the broker, not timed out on this one for good
                self.pool.close_timed_out(addr, connection, exc)
                raise
        except RemotingError as exc:
            if self.registered.get(addr, True):
                log.warning("cannot register with name server %s: %s", addr, exc)
            self.registered[addr] = False
            return _Answer(False)
        ok = response.code == ResponseCode.SUCCESS
        if ok and self.registered.get(addr) is not True:  # the first time, and again after a failure
            log.info("registered with name server %s", addr)
        self.registered[addr] = ok
        if ok:
            self._holds[addr] = (connection, registration.version)
        if not ok:
            log.warning("name server %s refused registration: %s %s", addr, response.code, response.remark)
            return _Answer(False)
        header = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
        return _Answer(True, _order_topic_table(addr, response.body), header.ha_server_addr or None,
                       header.master_addr or None)

    async def close(self, *, unregister: bool = True) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task  # ended before the unregistration: nothing registers after it
        pending = [*self._senders.values(), *self._rounds]
        for sending in pending:
            sending.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for queue in self._waiting.values():
            for _, futures in queue:
                for future in futures:
                    future.cancel()
        self._senders.clear()
        self._waiting.clear()
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
