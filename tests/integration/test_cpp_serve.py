"""The official C++ client (PyPI ``rocketmq`` 0.4.4) against ``rocketstore serve`` started as a user starts it
(``python -m rocketstore.cli.main serve``, a subprocess): every way the wheel sends, and a tag-filtered push
consumer that stops and resumes from its committed offsets.

test_cpp_client.py covers the in-process broker (compressed bodies, orderly consumers, retries, a broker
restart); this module adds what only the real command shows, plus send_oneway / send_orderly / 300 sync sends
whose ids resolve on the broker.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import eventually
from serve_process import ServeProcess, write_broker_conf

from rocketstore.client import PullConsumer, decode_messages
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import ConnectionPool, run

pytestmark = requires_cpp_client

TAGS = ("TagA", "TagB", "TagC")  # message i has tag TAGS[i % 3] (cpp_client_runner.py --tags)
TEST_TIMEOUT_S = 60.0


def body(i: int) -> str:
    return f"body-{i} ünï"


def index_of(text: str) -> int:
    return int(text.split()[0].split("-")[1])


def produce(namesrv: str, home: Path, topic: str, count: int, first: int, *extra: str) -> list[dict[str, Any]]:
    runner = Runner(["produce", namesrv, topic, "cpp-serve-producer", str(count), "--tags", ",".join(TAGS),
                     "--first", str(first), *extra], home)
    try:
        runner.collect_until(lambda seen: any(s.get("done") for s in seen), 60, "the C++ producer")
        runner.wait(10)
    finally:
        runner.kill()
    return [s for s in runner.seen if "status" in s]


def bounded(coro: Any) -> Any:
    async def go() -> Any:
        return await asyncio.wait_for(coro, TEST_TIMEOUT_S)

    return run(go())


async def queue_offsets(namesrv: str, topic: str, group: str) -> tuple[dict[int, int], dict[int, int]]:
    """({queue: max offset}, {queue: committed offset of *group*, -1 if none}) through our client."""
    async with PullConsumer(namesrv, group) as consumer:
        queues = await consumer.queues(topic)
        maxes = {mq.queue_id: await consumer.max_offset(mq) for mq in queues}
        committed = {mq.queue_id: await consumer.committed_offset(mq, default=-1) for mq in queues}
    return maxes, committed


async def wait_stored(namesrv: str, topic: str, count: int) -> None:
    async def total() -> bool:
        maxes, _ = await queue_offsets(namesrv, topic, "cpp-serve-inspector")
        return sum(maxes.values()) == count

    await eventually(total, 30, f"{count} messages in the consume queues of {topic}")


async def pull_everything(namesrv: str, topic: str) -> list[StoredMessage]:
    async with PullConsumer(namesrv, "cpp-serve-inspector") as consumer:
        found: list[StoredMessage] = []
        for mq in await consumer.queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(mq, offset)
                if not result.messages:
                    break
                found.extend(result.messages)
                offset = result.next_begin_offset
        return found


async def resolve_ids(broker: str, topic: str, ids: list[str]) -> dict[str, StoredMessage]:
    """Each C++ send-result id through the broker: QUERY_MESSAGE with _UNIQUE_KEY_QUERY (the wheel's
    SendResult.msg_id is the client-made UNIQ_KEY), then VIEW_MESSAGE_BY_ID with the commitlog offset the
    record carries (what an offset message id encodes)."""
    pool = ConnectionPool()
    end_ms = int(time.time() * 1000) + 600_000
    found: dict[str, StoredMessage] = {}
    try:
        async def by_uniq_key(uniq: str) -> StoredMessage | None:
            reply = await pool.request(broker, RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
                "topic": topic, "key": uniq, "maxNum": "32", "beginTimestamp": "0", "endTimestamp": str(end_ms),
                "_UNIQUE_KEY_QUERY": "true"}), 10)
            if reply.code != ResponseCode.SUCCESS:
                return None
            [message] = [m for m in decode_messages(reply.body) if m.properties.get("UNIQ_KEY") == uniq]
            return message

        for uniq in ids:
            message = await eventually(lambda u=uniq: by_uniq_key(u), 10, f"message {uniq} to be indexed")
            viewed = await pool.request(broker, RemotingCommand.request(
                RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(message.commit_log_offset)}), 10)
            assert viewed.code == ResponseCode.SUCCESS, viewed.remark
            [same] = decode_messages(viewed.body)
            assert same.msg_id == message.msg_id and same.body == message.body
            assert same.properties["UNIQ_KEY"] == uniq
            found[uniq] = same
    finally:
        await pool.close()
    return found


def consume_until(namesrv: str, home: Path, topic: str, group: str, want: list[str]) -> list[dict[str, Any]]:
    """Run a clustering PushConsumer on "TagA || TagB" until it has *want*'s count of deliveries, shut it
    down and return every delivery it reported, late ones included, once the broker holds committed offsets
    past each of them (the client commits when it shuts down)."""
    consumer = Runner(["consume", namesrv, topic, group, "TagA || TagB"], home)
    try:
        consumer.collect_until(lambda seen: len(messages(seen)) >= len(want), 60, f"{len(want)} pushed messages")
        consumer.stop()
    finally:
        consumer.kill()
    got = messages(consumer.seen)
    consumed: dict[int, int] = {}
    for m in got:
        consumed[m["queue_id"]] = max(consumed.get(m["queue_id"], 0), m["queue_offset"] + 1)

    async def committed_past_deliveries() -> tuple[dict[int, int], dict[int, int]] | None:
        _, committed = await queue_offsets(namesrv, topic, group)
        return (consumed, committed) if all(committed[q] >= o for q, o in consumed.items()) else None

    bounded(eventually(committed_past_deliveries, 30, "the consumer's offsets to be committed"))
    return got


def test_cpp_client_against_rocketstore_serve_every_send_mode_and_a_resuming_tag_consumer(tmp_path: Path) -> None:
    """The wheel's SendResult carries only the UNIQ_KEY (msg_id) and the queue offset, no offset message id:
    ids are resolved with QUERY_MESSAGE + _UNIQUE_KEY_QUERY, then VIEW_MESSAGE_BY_ID on the found offset."""
    topic, group = "CppServeTopic", "cpp-serve-consumer"
    conf = write_broker_conf(tmp_path / "broker.conf")
    with ServeProcess(tmp_path / "store", conf) as serve:
        ns = serve.namesrv_addr

        # send_sync: 300 messages with tags and keys, every id resolvable on the broker
        synced = produce(ns, tmp_path, topic, 300, 0)
        assert [s["status"] for s in synced] == ["OK"] * 300
        ids = [s["msg_id"] for s in synced]
        assert len(set(ids)) == 300 and all(len(i) == 32 for i in ids)
        resolved = bounded(resolve_ids(serve.broker_addr, topic, ids))
        for s in synced:
            m = resolved[s["msg_id"]]
            assert m.body.decode() == body(s["i"]) and m.keys == f"key-{s['i']}" and m.tags == TAGS[s["i"] % 3]
            assert m.queue_offset == s["offset"], "the send result's offset is the queue offset"
            assert str(m.store_host) == serve.broker_addr

        # send_oneway: no answer, still stored
        oneway = produce(ns, tmp_path, topic, 30, 300, "--mode", "oneway")
        assert [s["status"] for s in oneway] == ["ONEWAY"] * 30
        # send_orderly(msg, i): the wheel's hashing selector puts message i on queue i % 4, in send order
        ordered = produce(ns, tmp_path, topic, 40, 400, "--mode", "orderly")
        assert [s["status"] for s in ordered] == ["OK"] * 40
        # send_batch: three batches of four
        batched = produce(ns, tmp_path, topic, 12, 500, "--batch", "4")
        assert [s["status"] for s in batched] == ["OK"] * 3

        sent = [*range(330), *range(400, 440), *range(500, 512)]
        bounded(wait_stored(ns, topic, len(sent)))
        stored = bounded(pull_everything(ns, topic))
        assert sorted(index_of(m.body.decode()) for m in stored) == sorted(sent), "each message stored once"
        for q in range(4):
            orderly = [m for m in stored if 400 <= index_of(m.body.decode()) < 440 and m.queue_id == q]
            assert [index_of(m.body.decode()) for m in orderly] == list(range(400 + q, 440, 4))
            offsets = [m.queue_offset for m in orderly]
            assert offsets == sorted(offsets)

        # a clustering PushConsumer on "TagA || TagB" gets exactly the TagA and TagB messages, once each
        want = sorted(body(i) for i in sent if TAGS[i % 3] != "TagC")
        got = consume_until(ns, tmp_path, topic, group, want)
        assert sorted(m["body"] for m in got) == want
        assert {m["tags"] for m in got} == {"TagA", "TagB"}
        # committed offsets lie past every delivery (consume_until waited for that) and within the queues; a
        # tail of TagC messages the client filtered out may stay uncommitted (the C++ client moves its
        # offset over such a tail only on its next 5 s persist)
        first_max, first_committed = bounded(queue_offsets(ns, topic, group))
        assert all(0 < first_committed[q] <= first_max[q] for q in first_max) and sum(first_max.values()) == len(sent)

        # stopped, more messages arrive; started again it resumes from the committed offsets: only the new ones
        later = produce(ns, tmp_path, topic, 30, 600)
        assert [s["status"] for s in later] == ["OK"] * 30
        bounded(wait_stored(ns, topic, len(sent) + 30))
        want_later = sorted(body(i) for i in range(600, 630) if TAGS[i % 3] != "TagC")
        got_later = consume_until(ns, tmp_path, topic, group, want_later)
        assert sorted(m["body"] for m in got_later) == want_later, "nothing consumed before comes back"
        second_max, second_committed = bounded(queue_offsets(ns, topic, group))
        assert all(first_committed[q] <= second_committed[q] <= second_max[q] for q in second_max)
        assert serve.terminate() == 0
