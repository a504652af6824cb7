"""A cancelled task is cancelled, whatever it was waiting for when the cancel came.

Python 3.11's ``asyncio.wait_for`` answers a cancel that lands after the awaited operation finished, but
before the waiting task resumed, with the operation's result (or its error): the cancel is lost.  A service
retrying a refused connection in a loop (the slave's config sync against a master that is down) then runs on
after ``close()`` cancelled it, and the close waits for it forever.  These tests sweep the cancel across every
loop iteration of a refused connect and of a connect that succeeds, so one of them lands in that window."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import rocketstore
from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.transport import ConnectionPool, connect, run

pytestmark = pytest.mark.both_loops  # the same on uvloop's loop


def refused_addr() -> str:
    """An address on 127.0.0.1 nobody listens on (a port bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


async def cancel_after(iterations: int, coro_fn: Callable[[], Awaitable[object]]) -> object:
    """Start *coro_fn()*, let the loop run *iterations* times, cancel it, and return what it ended with (its
    result or exception); "finished first" if it had ended before the cancel."""
    task = asyncio.get_running_loop().create_task(coro_fn())  # type: ignore[arg-type]
    for _ in range(iterations):
        await asyncio.sleep(0)
    if not task.cancel():
        return "finished first"
    done, _ = await asyncio.wait([task], timeout=5)
    if not done:
        return "still running 5 s after the cancel"
    return task.exception() if not task.cancelled() else asyncio.CancelledError()


@pytest.mark.parametrize("iterations", range(0, 40))
def test_a_cancel_during_a_refused_connect_is_never_lost(iterations: int) -> None:
    addr = refused_addr()

    lost = []  # set when the test has seen the cancel lost: the loop ends so that the test can end

    async def retry_forever() -> None:
        while not lost:  # as a periodic service does: a refused connect is logged and tried again
            try:
                await connect(addr, timeout_s=3)
            except ConnectionClosedError:
                pass
            await asyncio.sleep(0)

    async def go() -> object:
        try:
            return await cancel_after(iterations, retry_forever)
        finally:
            lost.append(True)

    ended = run(go())
    assert isinstance(ended, asyncio.CancelledError), ended


@pytest.mark.parametrize("iterations", range(0, 40))
def test_a_cancel_during_a_connect_that_succeeds_is_never_lost(iterations: int) -> None:
    async def go() -> object:
        # the writer is closed: from 3.12 on server.wait_closed() waits for the connections it accepted, and
        # 3.12.1's StreamWriter does not close its transport when dropped (the test hung there)
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = ConnectionPool(connect_timeout_s=3)

        async def connect_once() -> str:
            await pool.get(f"127.0.0.1:{port}")
            return "connected"

        try:
            return await cancel_after(iterations, connect_once)
        finally:
            await pool.close()
            server.close()
            await server.wait_closed()

    ended = run(go())
    assert isinstance(ended, asyncio.CancelledError) or ended == "finished first", ended


def test_no_coroutine_of_the_package_awaits_asyncio_wait_for() -> None:
    """Every bounded wait inside a task uses ``asyncio.timeout``: a task awaiting ``asyncio.wait_for`` can lose
    its cancel as above (a close then waits for a task that runs on)."""
    src = Path(rocketstore.__file__).parent
    found = [f"{path.relative_to(src)}:{n}" for path in sorted(src.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if "await asyncio.wait_for(" in line]
    assert not found, found
