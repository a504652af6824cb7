"""send_batch of bodies that are buffers but not bytes: each goes out as its bytes, as Producer.send sends one.

A memoryview whose items are wider than a byte (``memoryview(b"abcdefgh").cast("I")``) has a len() of its
items (2), not of its bytes (8): a batch of them went out with BODYLENGTH 2 and 8 bytes of body (the broker
then misread the batch), and since the column-wise batch encoder the key counters were written over the
wrong bytes.  A str body is refused naming the message and the fix, whichever path the batch takes (found by
the session-31 reviewer).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketstore.client import OutgoingMessage
from rocketstore.client.producer import Producer
from rocketstore.message.batch import split_batch


def _captured_batch(monkeypatch: pytest.MonkeyPatch, bodies: list[Any], **message_args: Any) -> bytes:
    sent: list[bytes] = []

    async def capture(self: Producer, topic: str, code: int, body: bytes, *args: Any, **kwargs: Any) -> str:
        sent.append(bytes(body))
        return "sent"

    monkeypatch.setattr(Producer, "_send", capture)

    async def go() -> None:
        producer = Producer("127.0.0.1:1", "hunt31-me-batch")
        await producer.send_batch("TopicA", [OutgoingMessage(b, **message_args) for b in bodies])

    asyncio.run(go())
    (body,) = sent
    return body


@pytest.mark.parametrize("message_args", [{"tags": "TagA"}, {"tags": "TagA", "keys": "k1"}])
def test_wide_item_memoryviews_go_out_as_their_bytes(monkeypatch: pytest.MonkeyPatch,
                                                    message_args: dict[str, str]) -> None:
    raw = [b"abcdefgh", b"ijklmnop", b"qrstuvwx"]
    body = _captured_batch(monkeypatch, [memoryview(r).cast("I") for r in raw], **message_args)
    assert list(split_batch(body)[1]) == raw


def test_a_batch_of_bytearrays_equals_one_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = [b"abcdefgh", b"ijklmnop"]
    from_bytes = _captured_batch(monkeypatch, raw, tags="TagA")
    from_arrays = _captured_batch(monkeypatch, [bytearray(r) for r in raw], tags="TagA")
    assert list(split_batch(from_arrays)[1]) == list(split_batch(from_bytes)[1]) == raw


@pytest.mark.parametrize("message_args", [{"tags": "TagA"}, {"tags": "TagA", "keys": "k1"}])
def test_a_str_body_is_refused_naming_the_message(monkeypatch: pytest.MonkeyPatch,
                                                  message_args: dict[str, str]) -> None:
    with pytest.raises(TypeError, match="message 1 of the batch: .*encode a str first"):
        _captured_batch(monkeypatch, [b"abcdefgh", "ijklmnop"], **message_args)
