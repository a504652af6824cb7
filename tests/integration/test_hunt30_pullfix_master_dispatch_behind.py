"""A pull past a master's consume queue while its dispatcher is behind its own commitlog.

With slaveReadEnable a consumer can read offset N from a slave (its dispatch ran ahead of the master's),
then be sent back to the master and ask it for N + 1 while the master's consume queue still ends at N.  The
master answered PULL_OFFSET_MOVED (OFFSET_OVERFLOW_BADLY; 4.9.3's getMessage does the same) with
nextBeginOffset 0, the queue keeping its first message, and wrote an OFFSET_MOVED_EVENT: the consumer read
the whole queue again (64 deliveries of 60 messages in tests/integration/test_hunt13_ha_slave_read_cpp.py).
An offset the master's commitlog holds for the queue now answers PULL_NOT_FOUND in place (long-polled as at
the end of the queue); an offset past what the commitlog holds is corrected as before.  The dispatcher is
held (its lock taken) so that the consume queue lags the commitlog deterministically.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from local_cluster import LocalCluster, send_bodies
from raw_frames import RawConnection

from rocketstore.broker.pull import PullSysFlag
from rocketstore.broker.topics import OFFSET_MOVED_EVENT
from rocketstore.client.producer import Producer
from rocketstore.message.record import decode_record
from rocketstore.remoting.codes import RequestCode, ResponseCode, SerializeType
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader

TOPIC = "BehindTopic"
GROUP = "behind-group"


@contextmanager
def dispatch_held(cluster: LocalCluster) -> Iterator[None]:
    """What the broker stores meanwhile stays out of its consume queues until the block ends."""
    lock: threading.Lock = cluster.broker.store._dispatcher.lock
    assert lock.acquire(timeout=30), "the dispatcher's lock"
    try:
        yield
    finally:
        lock.release()


def send_undispatched(cluster: LocalCluster, bodies: list[str]) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "behind-producer") as producer:
            for body in bodies:
                await producer.send(TOPIC, body.encode())

    asyncio.run(go())


def pull(raw: RawConnection, offset: int, *, suspend_ms: int = 0) -> int:
    sys_flag = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend_ms else 0)
    header = PullMessageRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0, queue_offset=offset,
                                      max_msg_nums=32, sys_flag=sys_flag, commit_offset=0,
                                      suspend_timeout_ms=suspend_ms, subscription="*", sub_version=0,
                                      expression_type="TAG")
    return raw.send(RequestCode.PULL_MESSAGE, header.to_ext_fields(), b"", SerializeType.JSON)


def answer_line(answer: RemotingCommand | None) -> tuple[int, str | None, int]:
    assert answer is not None
    return answer.code, answer.remark, int(answer.ext_fields["nextBeginOffset"])


def test_a_pull_past_the_consume_queue_the_commitlog_holds_waits_in_place(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC, 1)
    send_bodies(cluster, TOPIC, ["a", "b", "c"])
    raw = RawConnection(cluster.broker_addr)
    try:
        with dispatch_held(cluster):
            send_undispatched(cluster, ["d", "e"])  # queue offsets 3 and 4: written, not dispatched
            assert cluster.call(lambda: cluster.broker.store.max_offset(TOPIC, 0)) == 3
            # the consumer read offset 3 elsewhere (a slave) and asks for 4: nothing new yet, no correction
            assert answer_line(raw.answer(pull(raw, 4))) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", 4)
            assert answer_line(raw.answer(pull(raw, 5))) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", 5)
            # past what the commitlog holds for the queue: corrected to 0 as before (and as 4.9.3)
            assert answer_line(raw.answer(pull(raw, 6))) == (ResponseCode.PULL_OFFSET_MOVED,
                                                              "OFFSET_OVERFLOW_BADLY", 0)
            # a long-polled pull at 4 is held until the record is dispatched
            held = pull(raw, 4, suspend_ms=60_000)
            hold = cluster.broker.pull_hold
            cluster.wait_until(lambda: hold.waiting(TOPIC) == {0: [4]}, 10, "the pull to be held")
        answer = raw.answer(held)
    finally:
        raw.close()
    assert answer is not None
    assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    assert int(answer.ext_fields["nextBeginOffset"]) == 5
    stored = decode_record(answer.body)
    assert (stored.queue_offset, stored.body, stored.store_size) == (4, b"e", len(answer.body))
    cluster.wait_dispatched()
    # one correction only: the pull really past the queue's end
    assert cluster.call(lambda: cluster.broker.store.max_offset(OFFSET_MOVED_EVENT, 0)) == 1
