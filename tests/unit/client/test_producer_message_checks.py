"""What a producer refuses before sending anything, as Java's Validators.checkMessage: a body over
maxMessageSize (4 MiB by default) and an empty one.  No server is needed: nothing reaches the network
(the name server address is unreachable; a send that got that far would fail with a route error)."""

from __future__ import annotations

import pytest

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import MessageIllegalError
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import run


def _send(producer: Producer, body: bytes) -> None:
    async def go() -> None:
        try:
            await producer.send("T", body)
        finally:
            await producer.close()

    run(go())


def test_a_body_over_max_message_size_is_refused_before_sending() -> None:
    with pytest.raises(MessageIllegalError, match="over max value, MAX: 4194304") as caught:
        _send(Producer("127.0.0.1:1"), b"x" * (4 * 1024 * 1024 + 1))
    assert caught.value.code == ResponseCode.MESSAGE_ILLEGAL
    with pytest.raises(MessageIllegalError, match="MAX: 10"):
        _send(Producer("127.0.0.1:1", max_message_size=10), b"x" * 11)


def test_an_empty_body_is_refused() -> None:
    with pytest.raises(MessageIllegalError, match="length is zero"):
        _send(Producer("127.0.0.1:1"), b"")


def test_a_batch_is_measured_by_its_encoded_body() -> None:
    async def go() -> None:
        producer = Producer("127.0.0.1:1", max_message_size=100)
        try:
            await producer.send_batch("T", [OutgoingMessage(b"x" * 40), OutgoingMessage(b"y" * 40)])
        finally:
            await producer.close()

    with pytest.raises(MessageIllegalError, match="MAX: 100"):
        run(go())
