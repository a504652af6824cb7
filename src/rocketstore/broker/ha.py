"""Master/slave replication of the commitlog on RocketMQ 4.9.3's HA protocol (ha.md), both ends.

The protocol is raw TCP on the master's HA port (listenPort + 1 unless haListenPort says otherwise), not
remoting frames.  The slave reports how far its commitlog goes as an 8-byte big-endian offset: at once on
connecting (a Java slave waits for its first heartbeat interval; a master takes either), after every chunk
it appends, and every ``HEARTBEAT_S`` as a heartbeat.  The master answers a stream of ``offset (8) + size
(4) + bytes`` chunks of at most ``TRANSFER_BATCH_BYTES`` from one commitlog segment, cut anywhere in a
record; size 0 is its heartbeat.  A slave reporting 0 (an empty store) gets the master's last segment
onwards, not the history.  The slave lays the bytes down as they came (MessageStore.append_replica) and its
own dispatcher builds consume queues and index from them; a chunk that does not start where its commitlog
ends closes the connection, and it reconnects from its end; so does a first chunk that does not start a
record where the slave's commitlog ends after a whole one (the master's history is another; 4.9.3 appends
it).  Either side drops a connection silent for ``HOUSEKEEPING_S``.

:class:`HAServer` (masters) also keeps ``push_max`` (the furthest offset any slave acknowledged) and wakes
SYNC_MASTER sends waiting for it (:meth:`HAServer.wait_replicated`).  :class:`HAClient` (slaves) follows
the master HA address of broker.conf's haMasterAddress, else the one the name servers answered the last
registration with.

Loop-bound: both run on the broker's event loop; store reads and appends are memory copies of at most a
chunk (32 KiB) and happen there too.  Waits are bounded with ``asyncio.timeout``, not ``asyncio.wait_for``:
Python 3.11's wait_for returns the read's result when the task is cancelled just as that read completes,
so under a steady stream a broker's close lost its cancellation and waited for the loop forever.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import socket
import struct
import time
from collections.abc import Callable, Mapping

from rocketstore.broker.task_service import TaskService
from rocketstore.errors import StoreError
from rocketstore.message.record import BLANK_MAGIC, MESSAGE_MAGIC, TOTAL_SIZE_MAGIC
from rocketstore.remoting.transport import dual_stack_listener, split_address
from rocketstore.repeats import FailureRun
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

__all__ = ["REPORT", "TRANSFER_HEADER", "HAClient", "HAServer"]

log = logging.getLogger(__name__)

#: slave -> master: the slave's commitlog end
REPORT = struct.Struct(">q")
#: master -> slave: chunk offset and size, then the bytes
TRANSFER_HEADER = struct.Struct(">qi")
#: haSendHeartbeatInterval, haHousekeepingInterval, haTransferBatchSize, haSlaveFallbehindMax
HEARTBEAT_S = 5.0
HOUSEKEEPING_S = 20.0
TRANSFER_BATCH_BYTES = 32 * 1024
SLAVE_FALL_BEHIND_MAX = 256 * 1024 * 1024
#: how long a caught-up master waits for new data before looking again
IDLE_WAIT_S = 0.1
#: a slave's pause between connection attempts
RECONNECT_S = 5.0
#: the largest chunk a slave takes (4.9.3's slave reads into a 4 MiB buffer, header included); a master's
#: haTransferBatchSize above it is cut to it
MAX_CHUNK_BYTES = 4 * 1024 * 1024 - TRANSFER_HEADER.size

#: the broker's kept properties (name -> text, broker.extra_properties) that the HA settings are read from
Settings = Callable[[], Mapping[str, str]]


def _setting(settings: Settings | None, name: str, default: int) -> int:
    """The int property *name* (haSlaveFallbehindMax, haTransferBatchSize, ...) as the broker's
    configuration has it now (4.9.3 reads them at every use, so UPDATE_BROKER_CONFIG acts at once), else
    *default*."""
    if settings is None:
        return default
    raw = settings().get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return default


def _seconds(settings: Settings | None, name: str, default_s: float) -> float:
    """An interval property in milliseconds, in seconds; *default_s* unless it is set and positive."""
    ms = _setting(settings, name, 0)
    return ms / 1000 if ms > 0 else default_s


def _no_delay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


class _Slave:
    """One connected slave as the master sees it."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        #: the first report (where to start), then every report (how far it has the commitlog)
        self.request_offset = -1
        self.ack_offset = -1
        self.reported = asyncio.Event()


#: timed-out SYNC_MASTER waiters stay in the heap until a slave acknowledges past them; once it holds more
#: than this many entries, a timeout drops the entries nobody waits for (a slave that stopped acknowledging
#: would otherwise keep one per send)
_WAITERS_PRUNE_AT = 4096


class HAServer:
    def __init__(self, store: MessageStore, host: str, port: int, *, heartbeat_s: float = HEARTBEAT_S,
                 housekeeping_s: float = HOUSEKEEPING_S, batch_bytes: int = TRANSFER_BATCH_BYTES,
                 settings: Settings | None = None) -> None:
        """*settings*: the broker's properties, whose haSendHeartbeatInterval, haHousekeepingInterval,
        haTransferBatchSize and haSlaveFallbehindMax, when set, stand in for *heartbeat_s*, *housekeeping_s*,
        *batch_bytes* and SLAVE_FALL_BEHIND_MAX."""
        self.store = store
        self.settings = settings
        self.host = host
        self.port = port
        self.heartbeat_s = heartbeat_s
        self.housekeeping_s = housekeeping_s
        self.batch_bytes = batch_bytes
        self.slaves: set[_Slave] = set()
        #: push2SlaveMaxOffset: the furthest commitlog offset a slave has acknowledged
        self.push_max = 0
        self._server: asyncio.Server | None = None
        self._new_data = asyncio.Event()
        #: (end offset, tie, future) of SYNC_MASTER sends waiting for a slave's acknowledgement
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._tie = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    async def start(self) -> None:
        dual = dual_stack_listener(self.host, self.port)  # "::": IPv4 slaves too, as 4.9.3's wildcard bind
        self._closing = False
        if dual is None:
            self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        else:
            self._server = await asyncio.start_server(self._serve, sock=dual)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self._closing = True
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for _, _, future in self._waiters:
            if not future.done():
                future.set_result(False)
        self._waiters.clear()

    def data_written(self) -> None:
        """New commitlog bytes: wake the transfers (the broker calls this after its puts, with slaves)."""
        self._new_data.set()

    # --- SYNC_MASTER ----------------------------------------------------------------------------------

    def slave_ok(self, end_offset: int) -> bool:
        """isSlaveOK: a slave is connected and not more than haSlaveFallbehindMax behind *end_offset*."""
        return bool(self.slaves) and end_offset - self.push_max < _setting(
            self.settings, "haSlaveFallbehindMax", SLAVE_FALL_BEHIND_MAX)

    async def wait_replicated(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        """PUT_OK once a slave has acknowledged *end_offset*, FLUSH_SLAVE_TIMEOUT after *timeout_s*,
        SLAVE_NOT_AVAILABLE at once without a slave fit to wait for (the record is stored either way)."""
        if not self.slave_ok(end_offset):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if self.push_max >= end_offset:
            return PutMessageStatus.PUT_OK
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (end_offset, next(self._tie), future))
        self._new_data.set()
        try:
            async with asyncio.timeout(timeout_s):
                done = await asyncio.shield(future)
        except TimeoutError:
            future.cancel()  # nobody waits for it any more: its heap entry is dropped below or when acked
            if len(self._waiters) > _WAITERS_PRUNE_AT:
                self._waiters = [w for w in self._waiters if not w[2].done()]
                heapq.heapify(self._waiters)
            return PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        return PutMessageStatus.PUT_OK if done else PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    def _acked(self, offset: int) -> None:
        self.push_max = max(self.push_max, offset)
        waiters = self._waiters
        while waiters and waiters[0][0] <= self.push_max:
            _, _, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(True)

    # --- one slave ------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:  # accepted as close() began
            writer.transport.abort()
            return
        _no_delay(writer)
        peer = str(writer.get_extra_info("peername"))
        slave = _Slave(peer)
        self.slaves.add(slave)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        log.info("HA: slave %s connected", peer)
        loop = asyncio.get_running_loop()
        reading = loop.create_task(self._read_reports(reader, slave))
        sending = loop.create_task(self._transfer(writer, slave))
        try:
            await asyncio.wait([reading, sending], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass
        finally:
            self.slaves.discard(slave)
            self._tasks.discard(task)
            for part in (reading, sending):
                part.cancel()
            await asyncio.gather(reading, sending, return_exceptions=True)
            # not close(): it would first send what is buffered, which a slave that stopped reading never
            # takes (the connection stayed open, and on Python 3.12+ the server's wait_closed with it)
            writer.transport.abort()
            log.info("HA: slave %s gone (acknowledged %d)", peer, slave.ack_offset)

    async def _read_reports(self, reader: asyncio.StreamReader, slave: _Slave) -> None:
        pending = b""
        while True:
            housekeeping_s = _seconds(self.settings, "haHousekeepingInterval", self.housekeeping_s)
            try:
                async with asyncio.timeout(housekeeping_s):
                    data = await reader.read(1 << 16)
            except TimeoutError:
                log.warning("HA: slave %s silent for %.0f s: closing", slave.peer, housekeeping_s)
                return
            except OSError:
                return
            if not data:
                return
            pending += data
            whole = len(pending) - len(pending) % REPORT.size
            if not whole:
                continue
            (offset,) = REPORT.unpack_from(pending, whole - REPORT.size)  # the last complete report
            pending = pending[whole:]
            if offset > self.store.max_commit_log_offset or offset < 0:
                log.error("HA: slave %s reports offset %d past this master's end %d: closing", slave.peer,
                          offset, self.store.max_commit_log_offset)
                return
            if slave.request_offset < 0:
                slave.request_offset = offset
                slave.reported.set()
            slave.ack_offset = offset
            self._acked(offset)

    async def _transfer(self, writer: asyncio.StreamWriter, slave: _Slave) -> None:
        await slave.reported.wait()
        store = self.store
        if slave.request_offset == 0:  # an empty slave starts at the master's last segment
            end = store.max_commit_log_offset
            segment = store.config.mapped_file_size_commit_log
            offset = end - end % segment
        else:
            offset = slave.request_offset
        last_write = 0.0
        gap_logged = False
        settings = self.settings
        while True:
            batch = min(max(_setting(settings, "haTransferBatchSize", self.batch_bytes), 1), MAX_CHUNK_BYTES)
            chunk = store.read_replica(offset, batch)
            if chunk:
                writer.write(TRANSFER_HEADER.pack(offset, len(chunk)))
                writer.write(chunk)
                offset += len(chunk)
            elif time.monotonic() - last_write >= _seconds(settings, "haSendHeartbeatInterval",
                                                           self.heartbeat_s):
                if not gap_logged and offset < store.min_commit_log_offset:
                    # retention deleted the segments this slave still needs: it gets heartbeats for ever and
                    # never catches up (4.9.3's findMappedFileByOffset warns "Offset not matched" each time)
                    gap_logged = True
                    log.error("HA: slave %s needs commitlog offset %d but this master's commitlog starts at %d "
                              "(retention deleted the rest): it cannot catch up; move its store aside to start "
                              "it afresh", slave.peer, offset, store.min_commit_log_offset)
                writer.write(TRANSFER_HEADER.pack(offset, 0))
            else:
                self._new_data.clear()
                try:
                    async with asyncio.timeout(IDLE_WAIT_S):
                        await self._new_data.wait()
                except TimeoutError:
                    pass
                continue
            last_write = time.monotonic()
            try:
                await writer.drain()
            except OSError:
                return


def _check_continues(store: MessageStore, offset: int, body: bytes) -> None:
    """The first chunk of a connection to a slave whose commitlog ends after a whole record (its dispatcher
    has read everything) must start a record: else the master's commitlog is another history than this
    slave's (a master restored from an older copy, or another broker's), and appending would leave the
    slave a record cut by foreign bytes that its dispatcher stops at for good.  4.9.3 appends them.  A
    slave whose end is inside a record (a chunk cut it) goes on with the rest of that record unchecked."""
    if offset == 0 or store.dispatch_behind_bytes or len(body) < TOTAL_SIZE_MAGIC.size:
        return
    size, magic = TOTAL_SIZE_MAGIC.unpack_from(body)
    if magic not in (MESSAGE_MAGIC, BLANK_MAGIC) or size < TOTAL_SIZE_MAGIC.size:
        raise ValueError(f"the master's commitlog at {offset}, where this slave's ends after a whole record, does "
                         f"not start a record: the master's history differs from this slave's (restored from an "
                         f"older copy?); this slave keeps its store and takes nothing more until it is moved aside")


def _stop_reason(exc: BaseException) -> str:
    """What ended a slave's connection to its master, in words: a refused connect, a reset, the master
    closing inside a transfer, silence (the bare exceptions' texts name none of them)."""
    if isinstance(exc, asyncio.IncompleteReadError):
        if not exc.partial:
            return "the master closed the connection (end of stream before a transfer header)" \
                if exc.expected == TRANSFER_HEADER.size else \
                f"the master closed the connection before a chunk's {exc.expected} bytes (none of it is kept)"
        return f"the master closed the connection {len(exc.partial)} bytes into {exc.expected} " \
               f"(a cut transfer: none of it is kept)"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused ({exc})"
    if isinstance(exc, ConnectionResetError):
        return f"connection reset by the master or the network ({exc})"
    return str(exc) or type(exc).__name__


class HAClient(TaskService):
    """A slave's side: keeps a connection to the master's HA port and appends what it sends."""

    def __init__(self, store: MessageStore, master_ha_addr: Callable[[], str | None], *,
                 heartbeat_s: float = HEARTBEAT_S, housekeeping_s: float = HOUSEKEEPING_S,
                 reconnect_s: float = RECONNECT_S, settings: Settings | None = None) -> None:
        """*settings*: the broker's properties, whose haSendHeartbeatInterval and haHousekeepingInterval,
        when set, stand in for *heartbeat_s* and *housekeeping_s*."""
        self.store = store
        self.settings = settings
        self.master_ha_addr = master_ha_addr
        self.heartbeat_s = heartbeat_s
        self.housekeeping_s = housekeeping_s
        self.reconnect_s = reconnect_s
        #: the master HA address connected to, None between connections
        self.connected_to: str | None = None
        #: the master's transfers taken (records or an empty heartbeat one): a try that took one worked
        self.transfers_taken = 0

    async def _run(self) -> None:
        # A master down (or one that refuses this slave) fails every try, one per reconnect_s: of such a run
        # the first failure and every 1000th are warnings, the others debug lines; a try that took a
        # transfer ends the run.
        failures = FailureRun()
        while True:
            addr = self.master_ha_addr()
            if addr:
                began = self.transfers_taken
                try:
                    await self._follow(addr)
                except (OSError, ValueError, StoreError, asyncio.IncompleteReadError) as exc:
                    if self.transfers_taken != began:
                        failures.ended()
                    # another kind of failure (a master back up that refuses this slave, after a run of
                    # refused connects) starts a new run: its first is logged
                    log.log(failures.failed(logging.WARNING, type(exc)),
                            "HA: replication from %s stopped: %s (%d in a row; trying again every %s s)",
                            addr, _stop_reason(exc), failures.count, self.reconnect_s)
                finally:
                    self.connected_to = None
            await asyncio.sleep(self.reconnect_s)

    async def _follow(self, addr: str) -> None:
        host, port = split_address(addr)
        try:
            async with asyncio.timeout(self.housekeeping_s):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            raise TimeoutError(f"no connection to the master within {self.housekeeping_s} s") from None
        _no_delay(writer)
        self.connected_to = addr
        log.info("HA: following master %s from offset %d", addr, self.store.max_commit_log_offset)
        store = self.store
        beat = asyncio.get_running_loop().create_task(self._heartbeats(writer))
        first_chunk = True
        try:
            writer.write(REPORT.pack(store.max_commit_log_offset))
            await writer.drain()
            while True:
                housekeeping_s = _seconds(self.settings, "haHousekeepingInterval", self.housekeeping_s)
                try:
                    async with asyncio.timeout(housekeeping_s):
                        header = await reader.readexactly(TRANSFER_HEADER.size)
                except TimeoutError:  # (str() of it is empty: the log line said nothing)
                    raise TimeoutError(f"nothing from the master for {housekeeping_s:g} s "
                                       f"(haHousekeepingInterval): connection dropped") from None
                offset, size = TRANSFER_HEADER.unpack(header)
                if size < 0 or size > MAX_CHUNK_BYTES:
                    raise ValueError(f"a chunk of {size} bytes")
                body = b""
                if size:
                    try:
                        async with asyncio.timeout(housekeeping_s):
                            body = await reader.readexactly(size)
                    except TimeoutError:
                        raise TimeoutError(f"the master stopped inside a chunk of {size} bytes at offset {offset} "
                                           f"for {housekeeping_s:g} s (haHousekeepingInterval): connection dropped "
                                           f"(none of it is kept)") from None
                mine = store.max_commit_log_offset
                if mine != 0 and mine != offset:
                    raise ValueError(f"the master sends offset {offset} but this slave's commitlog ends at {mine}")
                if body and first_chunk:
                    first_chunk = False
                    _check_continues(store, offset, body)
                if body:
                    store.append_replica(offset, body)
                    writer.write(REPORT.pack(store.max_commit_log_offset))
                    await writer.drain()
                self.transfers_taken += 1
        finally:
            beat.cancel()
            writer.close()

    async def _heartbeats(self, writer: asyncio.StreamWriter) -> None:
        while True:
            await asyncio.sleep(_seconds(self.settings, "haSendHeartbeatInterval", self.heartbeat_s))
            writer.write(REPORT.pack(self.store.max_commit_log_offset))
            await writer.drain()
