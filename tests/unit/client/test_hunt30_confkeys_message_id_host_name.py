"""An offset message id of a broker registered by host name (brokerIP1=localhost, a DNS name) is one.

Such a broker, 4.9.3's as ours, registers ``localhost:PORT`` with the name servers but writes the address the
name resolves to into each record's STOREHOST, so its ids decode to 127.0.0.1:PORT.  `rocketstore message
query --id` compared that address with the registered texts only and took the id for a UNIQ_KEY (an error
asking for the topic), while mqadmin queryMsgById read the message from the id's address (checked against
both brokers with brokerIP1=localhost).  The registered names are now resolved
(off the event loop) before comparing."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from rocketstore.client.admin import AdminClient
from rocketstore.message.host import parse_host
from rocketstore.message.message_id import encode_offset_message_id


def _is_broker_id(registered: list[str], msg_id: str) -> bool:
    async def main() -> bool:
        admin = AdminClient("127.0.0.1:1")
        try:
            return await admin.is_broker_message_id(msg_id)
        finally:
            await admin.close()
    return asyncio.run(main())


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    addresses: list[str] = []

    async def cluster_info(self: AdminClient) -> SimpleNamespace:
        return SimpleNamespace(addresses=lambda: list(addresses))
    monkeypatch.setattr(AdminClient, "cluster_info", cluster_info)
    return addresses


def test_an_id_of_a_broker_registered_by_host_name(registered: list[str]) -> None:
    msg_id = encode_offset_message_id(parse_host("127.0.0.1:44331"), 1234)
    registered.append("localhost:44331")
    assert _is_broker_id(registered, msg_id)


def test_other_ports_and_names_are_not_that_broker(registered: list[str]) -> None:
    msg_id = encode_offset_message_id(parse_host("127.0.0.1:44331"), 1234)
    registered.append("localhost:44332")
    assert not _is_broker_id(registered, msg_id)
    registered.append("127.0.0.1:44331")  # by IP, as before
    assert _is_broker_id(registered, msg_id)
