"""Send round-trip probes (mqadmin sendMsgStatus, checkMsgSendRT, clusterRT): send N messages of a given size
with a Producer, one at a time, and time each send from the call to the broker's answer.

With *spread* the i-th message goes to publish queue ``i % len(queues)`` (checkMsgSendRT's selector), so
every queue of every broker is probed in turn; without it the producer picks queues as usual (the other two
commands, which send to a broker's own topic, the one named after the broker).  A failed send is a sample
too (``ok`` False, its error), not an exception: a probe reports, it does not stop at the first failure.

The average leaves the first send out, as mqadmin does: it also pays for the route lookup and the
connection.  Loop-bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rocketstore.client.errors import SendFailedError
from rocketstore.client.producer import Producer
from rocketstore.client.route import MessageQueue
from rocketstore.errors import RocketStoreError

__all__ = ["SendSample", "average_rt_ms", "probe_sends"]


@dataclass(frozen=True, slots=True)
class SendSample:
    """One timed send: where it went (broker name "" and queue id -1 when it failed before choosing), how
    long it took, and its result."""

    broker_name: str
    queue_id: int
    rt_ms: float
    ok: bool
    status: str
    msg_id: str | None = None
    error: str | None = None


def average_rt_ms(samples: list[SendSample]) -> float:
    """Mean round trip of the sends after the first (of the only one when there is one; 0 for none)."""
    timed = samples[1:] or samples
    return sum(s.rt_ms for s in timed) / len(timed) if timed else 0.0


def _round_robin(queues: list[MessageQueue], index: object) -> MessageQueue:
    if not isinstance(index, int):
        raise TypeError(f"the round-robin selector takes the send's index, not {index!r}")
    return queues[index % len(queues)]


async def probe_sends(producer: Producer, topic: str, count: int, size_bytes: int, *,
                      spread: bool = False) -> list[SendSample]:
    """*count* sends of a *size_bytes* body to *topic*, one after another, each timed."""
    if count < 1 or size_bytes < 1:
        raise ValueError("a probe needs at least one message of at least one byte")
    body = b"a" * size_bytes
    samples = []
    for i in range(count):
        begin = time.perf_counter()
        try:
            if spread:
                result = await producer.send_orderly(topic, body, i, selector=_round_robin)
            else:
                result = await producer.send(topic, body)
        except (RocketStoreError, OSError, TimeoutError) as exc:
            rt_ms = (time.perf_counter() - begin) * 1000
            # after its retries a send raises SendFailedError ("Send [3] times, ..."): a probe's line says
            # what refused it, the last try's error
            why = exc.last_error if isinstance(exc, SendFailedError) else exc
            samples.append(SendSample("", -1, rt_ms, False, type(why).__name__, error=str(why) or None))
            continue
        rt_ms = (time.perf_counter() - begin) * 1000
        mq = result.message_queue
        samples.append(SendSample(mq.broker_name, mq.queue_id, rt_ms, result.status == "SEND_OK", result.status,
                                  result.msg_id))
    return samples
