"""An asyncio client driven from code without an event loop: the blocking consumers' and producers' common
part (:mod:`rocketstore.client.blocking_push`, :mod:`rocketstore.client.blocking_producer`).

:class:`LoopThread` runs an event loop in a daemon thread of its own; each blocking method runs the asyncio
client's coroutine there and waits for it.  Any number of threads may call at once (the client, loop-bound,
sees every call on its one loop).  Refused at once with RuntimeError: a call from a forked child (the loop
thread and the connections are the parent's) and a waiting one from the loop's own thread (it would wait for
itself); a call that does not wait (a send_async) is taken from there too.
Interrupted (Ctrl-C) or timed out, the waiting call is cancelled on the loop rather than left running.
A call still under way when a shutdown ends (another thread's) is cancelled too and raises the
client's not-running error at once; a shutdown may run inside another one on the same thread (a signal
handler's during the main thread's) and waits for it.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import CancelledError, Future
from typing import Any, ClassVar, TypeVar

from rocketstore.client.errors import ClientError
from rocketstore.remoting.transport import new_event_loop

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread of its own; ``_call`` runs a coroutine there and waits."""

    #: what a call after shutdown raises (the consumers' ConsumerNotRunningError, a ClientError too)
    not_running_error: ClassVar[type[ClientError]] = ClientError
    #: 4.9.3's words for a call after shutdown (the producers' "The producer service state not OK,
    #: SHUTDOWN_ALREADY"), before ours after "Cause: "; "": ours alone
    shut_down_words: ClassVar[str] = ""
    #: the attribute holding the asyncio client, named in the error of a call from the loop's own thread
    client_attribute: ClassVar[str] = "consumer"

    def __init__(self, thread_name: str, call_timeout_s: float) -> None:
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=thread_name, daemon=True)
        self._call_timeout_s = call_timeout_s
        self._pid = os.getpid()
        #: one shutdown / close at a time: a second one waits for the first instead of stopping the loop under it
        #: (reentrant: a signal handler's shutdown may run inside the main thread's own, and waits for it too)
        self._stop_lock = threading.RLock()
        #: the client's shutdown / close under way on the loop (the loop stops once it is done)
        self._stopping: Future[None] | None = None
        #: the shutdown cancels the calls still under way on the loop (see :meth:`_stop_client`)
        self._cancelling_calls = False
        #: coroutines _submit refused after handing them to the loop (closed once it is: _close_refused)
        self._refused: list[Coroutine[Any, Any, Any]] = []
        self._thread.start()

    def _check_caller(self) -> None:
        """Refuse the calls that could only hang: from a forked child (:meth:`_check_process`), and from the
        loop's own thread (an async handler or a listener waiting for the loop it blocks)."""
        self._check_process()
        if threading.get_ident() == self._thread.ident:
            raise RuntimeError(f"{type(self).__name__} called from its own event loop thread (an async handler "
                               f"or a listener) would wait for itself: await the asyncio client "
                               f"(.{self.client_attribute}), or from a send callback use send_async")

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError(f"{type(self).__name__} was created in process {self._pid}; after fork its "
                               "event loop thread and connections are not in this process: create one here")

    def _call(self, coro: Coroutine[Any, Any, T], extra_timeout_s: float = 0.0) -> T:
        """Run *coro* on the loop and wait for it.  Interrupted (Ctrl-C) or timed out, the call is cancelled
        on the loop rather than left running: a poll nobody waits for any more would take messages and
        count them as consumed (committed, never delivered)."""
        try:
            self._check_caller()
        except BaseException:
            coro.close()
            raise
        future = self._submit(coro)
        try:
            return future.result(self._call_timeout_s + extra_timeout_s)
        except CancelledError:
            if not self._cancelling_calls:
                raise
            # cancelled by the shutdown (see _stop_client), not by this caller: a typed error at once
            raise self._not_running(f"{type(self).__name__} was shut down while this call was under way") \
                from None
        except BaseException:
            future.cancel()
            raise

    def _not_running(self, ours: str) -> Exception:
        words = self.shut_down_words
        return self.not_running_error(f"{words} Cause: {ours}" if words else ours)

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run *coro* on the loop without waiting: its concurrent.futures.Future (callbacks added to it run
        on the loop thread).  Allowed from the loop's own thread, which it does not wait for: a send callback
        sending again (4.9.3's onException resending with send(msg, callback)).  Refused at once, *coro*
        closed: from a forked child, and after shutdown or once the shutdown cancels what is left on the
        loop (``not_running_error``; submitted after that sweep, its future would never be done)."""
        try:
            self._check_process()
            if self._cancelling_calls or not self._thread.is_alive():
                raise self._not_running(f"{type(self).__name__} is shut down")
        except BaseException:
            coro.close()
            raise
        # another thread's shutdown may have begun its sweep since the check above (and even closed the
        # loop): the sweep sees a call submitted before it began (see _stop_client), not this one, so it is
        # refused here (no lock: a submit costs one more read)
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        except RuntimeError:  # "Event loop is closed"
            coro.close()
            if not self._cancelling_calls:
                raise
            raise self._shut_down_meanwhile() from None
        if self._cancelling_calls:
            future.cancel()
            # the loop may still start it (then the cancel ends it there), or stop without doing so: closed
            # by whichever thread sees the loop closed, else "coroutine ... was never awaited" when collected
            self._refused.append(coro)
            if self._loop.is_closed():
                self._close_refused()
            raise self._shut_down_meanwhile()
        return future

    def _close_refused(self) -> None:
        """Close each coroutine :meth:`_submit` refused after handing it to the loop, now that the loop is
        closed, if the loop never started it (one it started was cancelled there).  Both the refusing
        thread and the shutdown call this; each coroutine is taken by one of them."""
        while self._refused:
            try:
                coro = self._refused.pop()
            except IndexError:  # the other thread took the last one
                return
            try:
                unstarted = inspect.getcoroutinestate(coro) == inspect.CORO_CREATED  # type: ignore[arg-type]
            except AttributeError:  # not a native coroutine: its state cannot be told
                continue
            if unstarted:
                coro.close()

    def _shut_down_meanwhile(self) -> Exception:
        return self._not_running(f"{type(self).__name__} was shut down while this call was submitted")

    def _call_sync(self, fn: Callable[[], T]) -> T:
        """Run the plain function *fn* on the loop (it touches loop-bound state) and wait for it."""
        async def run() -> T:
            return fn()

        return self._call(run())

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """The client's update_namesrv_addr (``host:port[;host:port]``), run on its loop."""
        client = getattr(self, self.client_attribute)
        self._call_sync(lambda: client.update_namesrv_addr(namesrv_addr))

    def _stop(self, client_stop: Callable[[], Coroutine[Any, Any, None]], on_own_thread: bool) -> None:
        """Shut the client down (*client_stop*) and end the loop thread; any thread, any number of
        times.  From the client's own threads (a consumer's handler, which shutdown would wait for, or the
        loop) it returns at once and a thread of its own does it (4.9.3's shutdown inside a listener does
        not wait for the listeners either)."""
        if os.getpid() != self._pid:
            return  # a forked child has no loop thread to stop; the parent's client is the parent's
        if on_own_thread or threading.get_ident() == self._thread.ident:
            threading.Thread(target=self._stop, args=(client_stop, False),
                             name=f"{self._thread.name}-shutdown").start()
            return
        with self._stop_lock:
            if self._stopping is None:
                if not self._thread.is_alive():
                    return
                self._check_caller()
                # not cancelled if this wait times out (a handler runs long) or is interrupted: the shutdown
                # goes on, commits and closes, and the loop stops after it (stopped under it, the client
                # was left half shut with its tasks destroyed pending); a later call waits for it again
                stopping = asyncio.run_coroutine_threadsafe(self._stop_client(client_stop), self._loop)
                stopping.add_done_callback(lambda _: self._loop.call_soon_threadsafe(self._loop.stop))
                self._stopping = stopping
            self._stopping.result(self._call_timeout_s)
            self._thread.join(10)
            if not self._thread.is_alive() and not self._loop.is_closed():
                self._loop.close()
                self._close_refused()

    async def _stop_client(self, client_stop: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """*client_stop*, then cancel what is left on the loop (a send_in_transaction whose local transaction
        still runs, another thread's call, a send_async): the loop stops after this, and a call left pending
        there was waited for until its timeout (then "Task was destroyed but it is pending!"); cancelled,
        its caller gets ``not_running_error`` at once (a send_async's future is cancelled)."""
        try:
            await client_stop()
        finally:
            self._cancelling_calls = True
            # a call submitted before the flag (from another thread) is only a callback queued on the loop
            # until it runs: one turn of the loop makes it a task the sweep below cancels (later ones are
            # refused by _submit)
            await asyncio.sleep(0)
            me = asyncio.current_task()
            left = [task for task in asyncio.all_tasks() if task is not me]
            for task in left:
                task.cancel()
            if left:  # bounded: a task that swallows its cancellation does not hold the shutdown for good
                await asyncio.wait(left, timeout=self._call_timeout_s)

    def _stop_loop(self) -> None:
        if not self._thread.is_alive():
            return  # shut down already (a start after shutdown): its error, not "Event loop is closed"
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def _start(self, client: Any) -> None:
        """Run *client*'s start; if it failed (and so closed what it had opened: it cannot be started
        again), the loop thread goes too.  ``with`` does not call ``__exit__`` after a failed ``__enter__``:
        without this every failed ``with`` would leave a thread and its event loop running for good.  (A
        second start of a running client raises without stopping anything.)  A start after a failed one
        raises the client's START_FAILED error here, the loop thread being gone with the first."""
        if client.start_failed:
            client.check_startable()
        try:
            self._call(client.start())
        except BaseException:
            if client.stopping:
                self._stop_loop()
            raise
