"""The asyncio side of remoting: client connections and a connection pool, and the public face of the
transport modules.

:func:`connect` opens a :class:`Connection` to ``host:port`` (over TLS with an ``ssl_context``,
:mod:`rocketstore.remoting.tls`); a :class:`ConnectionPool` keeps one live connection per address.  The
rest of the transport lives beside this module and is re-exported here, where callers import it from:

* :mod:`rocketstore.remoting.connection`: :class:`Connection` itself (framing, request/response matching by
  ``opaque``, the in-flight limit, the outbox, ACL signing) and, in its base class from
  :mod:`rocketstore.remoting.serving`, the server rules it keeps;
* :mod:`rocketstore.remoting.event_loop`: :func:`new_event_loop` and :func:`run` (uvloop when it is
  installed; ``ROCKETSTORE_EVENT_LOOP`` forces one kind);
* :mod:`rocketstore.remoting.addresses`: :func:`split_address`, :func:`namesrv_addresses`,
  :func:`dual_stack_listener`.

Owns sockets and the event loop; everything about bytes is codec.py's and frame_decoder.py's.  These
modules, :mod:`rocketstore.remoting.server` (the router and the listening server, which build on them) and
busy_poll.py are the transport modules; every other remoting module is sans-IO.  They import errors and the
sans-IO remoting modules, never remoting.server or bodies.  Connections log as
``rocketstore.remoting.transport``.
Thread-safety: a Connection and a ConnectionPool belong to the loop that created them; call them from that
loop only.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Literal

from rocketstore.errors import ConnectionClosedError, RequestTimeoutError
from rocketstore.remoting.addresses import dual_stack_listener, namesrv_addresses, split_address
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.connection import (
    ANSWER_LATER,
    DEFAULT_MAX_IN_FLIGHT,
    Connection,
    Credentials,
    ImmediateHandler,
    RequestHandler,
    signed_request,
)
from rocketstore.remoting.event_loop import EVENT_LOOP_CHOICES, EVENT_LOOP_ENV, new_event_loop, run
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES
from rocketstore.remoting.tls import client_context_default

__all__ = [
    "ANSWER_LATER",
    "DEFAULT_MAX_IN_FLIGHT",
    "EVENT_LOOP_CHOICES",
    "EVENT_LOOP_ENV",
    "Connection",
    "ConnectionPool",
    "Credentials",
    "ImmediateHandler",
    "RequestHandler",
    "connect",
    "dual_stack_listener",
    "namesrv_addresses",
    "new_event_loop",
    "run",
    "signed_request",
    "split_address",
]

DEFAULT_CONNECT_TIMEOUT_S = 3.0


async def connect(address: str, *, handler: RequestHandler | None = None,
                  timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S, max_frame_bytes: int = MAX_FRAME_BYTES,
                  on_close: Callable[[Connection], None] | None = None,
                  credentials: Credentials | None = None, ssl_context: ssl.SSLContext | None = None) -> Connection:
    """Open a client connection to ``host:port``; ConnectionClosedError if it cannot be made in time (a TLS
    handshake the server refuses included).  With *credentials* the connection signs every request and
    oneway it sends (ACL); with *ssl_context* it runs over TLS (:mod:`rocketstore.remoting.tls`)."""
    try:
        host, port = split_address(address)
    except ValueError as exc:
        # an entry of a name server list that is no address ("localhost", " "): 4.9.3's createChannel catches
        # what string2SocketAddress throws for it, and the look-up goes on to the next name server
        raise ConnectionClosedError(f"cannot connect to {address!r}: {exc}") from exc
    loop = asyncio.get_running_loop()
    try:
        # asyncio.timeout, not asyncio.wait_for: Python 3.11's wait_for answers a cancel that lands just as the
        # connect failed or succeeded with the connect's outcome, and the cancel is lost (a service retrying a
        # refused connect then outlived its close)
        async with asyncio.timeout(timeout_s):
            _, protocol = await loop.create_connection(
                lambda: Connection(handler, max_frame_bytes=max_frame_bytes, on_close=on_close,
                                   credentials=credentials),
                host, port, ssl=ssl_context, server_hostname=host if ssl_context is not None else None)
    except TimeoutError as exc:
        raise ConnectionClosedError(f"cannot connect to {address} within {timeout_s} s") from exc
    except (OSError, ssl.SSLError) as exc:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, ConnectionRefusedError) and "refused" not in reason:
            # asyncio's own loop says "[Errno 111] Connect call failed (...)" (uvloop: "Connection refused")
            reason = f"connection refused ({reason})"
        if isinstance(exc, ssl.SSLCertVerificationError):
            # our own check of the server's chain (tls.client.authServer), not a server without TLS
            reason = f"the server's certificate is not trusted ({reason}; see tls.client.trustCertPath)"
        elif ssl_context is not None and isinstance(exc, (ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            # a server that serves no TLS (disabled mode, no certificate) closes a handshake unanswered
            reason = f"the TLS handshake failed ({reason}): does the server serve TLS?"
        raise ConnectionClosedError(f"cannot connect to {address}: {reason}") from exc
    return protocol


class ConnectionPool:
    """One live client connection per address, (re)opened on demand.  Loop-bound.  With *credentials*
    every connection signs the requests it sends (ACL)."""

    def __init__(self, *, handler: RequestHandler | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 credentials: Credentials | None = None,
                 ssl_context: ssl.SSLContext | None | Literal["process"] = "process") -> None:
        """*ssl_context*: connect over TLS with it; None: plain; ``"process"`` (the default): whatever
        :func:`rocketstore.remoting.tls.use_client_tls` set for the process when a connection is made."""
        self._handler = handler
        self.credentials = credentials
        self._ssl_context = ssl_context
        self._connect_timeout_s = connect_timeout_s
        self._connections: dict[str, Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    @property
    def tls(self) -> ssl.SSLContext | bool | None:
        """This pool's TLS choice as a client's ``tls=`` takes it (None: the process's), so a client made
        for another (a trace producer, an admin's helper) connects the same way."""
        ctx = self._ssl_context
        return None if ctx == "process" else ctx if ctx is not None else False

    async def get(self, address: str) -> Connection:
        if self._closed:
            raise ConnectionClosedError("the connection pool is closed")
        connection = self._connections.get(address)
        if connection is not None and not connection.is_closed:
            return connection
        lock = self._locks.setdefault(address, asyncio.Lock())
        async with lock:
            connection = self._connections.get(address)
            if connection is None or connection.is_closed:
                ctx = client_context_default() if self._ssl_context == "process" else self._ssl_context
                connection = await connect(address, handler=self._handler, timeout_s=self._connect_timeout_s,
                                           credentials=self.credentials, ssl_context=ctx)
                self._connections[address] = connection
            return connection

    async def request(self, address: str, command: RemotingCommand, timeout_s: float, *,
                      close_if_timeout: bool = True) -> RemotingCommand:
        """*command*'s answer from *address*.  A time-out closes the connection (:meth:`close_timed_out`),
        as 4.9.3's invokeSync; not with *close_if_timeout* False, as its invokeAsync (a push consumer's
        pull) leaves the channel open."""
        connection = await self.get(address)
        try:
            return await connection.request(command, timeout_s)
        except RequestTimeoutError as exc:
            if close_if_timeout:
                self.close_timed_out(address, connection, exc)
            raise

    def close_timed_out(self, address: str, connection: Connection, cause: RequestTimeoutError) -> None:
        """A request on *connection* got no answer in time: close it (dropping what it has not written), so
        the next request to *address* opens another.  4.9.3's clients do so (clientCloseSocketIfTimeout, on
        by default): a connection whose peer went without a FIN or an RST (its host down, a NAT entry or a
        firewall's state dropped) otherwise timed every later request out for as long as it was used.  The
        requests still waiting on it fail at once with ConnectionClosedError, as 4.9.3's fail fast."""
        if self._connections.get(address) is connection:
            del self._connections[address]
        connection.abort(cause)

    async def oneway(self, address: str, command: RemotingCommand, timeout_s: float = 5.0) -> None:
        connection = await self.get(address)
        await connection.oneway(command, timeout_s)

    async def discard(self, address: str) -> None:
        """Close the connection to *address*, if there is one (a client forgetting a broker that is gone);
        a later :meth:`get` opens a new one."""
        connection = self._connections.pop(address, None)
        lock = self._locks.get(address)
        if lock is not None and not lock.locked():
            del self._locks[address]
        if connection is not None:
            await connection.aclose()

    def drop(self, address: str) -> None:
        """Close the connection to *address* now, if there is one, without waiting for the close (a client
        whose name server list no longer lists it; usable where nothing can be awaited): its requests in
        flight fail with ConnectionClosedError, and a later :meth:`get` opens a new one."""
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.close()

    async def close(self) -> None:
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.aclose()
