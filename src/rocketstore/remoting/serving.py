"""How a connection serves the requests its peer sends: server rules, immediate path, in-flight limit.

:class:`RequestServing` is a base class of :class:`~rocketstore.remoting.connection.Connection`
(connection.py, which re-exports what this module defines: import it from rocketstore.remoting.transport):
each request read off the connection is answered here, by the handler's immediate path or a task running
its async handler; reading the frames and writing the answers are connection.py's.  (The router that picks
a handler by code and the listening server are :mod:`rocketstore.remoting.server`'s.)

Server rules (as a 4.9.3 broker behaves): an unknown request code is answered REQUEST_CODE_NOT_SUPPORTED,
a oneway request gets no answer, a handler exception becomes SYSTEM_ERROR, a frame over the limit or any
undecodable frame closes the connection (connection.py's reading does that), an answer the peer could not
read (over the frame limit, or not encodable) is logged and becomes SYSTEM_ERROR, and at most
``max_in_flight`` requests per connection run at once (reading pauses until one finishes; a request parked
by :meth:`RequestServing.park`, a long-polled pull waiting for a message, does not count).  A request read
in full is served to its end even when the peer closes meanwhile (its answer dropped), except a parked one,
which the close cancels.  (The listening server closes connections idle for ``idle_timeout_s``.)  Bounds 4.9.3
lacks: at most ``max_parked`` requests of a connection are parked (a pull past it is answered at once), and
while the peer reads none of our answers (the transport over its high-water mark) a request with an answer
waits for it to read them, the connection closed after ``ANSWER_DRAIN_TIMEOUT_S`` (the request still runs);
held requests then go one at a time, in order, each once the peer has read what the one before wrote, so a
slow reader gets its answers at its own pace and few wait in memory for it; and at most ``MAX_RUNNING``
requests of a connection run their handler at once (sends, oneways and parked requests aside), so a burst
read in one go, all started before any answer is written, cannot compute a thousand answers for a peer that
then reads them slowly.

Per-frame costs, because a send is a round trip of small frames: a router may give a code an *immediate*
handler (:meth:`RequestRouter.add`), a plain function run as the frame is decoded, which answers without a
task per request (a send whose put does not wait for the disk) or declines and leaves the request to the
async handler; it may answer with the response's frame already encoded (a send answer from a template).
An answer given later (:meth:`RequestServing.answer_later`) waits in the connection's outbox with the
others of its loop iteration.  Logs as ``rocketstore.remoting.transport`` (the module this was split from).
Thread-safety: as the connection: loop-bound, call it from that loop only.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rocketstore.errors import (
    ConnectionClosedError,
    FrameTooLargeError,
    ProtocolError,
    RemotingError,
    RequestTimeoutError,
)
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.command import ONEWAY_FLAG, RemotingCommand
from rocketstore.remoting.header_fields import HeaderFieldError

if TYPE_CHECKING:
    from rocketstore.remoting.connection import Connection

__all__ = ["ANSWER_LATER", "DEFAULT_MAX_IN_FLIGHT", "ImmediateHandler", "RequestHandler", "RequestServing"]

#: the logger of rocketstore.remoting.transport, where this code lived: tests and users filter on that name
log = logging.getLogger("rocketstore.remoting.transport")

#: Long-polled pulls stay in flight for up to 15 s each; a C++ push consumer keeps one per assigned queue.
DEFAULT_MAX_IN_FLIGHT = 1024

#: How long an answer waits for the peer to read what was written before it; then the connection closes.
ANSWER_DRAIN_TIMEOUT_S = 30.0

#: Requests one connection may have parked at once (long-polled pulls: a consumer parks one per queue it
#: pulls from the broker, so only a client of more queues than this on one broker reaches it).  4.9.3 holds
#: any number (~250 bytes each of its heap, until it runs out); one costs ~4.6 KB here (its task and
#: coroutines, its request's decoded header: tracemalloc of 5,000 parked), and one connection pipelining pulls
#: parked 100,000 in 14 s.  A request past the limit is not parked: a pull is answered at once, as one whose
#: suspend time ran out.  No broker-wide bound, as in 4.9.3: one would let one client's pulls refuse long
#: polling to every other client.
DEFAULT_MAX_PARKED = 16384

#: Requests of one connection whose handler may run at once, sends (answers of a few bytes) and parked
#: requests aside: one past it waits for one of them to end or park.  Requests read together (a pipelining
#: peer's burst) all start before any answer is written, so the peer's not reading them can hold back none
#: of them: an executor-run handler (a query by key, a full topic or offset table) computes its answer
#: meanwhile, every one of them kept in memory for the peer.  The broker's executor runs four at a time
#: anyway; 4.9.3's processor pools bound them broker-wide (8 to 32 threads per kind).  Oneways never wait.
MAX_RUNNING = 64

#: ``await handler(connection, request)`` -> the response, or None to send nothing.
RequestHandler = Callable[["Connection", RemotingCommand], Awaitable[RemotingCommand | None]]
#: ``immediate(connection, request)`` -> the response, computed synchronously on the loop, or None when
#: this request needs the async handler after all (see :meth:`RequestRouter.add`).  The response may be
#: its whole encoded frame (bytes, opaque included) when the handler has a cheaper way to write it, or
#: :data:`ANSWER_LATER` when the handler did its work and took :meth:`Connection.answer_later` to answer
#: once something it waits for happens (a sync-flush send waiting for the disk).
ImmediateHandler = Callable[["Connection", RemotingCommand], "RemotingCommand | bytes | object | None"]
#: What an immediate handler returns after taking :meth:`Connection.answer_later`.
ANSWER_LATER = object()


class RequestServing:
    """Connection's serving half (the state it shares with Connection is declared here, set there)."""

    _handler: RequestHandler | None
    _immediate_for: Callable[[int], ImmediateHandler | None] | None
    _deferred_count: int
    _outbox: list[bytes]
    _holding: bool
    _flush_scheduled: bool
    _max_in_flight: int
    _in_flight: int
    _reading_paused: bool
    _transport: asyncio.Transport | None
    _can_write: asyncio.Event
    _closed: bool
    _tasks: set[asyncio.Task[None]]
    _parked: set[asyncio.Task[Any]]
    #: see DEFAULT_MAX_PARKED (an instance may set its own)
    max_parked: int = DEFAULT_MAX_PARKED
    #: the transport holds more than its high-water mark of our writes: the peer is not reading them
    _writing_paused = False
    _park_refused = False  # (logged once per connection)
    #: requests with an answer wait their turn (:meth:`_take_turn`): the writing is paused, or requests held
    #: back before are still waiting or running.  Tested by every request served in a task (one attribute)
    _hold_back = False
    #: the futures of the held-back requests, in arrival order; each is released in turn
    _held: collections.deque[asyncio.Future[None]] | None = None
    #: the held-back request let through and not ended or parked yet (its task, or its future until the task
    #: runs): the next waits for it, and for the peer to read what it wrote
    _turn: object | None = None
    #: time.monotonic() of the last pause_writing, for the watchdog of held-back requests
    _paused_at = 0.0
    _stall_timer: asyncio.TimerHandle | None = None
    #: requests served in a task that are running (past their wait, not parked, not ended), sends aside
    _running = 0
    #: the futures of requests waiting for one of those to end (MAX_RUNNING), in arrival order
    _run_waiters: collections.deque[asyncio.Future[None]] | None = None

    if TYPE_CHECKING:
        @property
        def peer_address(self) -> str: ...

        def _process_buffer(self) -> None: ...

        def _write(self, command: RemotingCommand, opaque: int | None = None) -> None: ...

        def _write_frame(self, frame: bytes) -> None: ...

        def _flush(self) -> None: ...

        async def send(self, command: RemotingCommand, timeout_s: float = 30.0) -> None: ...

        async def _drain(self, timeout_s: float) -> None: ...

        def close(self, cause: BaseException | None = None) -> None: ...

        def abort(self, cause: BaseException | None = None) -> None: ...

    # --- serving requests ---------------------------------------------------------------------------

    def _closing_down(self) -> bool:
        """Closed, or closing (its transport aborted or closed, connection_lost not run yet)."""
        return self._closed or self._transport is None or self._transport.is_closing()

    def _start_request(self, request: RemotingCommand) -> None:
        if self._handler is None:
            if not request.is_oneway:
                self._write(request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                  remark=f" request type {request.code} not supported"))
            return
        deferred = False
        immediate = self._immediate_for(request.code) if self._immediate_for is not None else None
        if immediate is not None:
            # Answer on the spot, without a task, when the handler can (a send with asynchronous flush).
            # Only while the peer reads our answers (else the task path below waits for the drain) and no
            # earlier request of such a code is still in a task, so requests are still served in order.
            if self._deferred_count == 0 and self._can_write.is_set() and self._answer_now(immediate, request):
                return
            deferred = True
            self._deferred_count += 1
        self._start_in_flight()
        task = asyncio.get_running_loop().create_task(self._serve(request, deferred))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _answer_now(self, immediate: ImmediateHandler, request: RemotingCommand) -> bool:
        """Run *immediate*; False when it declined (the request then goes to the async handler)."""
        try:
            response = immediate(self, request)  # type: ignore[arg-type]  # self is the Connection
        except (HeaderFieldError, RemotingError) as exc:
            response = request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            log.exception("request code %s from %s failed", request.code, self.peer_address)
            response = request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
        if response is None:
            return False
        if type(response) is bytes:  # an encoded answer: the handler vouches for its opaque
            if not request.flag & ONEWAY_FLAG and not self._closed:
                self._write_frame(response)
            return True
        if response is ANSWER_LATER:
            return True
        self._reply(request, response)  # type: ignore[arg-type]
        return True

    def answer_later(self, request: RemotingCommand) -> Callable[[RemotingCommand | bytes], None]:
        """For an immediate handler whose work is done but whose answer must wait: returns the function to
        call (once, on the loop) with the answer, as the immediate path takes it.  Until then the request
        counts as in flight; answers given in one loop iteration leave in one write."""
        self._start_in_flight()
        return functools.partial(self._answer_deferred, request)

    def _start_in_flight(self) -> None:
        """One more request in flight; at the limit the transport stops reading."""
        self._in_flight += 1
        if self._in_flight >= self._max_in_flight and not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            self._transport.pause_reading()

    def _end_in_flight(self) -> None:
        """One request less in flight; below the limit again, reading (and the frames it left) resumes."""
        self._in_flight -= 1
        if self._reading_paused and self._in_flight < self._max_in_flight and self._transport is not None:
            self._reading_paused = False
            if not self._closed:
                self._transport.resume_reading()
                self._process_buffer()

    def park(self) -> bool:
        """The request being served (a handler's task) now only waits for something to happen, doing no
        work: a long-polled pull parked until a message arrives.  It stops counting toward
        ``max_in_flight`` (and ``MAX_RUNNING``) until :meth:`unpark`, so parked pulls (a consumer of more
        than max_in_flight queues on one connection, as a 4.9.3 broker lets it hold) cannot stop the
        connection's other requests (its heartbeats, offset commits, a producer's sends) from being read or
        run.  A parked request is cancelled when the connection closes, at once when it already has
        (nobody waits for its answer; what it did before parking stays done).

        False, and nothing changed, when the connection has ``max_parked`` requests parked already: the
        caller answers without waiting (and does not :meth:`unpark`)."""
        if len(self._parked) >= self.max_parked:
            if not self._park_refused:
                self._park_refused = True
                log.warning("%s has %d requests parked (long-polled pulls), the most one connection may: "
                            "those past it are answered without waiting", self.peer_address, len(self._parked))
            return False
        self._end_in_flight()
        task = asyncio.current_task()
        if task is None:
            return True
        self._end_running()  # a parked request waits, computing nothing: another may run
        if self._turn is task:  # a held-back pull let through parks: the next may go (it waits for a message)
            self._end_turn()
        if self._closed:
            task.cancel()  # its next await (the wait it parks for) raises CancelledError
        else:
            self._parked.add(task)
        return True

    def unpark(self) -> None:
        """The parked request works again (it counts toward ``max_in_flight`` once more)."""
        task = asyncio.current_task()
        if task is not None:
            self._parked.discard(task)
            self._running += 1  # (at once: a woken pull answers without awaiting)
        if self._closed:  # reading no longer matters; keep the count for _serve's final decrement
            self._in_flight += 1
            return
        self._start_in_flight()

    def _answer_deferred(self, request: RemotingCommand, response: RemotingCommand | bytes) -> None:
        if not request.flag & ONEWAY_FLAG and not self._closed:
            holding = self._holding
            self._holding = True  # queue it; one flush at the end of this loop iteration writes them all
            try:
                if type(response) is bytes:
                    self._write_frame(response)
                else:
                    self._reply(request, response)  # type: ignore[arg-type]
            finally:
                self._holding = holding
            if not holding and not self._flush_scheduled and self._outbox:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_soon(self._flush)
        self._end_in_flight()

    def _reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Write the response to *request* unless it was oneway or the connection has closed meanwhile."""
        if request.is_oneway or self._closed:
            return
        if response.opaque != request.opaque or not response.is_response:
            log.error("a handler of request code %s returned a response that does not answer its request",
                      request.code)
            return
        try:
            self._write(response)
        except ConnectionClosedError:
            pass
        except RemotingError as exc:
            self._answer_unsendable(request, exc)

    def _answer_unsendable(self, request: RemotingCommand, error: RemotingError) -> None:
        """The answer to *request* cannot be sent (*error*: too big for the peer's frame limit, or not
        encodable, a bug in its handler): say so in the log and answer SYSTEM_ERROR instead, so the peer
        learns it at once rather than at its timeout or by a closed connection (4.9.3 writes such an answer
        all the same, and a peer's decoder closes the connection on it)."""
        if isinstance(error, FrameTooLargeError):
            log.error("cannot answer request code %s from %s: %s; answering SYSTEM_ERROR instead",
                      request.code, self.peer_address, error)
        else:
            log.error("cannot answer request code %s from %s; answering SYSTEM_ERROR instead", request.code,
                      self.peer_address, exc_info=error)
        if request.flag & ONEWAY_FLAG or self._closed:
            return
        try:
            remark = (f"the answer to request code {request.code} cannot be sent: "
                      f"{type(error).__name__}: {error}")
            self._write(request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark))
        except RemotingError:
            pass

    async def _serve(self, request: RemotingCommand, deferred: bool = False) -> None:
        assert self._handler is not None
        running = False
        try:
            if self._hold_back and not request.flag & ONEWAY_FLAG:
                # The peer is not reading our answers: serve none of its requests that has one until it does,
                # then one at a time, in order, each after the peer has read what the one before wrote (or
                # close it after ANSWER_DRAIN_TIMEOUT_S without reading).  Served at once, each answer would
                # wait in memory for it, up to max_in_flight of them: 1,024 pull answers of up to 4 MB; let
                # through all together when it read a little, they did the same.  (4.9.3 serves and queues
                # them all, with no bound: a client pipelining pulls it never reads runs the broker out of
                # heap.)  Oneways have no answer to hold.  Closed meanwhile (or closed for not reading), the
                # request runs all the same and only its answer is dropped, as for every request read in full
                # (connection_lost): a send stored, an offset committed, as 4.9.3's processors finish what
                # they read
                await self._take_turn()
                if not deferred:
                    self._running += 1
                    running = True
            elif not deferred:  # (sends aside: see MAX_RUNNING)
                if self._running >= MAX_RUNNING and not request.flag & ONEWAY_FLAG:
                    await self._wait_running()  # its slot handed over by the request that ended
                    running = True
                    if self._hold_back:  # the peer stopped reading meanwhile: wait for its turn as well
                        await self._take_turn()
                else:
                    self._running += 1
                    running = True
            try:
                response = await self._handler(self, request)  # type: ignore[arg-type]  # the Connection
            except (HeaderFieldError, RemotingError) as exc:
                response = request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("request code %s from %s failed", request.code, self.peer_address)
                response = request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
            if response is not None and not request.is_oneway and not self._closed:
                if response.opaque != request.opaque or not response.is_response:
                    raise ProtocolError("a handler returned a response that does not answer its request")
                await self.send(response, ANSWER_DRAIN_TIMEOUT_S)
        except ConnectionClosedError:
            pass
        except RequestTimeoutError as exc:  # the peer stopped reading our answers: drop it
            if not self._closing_down():  # (logged once, not once per answer that timed out with it)
                log.warning("closing %s: %s", self.peer_address, exc)
                self.abort(exc)
        except RemotingError as exc:  # an answer too big for the peer, or not encodable (a handler's bug)
            self._answer_unsendable(request, exc)
        finally:
            if deferred:
                self._deferred_count -= 1
            if running:
                if self._run_waiters:
                    self._end_running()
                else:
                    self._running -= 1
            if self._turn is not None and self._turn is asyncio.current_task():
                self._end_turn()
            self._end_in_flight()

    # --- bounding the requests running at once (MAX_RUNNING) ----------------------------------------------

    async def _wait_running(self) -> None:
        """Wait until a running request ends or parks; its slot is then this request's (counted)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._run_waiters
        if waiters is None:
            waiters = self._run_waiters = collections.deque()
        waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed the slot, cancelled before it ran
                self._end_running()
            raise

    def _end_running(self) -> None:
        """A running request ended or parked: its slot goes to the first waiting request, if any."""
        waiters = self._run_waiters
        while waiters:
            future = waiters.popleft()
            if not future.done():  # (done: its task was cancelled while it waited)
                future.set_result(None)
                return
        self._running -= 1

    # --- holding back requests for a peer that does not read its answers -----------------------------

    @property
    def holding_back(self) -> bool:
        """Requests with an answer wait their turn (the peer is not reading what was written): a request that
        is about to compute an answer later (a woken long-polled pull) awaits :meth:`wait_turn` first."""
        return self._hold_back

    async def wait_turn(self) -> None:
        """While :attr:`holding_back`, wait until the requests held back before have run and the peer has
        read their answers; the calling task then holds the turn until its request ends (or parks)."""
        if self._hold_back:
            await self._take_turn()

    async def _take_turn(self) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        held = self._held
        if held is None:
            held = self._held = collections.deque()
        held.append(future)
        if self._stall_timer is None:
            self._stall_timer = future.get_loop().call_later(ANSWER_DRAIN_TIMEOUT_S, self._check_stall)
        if self._turn is None and not self._writing_paused:
            self._next_turn()
        try:
            await future
        except asyncio.CancelledError:
            if self._turn is future:  # let through, cancelled before it ran: the next goes instead
                self._end_turn()
            raise
        if self._turn is future:
            self._turn = asyncio.current_task()

    def _next_turn(self) -> None:
        """Let the first held-back request run (the peer reads, none let through before is running); with
        none held, stop holding back once the peer reads."""
        held = self._held
        while held:
            future = held.popleft()
            if not future.done():  # (done: its task was cancelled while it waited)
                self._turn = future
                future.set_result(None)
                return
        self._turn = None
        if not self._writing_paused:
            self._hold_back = False

    def _end_turn(self) -> None:
        """The request let through ended or parked: the next goes once the peer has read what it wrote."""
        self._turn = None
        if not self._writing_paused:
            self._next_turn()

    def _release_held(self) -> None:
        """The connection closed: every held-back request runs now (their answers are dropped)."""
        timer, self._stall_timer = self._stall_timer, None
        if timer is not None:
            timer.cancel()
        waiters, self._run_waiters = self._run_waiters, None
        if waiters:  # so do those waiting for a running one to end
            for future in waiters:
                if not future.done():
                    self._running += 1
                    future.set_result(None)
        held, self._held = self._held, None
        self._turn = None
        self._hold_back = False
        if held:
            for future in held:
                if not future.done():
                    future.set_result(None)

    def _check_stall(self) -> None:
        """Watchdog while requests are held back: the writing paused for ANSWER_DRAIN_TIMEOUT_S without the
        peer reading closes the connection (as an answer's drain does), which lets them all run."""
        self._stall_timer = None
        if self._closing_down() or (not self._held and self._turn is None):
            return
        delay = ANSWER_DRAIN_TIMEOUT_S
        if self._writing_paused:
            stalled = time.monotonic() - self._paused_at
            if stalled >= ANSWER_DRAIN_TIMEOUT_S:
                exc = RequestTimeoutError(f"{self.peer_address} did not read for {ANSWER_DRAIN_TIMEOUT_S} s")
                log.warning("closing %s: %s", self.peer_address, exc)
                self.abort(exc)
                return
            delay -= stalled
        self._stall_timer = asyncio.get_running_loop().call_later(delay, self._check_stall)
