"""The producer's hand-written SEND_MESSAGE_V2 extFields equal the typed header's rendering."""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.client.producer import Producer


@pytest.mark.parametrize(("properties", "batch", "flag", "queue_id"),
                         [("TAGS\x01a\x02UNIQ_KEY\x01B", False, 0, 3), ("", True, 0, 0), ("x\x01y", False, -7, 1),
                          ("", False, 2147483647, 15)])
def test_fast_ext_fields_match_the_send_message_header(properties: str, batch: bool, flag: int,
                                                       queue_id: int) -> None:
    async def go() -> None:
        producer = Producer("127.0.0.1:9876", "group-\u00e9")
        try:
            fast = producer._ext_fields_v2("TopicA", queue_id, properties, batch, flag)
            typed = producer._header("TopicA", queue_id, properties, batch, flag).to_ext_fields_v2()
            # the born timestamp is read from the clock by each: both must be a decimal ms count
            assert fast.pop("g").isdecimal() and typed.pop("g").isdecimal()
            assert list(fast.items()) == list(typed.items())
        finally:
            await producer.close()

    asyncio.run(go())
