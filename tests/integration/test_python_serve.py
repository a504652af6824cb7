"""Our Python client (rocketstore.client) against ``rocketstore serve`` run as a subprocess: every send mode,
a tag-filtered consumer that resumes from its committed offsets, and a kill -9 of the server in the middle of
synchronous sends with SYNC_FLUSH: no acknowledged message is lost and the same producer carries on once the
server is back on the same ports.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from local_cluster import eventually
from serve_process import ServeProcess, cli, free_port, store_dump, write_broker_conf

from rocketstore.client import (
    ClientError,
    MessageQueue,
    OutgoingMessage,
    Producer,
    PullConsumer,
    PullStatus,
    decode_messages,
)
from rocketstore.client.errors import NoRouteError
from rocketstore.errors import RemotingError
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import ConnectionPool, run

TAGS = ("TagA", "TagB", "TagC")  # message i has tag TAGS[i % 3]
TEST_TIMEOUT_S = 90.0


def bounded(fn: Callable[[], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        return await asyncio.wait_for(fn(), TEST_TIMEOUT_S)

    return run(go())


async def routed(consumer: PullConsumer, topic: str) -> list[MessageQueue]:
    """An auto-created topic reaches the name server a moment after the first send."""
    async def queues() -> list[MessageQueue]:
        try:
            return await consumer.queues(topic)
        except NoRouteError:
            return []

    return await eventually(queues, 15, f"a route for {topic}")  # type: ignore[no-any-return]


async def consume_available(namesrv: str, topic: str, group: str, expression: str) -> list[StoredMessage]:
    """One consumer run: from the group's committed offset (0 for a new group) to the end of every queue with
    *expression*, then commit where it stopped.  A run that filters out a whole batch on the broker
    (NO_MATCHED_MSG) moves on to nextBeginOffset, as a push consumer does."""
    got: list[StoredMessage] = []
    async with PullConsumer(namesrv, group) as consumer:
        for mq in await routed(consumer, topic):
            offset = await consumer.committed_offset(mq, default=0)
            while True:
                result = await consumer.pull(mq, offset, expression=expression)
                got.extend(result.messages)
                if result.status in (PullStatus.NO_NEW_MSG, PullStatus.OFFSET_ILLEGAL) \
                        or result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
            await consumer.commit_offset(mq, offset)
    return got


def body(i: int) -> bytes:
    return f"py-{i}".encode()


def index_of(m: StoredMessage) -> int:
    return int(m.body.decode().split("-")[1])


def test_python_client_against_rocketstore_serve_every_send_mode_and_a_resuming_tag_consumer(tmp_path: Path) -> None:
    topic, group = "PyServeTopic", "py-serve-consumer"
    conf = write_broker_conf(tmp_path / "broker.conf")
    with ServeProcess(tmp_path / "store", conf) as serve:
        async def produce() -> None:
            pool = ConnectionPool()
            async with Producer(serve.namesrv_addr, "py-serve-producer") as producer:
                sent = [await producer.send(topic, body(i), tags=TAGS[i % 3], keys=f"key-{i}") for i in range(60)]
                assert {r.status for r in sent} == {"SEND_OK"}
                try:
                    for i, r in enumerate(sent):  # each offset message id views the message it names
                        _, offset = decode_offset_message_id(r.offset_msg_id)
                        viewed = await pool.request(serve.broker_addr, RemotingCommand.request(
                            RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)}), 10)
                        assert viewed.code == ResponseCode.SUCCESS
                        [m] = decode_messages(viewed.body)
                        assert m.body == body(i) and m.properties["UNIQ_KEY"] == r.msg_id and m.tags == TAGS[i % 3]
                finally:
                    await pool.close()

                for i in range(100, 120):
                    await producer.send_oneway(topic, body(i), tags=TAGS[i % 3], keys=f"key-{i}")
                # orderly: one sharding key, one queue, in send order
                for i in range(200, 240):
                    r = await producer.send_orderly(topic, body(i), f"order-{i % 5}", tags=TAGS[i % 3])
                    assert r.status == "SEND_OK"
                batch = await producer.send_batch(topic, [OutgoingMessage(body(i), tags=TAGS[i % 3], keys=f"key-{i}")
                                                          for i in range(300, 312)])
                assert batch.status == "SEND_OK" and len(batch.msg_id.split(",")) == 12

        bounded(produce)
        sent = [*range(60), *range(100, 120), *range(200, 240), *range(300, 312)]

        async def everything() -> list[StoredMessage]:
            async def all_there() -> list[StoredMessage]:
                found = await consume_available(serve.namesrv_addr, topic, f"inspector-{time.monotonic_ns()}", "*")
                return found if len(found) == len(sent) else []

            return await eventually(all_there, 15, "every message, the oneway ones included")  # type: ignore[no-any-return]

        stored = bounded(everything)
        assert sorted(index_of(m) for m in stored) == sorted(sent)
        queues_of_keys: dict[int, set[int]] = {}
        for m in stored:
            if 200 <= index_of(m) < 240:
                queues_of_keys.setdefault(index_of(m) % 5, set()).add(m.queue_id)
        assert all(len(q) == 1 for q in queues_of_keys.values()), "one sharding key, one queue"
        for key, (queue_id,) in queues_of_keys.items():
            in_queue = sorted((m for m in stored if m.queue_id == queue_id and 200 <= index_of(m) < 240
                               and index_of(m) % 5 == key), key=lambda m: m.queue_offset)
            assert [index_of(m) for m in in_queue] == list(range(200 + key, 240, 5)), "in send order"

        # a consumer on "TagA || TagB" gets exactly those, then resumes from its committed offsets
        got = bounded(lambda: consume_available(serve.namesrv_addr, topic, group, "TagA || TagB"))
        assert sorted(index_of(m) for m in got) == sorted(i for i in sent if TAGS[i % 3] != "TagC")
        assert {m.tags for m in got} == {"TagA", "TagB"}
        assert bounded(lambda: consume_available(serve.namesrv_addr, topic, group, "TagA || TagB")) == []

        async def more() -> None:
            async with Producer(serve.namesrv_addr, "py-serve-producer") as producer:
                for i in range(400, 430):
                    await producer.send(topic, body(i), tags=TAGS[i % 3])

        bounded(more)

        async def more_dispatched() -> bool:
            # consume_available pulls without waiting: the 30 new messages must be in the consume queues first
            async with PullConsumer(serve.namesrv_addr, "py-serve-inspector") as consumer:
                ends = [await consumer.max_offset(mq) for mq in await routed(consumer, topic)]
            return sum(ends) == len(sent) + 30

        bounded(lambda: eventually(more_dispatched, 15, "the 30 new messages in the consume queues"))
        again = bounded(lambda: consume_available(serve.namesrv_addr, topic, group, "TagA || TagB"))
        assert sorted(index_of(m) for m in again) == [i for i in range(400, 430) if TAGS[i % 3] != "TagC"]
        assert serve.terminate() == 0


@pytest.mark.parametrize("busy_poll_us", [0, 500])
def test_kill_9_during_sync_flush_sends_loses_no_acknowledged_message_and_the_producer_reconnects(
        tmp_path: Path, busy_poll_us: int) -> None:
    """SIGKILL of ``rocketstore serve`` (SYNC_FLUSH) while one producer sends synchronously; the server comes
    back on the same ports and the SAME producer object (no reconnect call) goes on sending.  Every message
    the broker acknowledged before the kill is in ``rocketstore store dump`` afterwards.  Also with the
    broker busy-polling (busyPollMicros), whose loop holds still while sends wait for their sync."""
    store, topic = tmp_path / "store", "CrashTopic"
    conf = write_broker_conf(tmp_path / "broker.conf", flushDiskType="SYNC_FLUSH", busyPollMicros=busy_poll_us)
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    first = ServeProcess(store, conf, **ports).start()
    second: ServeProcess | None = None
    acked: dict[str, bytes] = {}  # UNIQ_KEY -> body of every SEND_OK
    phases: dict[str, int] = {"before": 0, "failed": 0, "after": 0}
    try:
        async def scenario() -> None:
            nonlocal second
            restarted = asyncio.Event()
            stop = asyncio.Event()

            async def sender(producer: Producer) -> None:
                i = 0
                while not stop.is_set():
                    payload = f"crash-{i}".encode()
                    i += 1
                    try:
                        result = await producer.send(topic, payload, keys=f"ck-{i}")
                    except (RemotingError, ClientError):
                        phases["failed"] += 1
                        await asyncio.sleep(0.05)
                        continue
                    assert result.status == "SEND_OK"
                    acked[result.msg_id] = payload
                    phases["after" if restarted.is_set() else "before"] += 1

            async with Producer(first.namesrv_addr, "crash-producer", timeout_s=5.0) as producer:
                task = asyncio.ensure_future(sender(producer))
                try:
                    await eventually(lambda: _value(phases["before"] >= 60), 30, "60 acknowledged sends")
                    await asyncio.to_thread(first.kill)
                    assert (store / "abort").exists(), "killed: the store was not closed"
                    await eventually(lambda: _value(phases["failed"] >= 1), 30, "a send to fail while it is down")
                    second = await asyncio.to_thread(ServeProcess(store, conf, **ports).start)
                    restarted.set()
                    assert (second.namesrv_addr, second.broker_addr) == (first.namesrv_addr, first.broker_addr)
                    await eventually(lambda: _value(phases["after"] >= 30), 60,
                                     "the same producer to send again after the restart")
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 30)

        bounded(scenario)
        assert second is not None
        assert second.terminate() == 0
    finally:
        first.kill()
        if second is not None:
            second.kill()

    dump = store_dump(store, conf)
    stored: dict[str, bytes] = {}
    for t in dump["topics"]:
        if t["topic"] != topic:
            continue
        for q in t["queues"]:
            for m in q["messages"]:
                stored[m["properties"]["UNIQ_KEY"]] = base64.b64decode(m["bodyBase64"])
    lost = {k: v for k, v in acked.items() if stored.get(k) != v}
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages are missing after kill -9"
    assert phases["before"] >= 60 and phases["after"] >= 30
    verify = cli("store", "verify", str(store), "-c", str(conf))
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]


async def _value(value: Any) -> Any:
    return value


@pytest.mark.parametrize("command", ["serve", "namesrv", "broker"])
def test_a_config_file_that_is_not_utf8_is_one_error_line(tmp_path: Path, command: str) -> None:
    """A latin-1 or binary broker.conf / namesrv.conf: one line naming the file and where it stops being
    UTF-8, exit 2, no traceback and nothing started."""
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"brokerName=broker-\xe9\nlistenPort=0\n")
    out = cli(command, "-c", str(conf), "--store", str(tmp_path / "store")) if command != "namesrv" else \
        cli(command, "-c", str(conf))
    assert out.returncode == 2, out
    assert out.stderr == f"rocketstore: error: cannot read {conf}: not UTF-8 text (invalid continuation byte at " \
                         f"byte 18)\n"
    assert not (tmp_path / "store").exists()
