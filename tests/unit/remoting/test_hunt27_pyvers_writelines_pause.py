"""A connection stops writing toward a peer that reads nothing, on every Python the project runs on.

CPython 3.12.0-3.12.8 and 3.13.0-3.13.1 have a selector transport whose ``writelines()`` never pauses the
protocol at the high-water mark (gh-127655, CVE-2024-12254).  A connection hands a frame with a large body (a
producer's send, a pull answer) and every batch of frames to ``writelines``, so on those Pythons nothing ever
waited: toward a peer that stopped reading the frames were buffered without bound in memory, and a oneway
never raised (tests/integration/test_hunt23_sendretry_stalled_broker.py failed on 3.12.1 and 3.13.0).

The first test runs on the running Python's own transport; the second stands in a transport that behaves as
those Pythons' does (built on asyncio's own flow-control mixin), so that the work-around is checked on every
Python, 3.11 included.  Outcomes only: no durations asserted.
"""

from __future__ import annotations

import asyncio
import os
import socket
from asyncio.transports import _FlowControlMixin
from typing import Any

import pytest

import rocketstore.remoting.connection as connection_mod
from rocketstore.errors import RequestTimeoutError
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.connection import Connection
from rocketstore.remoting.transport import connect, run

#: random (so incompressible) bodies, large enough that the socket buffers fill within a few sends
BODY_BYTES = 1 << 20
MAX_SENDS = 64


def _oneway(body: bytes) -> RemotingCommand:
    return RemotingCommand.request(310, {"topic": "Hunt27WritelinesPause"}, body, oneway=True)


@pytest.mark.both_loops
def test_oneways_to_a_peer_that_reads_nothing_end_up_waiting() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # the connection completes in the backlog and is never read
        addr = f"127.0.0.1:{listener.getsockname()[1]}"

        async def go() -> int:
            connection = await connect(addr)
            try:
                for sent in range(MAX_SENDS):
                    try:
                        await connection.oneway(_oneway(os.urandom(BODY_BYTES)), timeout_s=0.5)
                    except RequestTimeoutError:
                        return sent
                return MAX_SENDS
            finally:
                connection.close()

        sent = run(go())
    assert sent < MAX_SENDS, f"{MAX_SENDS} oneways of {BODY_BYTES} B to a peer reading nothing all returned"


class _NoPauseWritelinesTransport(_FlowControlMixin, asyncio.Transport):
    """A transport that never sends, whose writelines() buffers without the high-water check (as the selector
    transport of CPython 3.12.0-3.12.8 and 3.13.0-3.13.1); write() and set_write_buffer_limits() check."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.buffered = 0

    def set_protocol(self, protocol: Any) -> None:
        self._protocol = protocol

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def write(self, data: Any) -> None:
        self.buffered += len(data)
        self._maybe_pause_protocol()

    def writelines(self, list_of_data: Any) -> None:
        self.buffered += sum(len(data) for data in list_of_data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)


def test_a_writelines_that_skips_the_high_water_check_still_pauses_the_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # as on 3.12.1 and 3.13.0 (raising=False: the test fails on its assertion, not here, without the fix)
    monkeypatch.setattr(connection_mod, "_WRITELINES_SKIPS_PAUSE", True, raising=False)

    async def go() -> None:
        transport = _NoPauseWritelinesTransport(asyncio.get_running_loop())
        connection = Connection()
        transport.set_protocol(connection)
        connection.connection_made(transport)
        # a large body leaves beside its header: one writelines() of two chunks
        await connection.oneway(_oneway(os.urandom(BODY_BYTES)), timeout_s=0.5)
        assert transport.buffered > BODY_BYTES
        with pytest.raises(RequestTimeoutError):
            await connection.oneway(_oneway(b"waits for the peer to read"), timeout_s=0.2)
        assert transport.buffered < 2 * BODY_BYTES  # the second was not queued

    run(go())
