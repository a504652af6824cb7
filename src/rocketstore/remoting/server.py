"""The serving side of remoting: a request router and a listening server, on :mod:`remoting.connection`.

Owns :class:`RequestRouter` (dispatch by request code, REQUEST_CODE_NOT_SUPPORTED for unknown codes as a
4.9.3 broker answers or silence as a 4.9.3 name server keeps, the immediate handlers that
:class:`~rocketstore.remoting.connection.Connection` runs as frames are decoded) and :class:`RemotingServer`
(the listening socket, its connections, and closing those idle for ``idle_timeout_s``, 120 s by default).
The per-connection rules (oneway, handler errors, bad frames, the in-flight limit) are the Connection's.

A transport module: with transport.py and its siblings (connection.py, event_loop.py, addresses.py,
busy_poll.py) the only remoting modules that touch asyncio and sockets; imports errors and the remoting
modules below it, never bodies or the broker, name server or client packages.
Thread-safety: a RemotingServer belongs to the loop that created it; call it from that loop only.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import Callable, Mapping

from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.addresses import dual_stack_listener
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.connection import (
    DEFAULT_MAX_IN_FLIGHT,
    Connection,
    ImmediateHandler,
    RequestHandler,
)
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES
from rocketstore.remoting.tls import TLS_HANDSHAKE_BYTE, TlsConfig, TlsMode

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "Guard", "RemotingServer", "RequestRouter"]

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 120.0
#: how long a new connection of a TLS-serving server may take to send its first byte (or handshake)
FIRST_BYTE_TIMEOUT_S = 10.0

#: ``guard(connection, request)`` -> the answer refusing *request*, or None to serve it; runs before every
#: handler, immediate or not (a broker's ACL check, as RocketMQ's RPC hook before its processors)
Guard = Callable[[Connection, RemotingCommand], RemotingCommand | None]


class RequestRouter:
    """Dispatch by request code; unknown codes get REQUEST_CODE_NOT_SUPPORTED as a 4.9.3 broker answers, or,
    with ``answer_unknown_codes=False``, no answer at all as a 4.9.3 name server gives (its default processor
    returns null for a code it does not know, and nothing is written)."""

    def __init__(self, handlers: Mapping[int, RequestHandler] | None = None, *,
                 answer_unknown_codes: bool = True) -> None:
        self.handlers: dict[int, RequestHandler] = dict(handlers or {})
        self.answer_unknown_codes = answer_unknown_codes
        self.immediate_handlers: dict[int, ImmediateHandler] = {}
        #: checked before every request when set (set it before the server accepts connections: a
        #: connection takes its immediate lookup once)
        self.guard: Guard | None = None
        self._guarded: dict[ImmediateHandler, ImmediateHandler] = {}

    def add(self, code: int, handler: RequestHandler, *, immediate: ImmediateHandler | None = None) -> None:
        """Serve *code* with *handler*.  *immediate*, if given, is tried first, synchronously, as the frame
        is decoded: it answers without the cost of a task per request (a send whose put does not wait for
        the disk), or returns None and the request goes to *handler* as usual.  It must not block."""
        self.handlers[int(code)] = handler
        if immediate is None:
            self.immediate_handlers.pop(int(code), None)
        else:
            self.immediate_handlers[int(code)] = immediate

    def immediate_lookup(self) -> Callable[[int], ImmediateHandler | None]:
        """code -> its immediate handler or None: the table's own ``get`` (a C call per frame); it sees later
        :meth:`add` calls, which change the table in place.  With a guard, each handler wrapped by it."""
        if self.guard is None:
            return self.immediate_handlers.get
        return self._guarded_immediate

    def _guarded_immediate(self, code: int) -> ImmediateHandler | None:
        immediate = self.immediate_handlers.get(code)
        if immediate is None:
            return None
        wrapped = self._guarded.get(immediate)
        if wrapped is None:
            guard = self.guard
            assert guard is not None

            def wrapped(connection: Connection, request: RemotingCommand) -> object:
                refused = guard(connection, request)
                return refused if refused is not None else immediate(connection, request)

            self._guarded[immediate] = wrapped  # type: ignore[assignment]
        return wrapped  # type: ignore[return-value]

    async def __call__(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        guard = self.guard
        if guard is not None:
            refused = guard(connection, request)
            if refused is not None:
                return refused
        handler = self.handlers.get(request.code)
        if handler is None:
            if not self.answer_unknown_codes:
                log.debug("request code %s from %s not served: no answer", request.code,
                          connection.peer_address)
                return None
            return request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                         remark=f" request type {request.code} not supported")
        return await handler(connection, request)


class RemotingServer:
    """A listening socket whose connections feed one request handler.  Loop-bound.

    With a *tls* config that serves TLS (:attr:`TlsConfig.server_tls`) connections are accepted here rather
    than by the event loop's server: the first byte a client sends is peeked at, and a TLS handshake record
    gets a TLS transport, anything else a plain one (refused in enforcing mode), as 4.9.3's
    HandshakeHandler decides."""

    def __init__(self, handler: RequestHandler, *, max_frame_bytes: int = MAX_FRAME_BYTES,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
                 on_connection_closed: Callable[[Connection], None] | None = None,
                 tls: TlsConfig | None = None) -> None:
        self._handler = handler
        self._max_frame_bytes = max_frame_bytes
        self._max_in_flight = max_in_flight
        self.idle_timeout_s = idle_timeout_s
        self._on_connection_closed = on_connection_closed
        self._tls = tls if tls is not None and tls.server_tls else None
        self._ssl_context: ssl.SSLContext | None = self._tls.server_context() if self._tls is not None else None
        if self._tls is not None and self._tls.test_mode:
            log.warning("%s", self._tls.test_mode_notice())
        self._server: asyncio.Server | None = None
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()
        self._idle_task: asyncio.Task[None] | None = None
        self.connections: set[Connection] = set()
        self.host = ""
        self.port = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0, *, start_serving: bool = True) -> None:
        """Bind (port 0 picks a free port, see :attr:`port`); accept connections now or at
        :meth:`start_serving`."""
        loop = asyncio.get_running_loop()
        # "::" listens on every IPv6 and IPv4 address, as 4.9.3's wildcard bind does
        dual = dual_stack_listener(host, port)
        if self._tls is None:
            if dual is None:
                # 4.9.3's serverSocketBacklog, as the dual-stack and TLS listeners have it (asyncio's default
                # of 100 made a burst of 1500 connects wait a SYN retry, ~1 s, for most of them)
                self._server = await loop.create_server(self._new_connection, host, port, reuse_address=True,
                                                        backlog=1024, start_serving=start_serving)
            else:
                self._server = await loop.create_server(self._new_connection, sock=dual, start_serving=start_serving)
            sockname = self._server.sockets[0].getsockname()
        else:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self._listener = dual or socket.create_server((host, port), family=family, backlog=1024)
            self._listener.setblocking(False)
            sockname = self._listener.getsockname()
            if start_serving:
                await self.start_serving()
        self.host, self.port = str(sockname[0]), int(sockname[1])
        self._idle_task = loop.create_task(self._close_idle())

    async def start_serving(self) -> None:
        if self._listener is not None:
            if self._accepting is None:
                self._accepting = asyncio.get_running_loop().create_task(self._accept_loop())
            return
        assert self._server is not None, "start() first"
        await self._server.start_serving()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._listener is not None
        while True:
            try:
                sock, _ = await loop.sock_accept(self._listener)
            except OSError as exc:  # out of descriptors, a connection reset before accept: go on
                log.warning("accept on %s failed: %s", self.address, exc)
                await asyncio.sleep(0.05)
                continue
            task = loop.create_task(self._open(sock))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _open(self, sock: socket.socket) -> None:
        """Serve an accepted socket over TLS or in plain text, by the first byte its client sends."""
        assert self._tls is not None
        loop = asyncio.get_running_loop()
        sock.setblocking(False)
        try:
            async with asyncio.timeout(FIRST_BYTE_TIMEOUT_S):
                first = await _peek_first_byte(loop, sock)
        except (TimeoutError, OSError):
            first = b""
        if not first:  # closed, or silent for too long, before a byte came
            sock.close()
            return
        over_tls = first[0] == TLS_HANDSHAKE_BYTE
        if not over_tls and self._tls.server_mode is TlsMode.ENFORCING:
            log.warning("closing a plain connection from %s: this server is in TLS enforcing mode",
                        _peer(sock))
            sock.close()
            return
        made: list[Connection] = []
        peer = _peer(sock)  # asked now: a failed handshake leaves the socket closed

        def protocol() -> Connection:
            made.append(self._new_connection())
            return made[-1]

        try:
            await loop.connect_accepted_socket(protocol, sock, ssl=self._ssl_context if over_tls else None,
                                               ssl_handshake_timeout=FIRST_BYTE_TIMEOUT_S if over_tls else None)
        except (OSError, ssl.SSLError, TimeoutError) as exc:
            log.warning("TLS handshake with %s failed: %s", peer, exc)
            for connection in made:  # never connected: nobody else will drop it
                self.connections.discard(connection)
            sock.close()

    def _new_connection(self) -> Connection:
        connection = Connection(self._handler, max_frame_bytes=self._max_frame_bytes,
                                max_in_flight=self._max_in_flight, on_close=self._connection_closed)
        self.connections.add(connection)
        return connection

    def _connection_closed(self, connection: Connection) -> None:
        self.connections.discard(connection)
        if self._on_connection_closed is not None:
            self._on_connection_closed(connection)

    async def _close_idle(self) -> None:
        interval_s = max(0.05, min(10.0, self.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(interval_s)
            now = time.monotonic()
            for connection in list(self.connections):
                if now - connection.last_active_s > self.idle_timeout_s:
                    log.info("closing idle connection %s", connection.peer_address)
                    # (aborted: a peer that reads nothing would keep a closed transport waiting to write)
                    connection.abort(ConnectionClosedError("idle"))

    async def close(self, timeout_s: float = 5.0) -> None:
        """Stop listening and close every connection."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        if self._server is not None:
            self._server.close()
        if self._accepting is not None:
            self._accepting.cancel()
            self._accepting = None
        for task in list(self._handshakes):
            task.cancel()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        connections = list(self.connections)
        for connection in connections:
            connection.close(ConnectionClosedError("server closing"))
        # the requests read take effect before whatever they work on closes (parked pulls ended with their
        # connections); what has not ended within timeout_s is cancelled by aclose
        await asyncio.gather(*(connection.requests_done(timeout_s) for connection in connections))
        for connection in connections:
            await connection.aclose(timeout_s)
        if self._server is not None:
            try:
                async with asyncio.timeout(timeout_s):
                    await self._server.wait_closed()
            except TimeoutError:
                log.warning("server %s did not close within %s s", self.address, timeout_s)
            self._server = None


async def _peek_first_byte(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes:
    """The first byte waiting on *sock*, left there (b"" when the peer closed first)."""
    while True:
        try:
            return sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            pass
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(sock.fileno(), _settle, readable)
        try:
            await readable
        finally:
            loop.remove_reader(sock.fileno())


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _peer(sock: socket.socket) -> str:
    try:
        peer = sock.getpeername()
    except OSError:
        return "?"
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
