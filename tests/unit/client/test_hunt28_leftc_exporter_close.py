"""Closing the exporter while a scraper's connection is open and idle (it sent part of a request, or nothing):
close returns and the scraper sees its connection end.  Before, on Python 3.12+ close waited in the
server's wait_closed for that connection (up to the 10 s the exporter gives a request's head), and on 3.11
it returned with the connection left open for those 10 s."""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import MetricsServer


@pytest.mark.parametrize("sent", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"])
def test_close_ends_an_idle_scrapers_connection(sent: bytes) -> None:
    async def go() -> bytes:
        admin = AdminClient("127.0.0.1:1")  # never asked: nothing is collected
        server = MetricsServer(admin, host="127.0.0.1", port=0)
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(sent)
            await writer.drain()
            await asyncio.sleep(0.05)
            await asyncio.wait_for(server.close(), 5)  # (waited 10 s for the scraper on 3.12+)
            return await asyncio.wait_for(reader.read(), 5)  # (open for 10 s on 3.11)
        finally:
            writer.close()
            await admin.close()

    assert asyncio.run(go()) == b""

