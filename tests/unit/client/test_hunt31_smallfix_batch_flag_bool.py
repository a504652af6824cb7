"""``Producer.send_batch`` refuses a bool flag as ``Producer.send`` does.

Java's Message.setFlag takes an int; ``send(flag=True)`` raises TypeError before anything is sent, but a batch
message's ``flag=True`` went out as 1 (struct packs a bool as an int, and the uniform batch counted
``True`` as equal to ``1``).  Now the batch raises the same TypeError naming the message, on both the uniform path and the
message-by-message one; nothing is sent (the producer here is never started, and the refusal comes first).
"""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.client import Producer
from rocketstore.client.outgoing_message import OutgoingMessage, _uniform_batch_body, new_uniq_keys
from rocketstore.message.batch import decode_batch


@pytest.mark.parametrize(("flags", "index"), [
    ((True, True), 0),            # uniform: every message the same bool
    ((1, True, 1), 1),            # a bool equal to its neighbours' int, in the middle
    ((0, 0, False), 2),
    ((7, False), 1),
    ((1000, 1000.0), 1),          # a float equal to the first's int
])
@pytest.mark.parametrize("keyed", [False, True])  # keys: the message-by-message path
def test_a_bool_flag_in_a_batch_is_refused_naming_its_message(flags: tuple[int, ...], index: int,
                                                               keyed: bool) -> None:
    messages = [OutgoingMessage(b"body", tags="t", keys="k" if keyed else None, flag=f) for f in flags]

    async def send() -> None:
        producer = Producer("127.0.0.1:1", "hunt31-smallfix-flag")
        await producer.send_batch("Hunt31SmallfixFlag", messages, queue_id=0)

    kind = type(flags[index]).__name__
    with pytest.raises(TypeError, match=f"message {index} of the batch: flag must be an int, not {kind}"):
        asyncio.run(send())


def test_the_usual_batch_still_takes_the_one_join_path() -> None:
    big = [int(str(2**30 + 5)) for _ in range(3)]  # equal ints, three objects (as a Spark column gives them)
    assert big[0] is not big[1]
    for messages in ([OutgoingMessage(b"b%d" % i) for i in range(3)],
                     [OutgoingMessage(b"b%d" % i, tags="t", flag=5) for i in range(3)],
                     [OutgoingMessage(b"b%d" % i, flag=f) for i, f in enumerate(big)]):
        body = _uniform_batch_body(messages, new_uniq_keys(3))
        assert body is not None and [e.flag for e in decode_batch(body)] == [messages[0].flag] * 3
