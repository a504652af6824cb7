"""A connect refused says so on either event loop: asyncio's own loop words it "[Errno 111] Connect call
failed ('127.0.0.1', PORT)" (uvloop: "Connection refused"), which named no refusal."""

from __future__ import annotations

import asyncio
import socket

import pytest

from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.transport import connect


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: a connect to it is refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connect_names_the_refusal_on_the_asyncio_loop() -> None:
    port = _closed_port()

    async def attempt() -> None:
        with pytest.raises(ConnectionClosedError, match=rf"cannot connect to 127.0.0.1:{port}: .*[Rr]efused"):
            await connect(f"127.0.0.1:{port}")

    asyncio.run(attempt())  # the standard loop, whatever ROCKETSTORE_EVENT_LOOP says
