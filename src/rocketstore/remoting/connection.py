"""One remoting connection: framing, request/response matching, flow control, signing.

A :class:`Connection` is symmetric: it answers requests with an async handler (a server connection, or a
client that a broker calls back with NOTIFY_CONSUMER_IDS_CHANGED) and matches responses to its own requests
by ``opaque`` through a dict of opaque -> Future.  Every await has a deadline, every write is followed by
a drain (a oneway's comes before it), and closing fails every pending request with
:class:`ConnectionClosedError` chained to the cause, its text naming how it closed (reset by peer, closed by
the peer, closed by us and why, closed after a time-out).
Everything about bytes is codec.py's and frame_decoder.py's.  Opening one, and the client pool, are
:mod:`rocketstore.remoting.transport`'s (which re-exports everything here: import it from there); the
router and the listening server are :mod:`rocketstore.remoting.server`'s.

Serving the requests the peer sends (the server rules as a 4.9.3 broker keeps them, the immediate path,
the in-flight limit, parking a long-polled pull) is :mod:`rocketstore.remoting.serving`'s, Connection's
base class; this module reads the frames, hands requests to it and responses to their futures, and writes.
A frame over the limit or any undecodable frame closes the connection.

Responses to JSON requests are JSON with every extFields value a string (RemotingCommand.make_response and
the codec see to it) because the C++ client ignores non-string values.

Per-frame costs, because a send is a round trip of small frames: an immediate handler (serving.py)
answers without a task per request, possibly with the response's frame already encoded.
Frames go through an outbox: the answers to the frames of one read leave in one write, and requests that
coroutines issue within one loop iteration leave together at its end, so 64 concurrent sends cost one
send() each way rather than 64.  A client may hand over a request's frame already encoded
(:meth:`Connection.request_encoded`, a producer's send from a template).

ACL (RocketMQ's AclClientRPCHook): a client connection made with *credentials* signs every request and oneway
it sends (:mod:`rocketstore.remoting.acl_signing`: AccessKey, SecurityToken and a Signature over its extFields
and body) just before encoding; responses are never signed, and a pre-encoded frame cannot be
(:meth:`Connection.request_encoded` refuses it).  Without credentials a request pays one ``is None`` test.

A loop may busy-poll for a while after I/O instead of sleeping (:mod:`rocketstore.remoting.busy_poll`,
opt-in): connections tell its poller of every read and write.  Logs as ``rocketstore.remoting.transport``
(the module it was split from; log filters name it).
Thread-safety: a Connection belongs to the loop that created it; call it from that loop only.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

from rocketstore.errors import (
    ConnectionClosedError,
    FrameTooLargeError,
    LoopBoundError,
    ProtocolError,
    RequestTimeoutError,
)
from rocketstore.remoting import busy_poll
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.codec import _output_ext_fields, encode_command, encode_command_parts
from rocketstore.remoting.command import RESPONSE_FLAG, RemotingCommand, new_command
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES, FrameDecoder
from rocketstore.remoting.serving import (
    ANSWER_LATER,
    DEFAULT_MAX_IN_FLIGHT,
    ImmediateHandler,
    RequestHandler,
    RequestServing,
)
from rocketstore.remoting.tls import TLS_HANDSHAKE_BYTE

__all__ = [
    "ANSWER_LATER",
    "DEFAULT_MAX_IN_FLIGHT",
    "Connection",
    "Credentials",
    "ImmediateHandler",
    "RequestHandler",
    "signed_request",
]

#: the logger of rocketstore.remoting.transport, where this code lived: tests and users filter on that name
log = logging.getLogger("rocketstore.remoting.transport")

#: Bodies from this size on are handed to the transport beside the header instead of joined to it.
_SEPARATE_BODY_BYTES = 16384

#: CPython 3.12.0-3.12.8 and 3.13.0-3.13.1: the selector transport's writelines() never pauses its protocol
#: at the high-water mark (gh-127655, CVE-2024-12254), so toward a peer that stops reading frames would be
#: buffered without bound and no drain would wait (a oneway would never raise).
_WRITELINES_SKIPS_PAUSE = (3, 12) <= sys.version_info < (3, 12, 9) or (3, 13) <= sys.version_info < (3, 13, 2)


def _lost_reason(exc: Exception | None) -> str:
    """How a connection closed that we did not close, as its requests' errors say it."""
    if exc is None:
        return "closed by the peer"
    if isinstance(exc, ConnectionResetError):
        return "closed: reset by peer"
    return f"closed: {type(exc).__name__}: {exc}"


class Credentials(Protocol):
    """What a connection signs its requests with (rocketstore.client.SessionCredentials is one)."""

    @property
    def access_key(self) -> str: ...

    @property
    def secret_key(self) -> str: ...

    @property
    def security_token(self) -> str | None: ...


def signed_request(command: RemotingCommand, credentials: Credentials) -> RemotingCommand:
    """*command* with AccessKey (SecurityToken) and Signature added to its extFields, the signature over the
    extFields as they go on the wire (None values left out, scalars as Java's toString()) and the body."""
    ext = sign_ext_fields(_output_ext_fields(command.ext_fields), command.body, credentials.access_key,
                          credentials.secret_key, credentials.security_token)
    return new_command(command.code, command.language, command.version, command.opaque, command.flag,
                       command.remark, ext, command.body, command.serialize_type)


class Connection(RequestServing, asyncio.BufferedProtocol):
    """One remoting connection (either side).  Loop-bound; not thread-safe."""

    #: how it closed, as the errors of its requests say it ("closed by the peer", "closed: reset by peer",
    #: "closed by us: idle", ...); None while open.  (A class default, set on the instance only at the close:
    #: past 30 attributes set in __init__ CPython stops sharing the instances' dict keys, and every attribute
    #: lookup of the per-request paths gets slower, +7 % instructions per request served.)
    _close_reason: str | None = None

    def __init__(self, handler: RequestHandler | None = None, *, max_frame_bytes: int = MAX_FRAME_BYTES,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
                 on_close: Callable[[Connection], None] | None = None,
                 credentials: Credentials | None = None) -> None:
        self._handler = handler
        #: what this connection signs its requests and oneways with (None: unsigned)
        self._credentials = credentials
        #: code -> the handler's synchronous fast path, when it has one (RequestRouter.immediate_lookup)
        lookup = getattr(handler, "immediate_lookup", None)
        self._immediate_for: Callable[[int], ImmediateHandler | None] | None = (
            lookup() if lookup is not None else None)
        #: requests with an immediate handler that are being served by a task (see _start_request)
        self._deferred_count = 0
        #: encoded frames not yet handed to the transport (see _write, _write_soon, _process_buffer)
        self._outbox: list[bytes] = []
        self._holding = False
        self._flush_scheduled = False
        self._decoder = FrameDecoder(max_frame_bytes)
        #: the largest answer written: a peer's decoder is taken to have this connection's frame limit
        self._max_frame_bytes = self._decoder.max_frame_bytes
        self._max_in_flight = max(1, max_in_flight)
        self._on_close = on_close
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaques = itertools.count(1)
        self._in_flight = 0
        self._reading_paused = False
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._closed = False
        self._close_cause: BaseException | None = None
        loop = asyncio.get_running_loop()
        #: the loop this connection lives on: it reads the answers, so requests must come from it too
        self._loop = loop
        self._lost: asyncio.Future[None] = loop.create_future()
        #: the loop's busy poller (busy_poll.enable), told of every read and write; None when off
        self._busy = busy_poll.of(loop)
        self._tasks: set[asyncio.Task[None]] = set()
        #: the tasks of requests parked by :meth:`park` (long-polled pulls): the only ones a close stops
        self._parked: set[asyncio.Task[Any]] = set()
        #: (host, port) of the other side, '' / 0 before connection_made
        self.peer: tuple[str, int] = ("", 0)
        self.local: tuple[str, int] = ("", 0)
        self.last_active_s = time.monotonic()
        #: free slots for the layer above (a broker keeps the client id, language and version here)
        self.attributes: dict[str, object] = {}

    # --- asyncio.BufferedProtocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host = str(peer[0])
            if host.startswith("::ffff:") and "." in host:  # an IPv4 peer of a dual-stack listener: as Java sees it
                host = host[7:]
            self.peer = (host, int(peer[1]))
        sock = transport.get_extra_info("sockname")
        if isinstance(sock, tuple) and len(sock) >= 2:
            self.local = (str(sock[0]), int(sock[1]))
        self.last_active_s = time.monotonic()

    # A BufferedProtocol: the transport receives straight into the decoder's buffer, not into a bytes
    # object per read that is then copied there (a 280 KiB pull answer arrives in several reads).

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.writable_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active_s = time.monotonic()
        busy = self._busy
        if busy is not None:
            busy.kick()
        self._decoder.wrote(nbytes)
        self._process_buffer()

    def _process_buffer(self) -> None:
        decoder = self._decoder
        # Answers written while these frames are handled (the immediate path) wait in the outbox and leave
        # in one write at the end: 64 pipelined sends cost one send() instead of 64.
        self._holding = True
        try:
            # frames already buffered wait too while the in-flight limit is reached, not just the socket
            while not self._closed and self._in_flight < self._max_in_flight:
                try:
                    command = decoder.next_command()
                except ProtocolError as exc:
                    if isinstance(exc, FrameTooLargeError) and exc.length_bytes >> 24 == TLS_HANDSHAKE_BYTE:
                        # a TLS record's first bytes read as a length (4.9.3 names it too, in disabled mode)
                        log.warning("closing %s: it started a TLS handshake and this server serves no TLS "
                                    "(tls.server.mode disabled, or no tls.server.certPath)", self.peer_address)
                    else:
                        log.warning("closing %s: %s", self.peer_address, exc)
                    self._holding = False
                    self._flush()  # the answers to the frames before the bad one still go out
                    self.close(exc)
                    return
                if command is None:
                    return
                if command.flag & RESPONSE_FLAG:  # command.is_response, without the property call per frame
                    future = self._pending.pop(command.opaque, None)
                    if future is not None and not future.done():
                        future.set_result(command)
                    continue
                self._start_request(command)
        finally:
            self._holding = False
            if self._outbox:
                self._flush()

    def eof_received(self) -> bool | None:
        if self._close_reason is None:  # the peer's FIN (returning None: the transport closes)
            self._close_reason = "closed by the peer"
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._close_cause is None:
            self._close_cause = exc
        if self._close_reason is None:
            self._close_reason = _lost_reason(exc)
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed_error())
        self._can_write.set()
        # Requests read in full run on, their answers dropped, as a 4.9.3 broker's processor threads finish
        # them: a oneway sent just before the close, an admin's write, a registration keep their effect.
        # Only parked ones stop (a long-polled pull would wait out its timeout for a client that has gone).
        parked, self._parked = self._parked, set()
        for task in parked:
            task.cancel()
        if self._hold_back or self._run_waiters:  # requests held back or waiting: they run now, unanswered
            self._release_held()
        if not self._lost.done():
            self._lost.set_result(None)
        if self._on_close is not None:
            try:
                self._on_close(self)
            except Exception:  # a buggy listener must not break the loop's bookkeeping
                log.exception("on_close listener failed for %s", self.peer_address)

    def pause_writing(self) -> None:
        self._can_write.clear()
        self._writing_paused = True
        self._hold_back = True  # requests with an answer wait for their turn (serving.py's _take_turn)
        self._paused_at = time.monotonic()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._can_write.set()
        if self._turn is None:  # the first held-back request goes (with none held, the holding back ends)
            self._next_turn()

    # --- writing ------------------------------------------------------------------------------------

    def _enqueue(self, command: RemotingCommand, opaque: int | None) -> None:
        """Encode one frame into the outbox; *opaque* replaces the command's own (a request being numbered).
        Raises ConnectionClosedError on a closed connection and ProtocolError for a command that cannot
        be encoded (FrameTooLargeError for a response over the frame limit), before anything is queued."""
        transport = self._transport
        if self._closed or transport is None or transport.is_closing():
            raise self._closed_error()
        if len(command.body) >= _SEPARATE_BODY_BYTES:
            head, body = encode_command_parts(command, opaque)  # no joined copy of a large body
            frame_bytes = len(head) + len(body)
            if frame_bytes > self._max_frame_bytes and command.flag & RESPONSE_FLAG:
                # the peer's decoder (Java's frameMaxLength, 16 MiB as ours) would close the connection on it
                raise FrameTooLargeError(frame_bytes, self._max_frame_bytes)
            self._outbox.append(head)
            self._outbox.append(body)
        else:
            frame = encode_command(command, opaque)
            if len(frame) > self._max_frame_bytes and command.flag & RESPONSE_FLAG:
                raise FrameTooLargeError(len(frame), self._max_frame_bytes)
            self._outbox.append(frame)
        self.last_active_s = time.monotonic()

    def _write(self, command: RemotingCommand, opaque: int | None = None) -> None:
        """Write one frame now (after whatever the outbox holds), or at the end of the frames being
        processed when called from a handler's immediate path."""
        self._enqueue(command, opaque)
        if not self._holding:
            self._flush()

    def _write_frame(self, frame: bytes) -> None:
        """:meth:`_write` for a frame already encoded; a closed connection drops it (as :meth:`_reply`)."""
        transport = self._transport
        if self._closed or transport is None or transport.is_closing():
            return
        self._outbox.append(frame)
        if not self._holding:
            self._flush()

    def _write_soon(self, command: RemotingCommand, opaque: int) -> None:
        """Queue one request frame and write it at the end of this loop iteration, together with the
        requests other coroutines queue meanwhile (one send() for many concurrent requests)."""
        self._enqueue(command, opaque)
        if not self._flush_scheduled and not self._holding:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Hand the outbox to the transport in one (vectored) write."""
        self._flush_scheduled = False
        out = self._outbox
        if not out:
            return
        busy = self._busy
        if busy is not None:
            busy.kick()
        self._outbox = []
        transport = self._transport
        if self._closed or transport is None or transport.is_closing():
            return  # the requests among these fail through connection_lost
        if len(out) == 1:
            transport.write(out[0])
        else:
            transport.writelines(out)
            if _WRITELINES_SKIPS_PAUSE and self._can_write.is_set():
                # setting the limits again runs the transport's own high-water check, which writelines skips
                low, high = transport.get_write_buffer_limits()
                transport.set_write_buffer_limits(high, low)

    async def _drain(self, timeout_s: float) -> None:
        if self._can_write.is_set():
            return
        try:
            async with asyncio.timeout(timeout_s):
                await self._can_write.wait()
        except TimeoutError as exc:
            raise RequestTimeoutError(f"{self.peer_address} did not read for {timeout_s} s") from exc
        if self._closed:
            raise self._closed_error()

    async def _drain_request(self, future: asyncio.Future[RemotingCommand], timeout_s: float) -> None:
        """:meth:`_drain` for a request whose *future* the timer may have failed meanwhile (the drain and the
        timer share the time-out): that error is retrieved, so asyncio does not log "Future exception was
        never retrieved" for it; the drain's error is the one raised."""
        try:
            await self._drain(timeout_s)
        except BaseException:
            if future.done() and not future.cancelled():
                future.exception()
            raise

    def _other_loop_error(self) -> LoopBoundError:
        """The error of a request made from another event loop than the connection's (loop-bound: that
        loop reads the answers, and writes from two threads would interleave); not retried by a client."""
        return LoopBoundError(f"connection to {self.peer_address} belongs to another event loop (clients are "
                              "loop-bound: use one from the loop it was first used on, or one per loop)")

    async def send(self, command: RemotingCommand, timeout_s: float = 30.0) -> None:
        """Write one command as it is (a response, or a request with its opaque set) and drain."""
        if asyncio.get_running_loop() is not self._loop:
            raise self._other_loop_error()
        self._write(command)
        await self._drain(timeout_s)

    async def request(self, command: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send a request and await its response; RequestTimeoutError after *timeout_s*."""
        credentials = self._credentials
        if credentials is not None:
            command = signed_request(command, credentials)
        opaque = self._next_opaque()
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            raise self._other_loop_error()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        self._pending[opaque] = future
        # One timer handle on the future instead of asyncio.wait_for (which adds a wrapper, callbacks and
        # a cancellation dance to every request): the same deadline, counted from the send.
        timer = loop.call_later(timeout_s, self._expire, future, command.code, timeout_s)
        try:
            self._write_soon(command, opaque)
            if not self._can_write.is_set():
                await self._drain_request(future, timeout_s)
            return await future
        finally:
            timer.cancel()
            self._pending.pop(opaque, None)

    async def request_encoded(self, encode: Callable[[int], bytes], code: int, timeout_s: float) -> RemotingCommand:
        """:meth:`request` for a request its caller encodes: ``encode(opaque)`` returns the whole frame
        numbered with the opaque this connection assigns (a producer's frame from a JsonRequestTemplate,
        without a command object and encode_command per send).  *code* is the request's code, named in a
        timeout's message.  The frame leaves with the requests queued in the same loop iteration, as
        :meth:`request`'s do; RequestTimeoutError after *timeout_s*, ConnectionClosedError on a closed
        connection, whatever *encode* raises before anything is queued.  A connection with credentials
        raises ValueError: a frame encoded elsewhere cannot be signed (use :meth:`request`)."""
        if self._credentials is not None:
            raise ValueError("a connection with credentials signs its requests: request(), not request_encoded()")
        transport = self._transport
        if self._closed or transport is None or transport.is_closing():
            raise self._closed_error()
        opaque = self._next_opaque()
        frame = encode(opaque)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            raise self._other_loop_error()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        pending = self._pending
        pending[opaque] = future
        timer = loop.call_later(timeout_s, self._expire, future, code, timeout_s)
        try:
            self._outbox.append(frame)
            self.last_active_s = time.monotonic()
            if not self._flush_scheduled and not self._holding:
                self._flush_scheduled = True
                loop.call_soon(self._flush)
            if not self._can_write.is_set():
                await self._drain_request(future, timeout_s)
            return await future
        finally:
            timer.cancel()
            pending.pop(opaque, None)

    def _expire(self, future: asyncio.Future[RemotingCommand], code: int, timeout_s: float) -> None:
        if not future.done():
            future.set_exception(RequestTimeoutError(
                f"no response from {self.peer_address} to request code {code} within {timeout_s} s"))

    async def oneway(self, command: RemotingCommand, timeout_s: float = 5.0) -> None:
        """Send a request flagged oneway; nothing comes back.  RequestTimeoutError when the peer has not
        read for *timeout_s* before it could be queued (then nothing of it was written).  (:meth:`oneway_now`
        writes without awaiting when none of the waits here would wait: keep the two in step.)"""
        if not command.is_oneway:
            command = RemotingCommand.request(command.code, command.ext_fields, command.body, oneway=True,
                                              remark=command.remark, language=command.language,
                                              version=command.version, serialize_type=command.serialize_type)
        credentials = self._credentials
        if credentials is not None:
            command = signed_request(command, credentials)
        if asyncio.get_running_loop() is not self._loop:
            raise self._other_loop_error()
        # a peer that does not read is waited for before the frame is queued, not after: a oneway that
        # raises was not written (its caller may send it again without a duplicate), as 4.9.3's
        # invokeOnewayImpl throws only when it could not hand the request to the channel
        await self._drain(timeout_s)
        self._write(command.with_opaque(self._next_opaque()))

    def oneway_now(self, command: RemotingCommand) -> bool:
        """:meth:`oneway` of a oneway request when nothing has to be waited for (the connection is open, its
        peer reads, nothing to sign): written at once, or queued ahead of the answer of the request being
        handled on this connection, and True; else False with nothing written (await :meth:`oneway`).
        A server's notification then reaches the client before the answer of the request that caused it,
        as 4.9.3's processors write it to the channel before they return their response."""
        transport = self._transport
        if not command.is_oneway or self._credentials is not None or self._closed or transport is None \
                or transport.is_closing() or not self._can_write.is_set() \
                or asyncio.get_running_loop() is not self._loop:
            return False
        self._write(command.with_opaque(self._next_opaque()))
        return True

    def _next_opaque(self) -> int:
        opaque = next(self._opaques)
        if opaque >= 0x7FFFFFFF:
            self._opaques = itertools.count(1)
            opaque = next(self._opaques)
        return opaque

    # --- state --------------------------------------------------------------------------------------

    @property
    def peer_address(self) -> str:
        host, port = self.peer
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def is_closed(self) -> bool:
        """Closed, or left behind by a loop that has closed (a client's next ``asyncio.run`` reconnects)."""
        return self._closed or self._transport is None or self._transport.is_closing() or self._loop.is_closed()

    @property
    def in_flight_count(self) -> int:
        return self._in_flight

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def _closed_error(self) -> ConnectionClosedError:
        """The error of a request on this closed connection: its text says how it closed, its cause is why."""
        reason = self._close_reason or "is closed"
        error = ConnectionClosedError(f"connection to {self.peer_address} {reason}")
        error.__cause__ = self._close_cause
        error.__suppress_context__ = True  # (as ``raise ... from``)
        return error

    def close(self, cause: BaseException | None = None) -> None:
        """Close now; pending requests fail with ConnectionClosedError chained to *cause*, its text naming it
        ("closed by us: <cause>", or "closed: timed out: ..." for a RequestTimeoutError)."""
        if self._close_cause is None:
            self._close_cause = cause
        if self._close_reason is None:
            if cause is None:
                self._close_reason = "closed by us"
            elif isinstance(cause, RequestTimeoutError):
                self._close_reason = f"closed: timed out: {cause}"
            else:
                self._close_reason = f"closed by us: {cause}"
        if self._loop.is_closed():
            # left behind by a loop that has closed: nothing runs on it any more, the transport object
            # closes its socket when it goes
            self._closed = True
            return
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        elif self._transport is None:
            self.connection_lost(None)

    def abort(self, cause: BaseException | None = None) -> None:
        """:meth:`close` that drops what the transport has not written yet: a closed transport waits to write
        it first, forever for a peer that reads nothing (its socket and that buffer kept; the idle check
        and the answer drain's time-out close such peers).  4.9.3's channel close drops it too."""
        self.close(cause)
        if self._transport is not None and not self._loop.is_closed():
            self._transport.abort()  # (nothing more when the close was done already)

    async def wait_closed(self, timeout_s: float = 5.0) -> None:
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(self._lost)
        except TimeoutError:
            if self._transport is not None:
                self._transport.abort()

    async def requests_done(self, timeout_s: float) -> None:
        """Wait up to *timeout_s* for the requests being served to end (a closing server lets what it read
        take effect, as 4.9.3's executors finish the tasks they took); the calling task is not waited for."""
        current = asyncio.current_task()
        tasks = [task for task in self._tasks if task is not current]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def aclose(self, timeout_s: float = 5.0) -> None:
        """Close, wait for the close, and cancel the requests still being served."""
        self.close()
        if self._loop.is_closed():
            return
        await self.wait_closed(timeout_s)
        for task in list(self._tasks):
            task.cancel()
