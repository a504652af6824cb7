"""The producer compresses a body of 4 KiB and more as 4.9.3's DefaultMQProducer does
(compressMsgBodyOverHowmuch 4096, zlib at level 5, sysFlag bit 0): send, send_orderly and send_oneway
do, a batch does not.  The store then holds what a Java producer's send leaves there, and every consumer
(ours, Java's, C++'s) inflates it."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, pull_all, wait_stored

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.message.record import SysFlag
from rocketstore.remoting.transport import run

TOPIC = "Hunt14ZipTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 1)
        yield c


def body(size: int, seed: str) -> bytes:
    return (seed.encode() * size)[:size]


def test_bodies_from_4_kib_on_are_stored_compressed_and_consumed_whole(cluster: LocalCluster) -> None:
    sent = {"small": body(4095, "s"), "edge": body(4096, "e"), "large": body(20_000, "l"),
            "orderly": body(10_000, "o"), "oneway": body(10_000, "w")}

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt14-zip-pg") as producer:
            for name in ("small", "edge", "large"):
                await producer.send(TOPIC, sent[name], keys=name)
            await producer.send_orderly(TOPIC, sent["orderly"], "key", keys="orderly")
            await producer.send_oneway(TOPIC, sent["oneway"], keys="oneway")
            await producer.send_batch(TOPIC, [OutgoingMessage(body(5000, "b"), keys="batch")])

    run(go())
    stored = {m.properties["KEYS"]: m for m in wait_stored(cluster, TOPIC, 6, "six messages", queues=1)}
    for name, original in sent.items():
        record = stored[name]
        if name == "small":
            assert not record.sys_flag & SysFlag.COMPRESSED and record.body == original
        else:
            assert record.sys_flag & SysFlag.COMPRESSED, name
            assert record.body == zlib.compress(original, 5), name  # java.util.zip.Deflater(5)'s bytes
    assert not stored["batch"].sys_flag & SysFlag.COMPRESSED and stored["batch"].body == body(5000, "b")

    consumed = {m.properties["KEYS"]: m.body for m in pull_all(cluster.namesrv_addr, TOPIC)}
    assert consumed == {**sent, "batch": body(5000, "b")}


def test_the_threshold_and_level_are_settings(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt14-zip-pg", compress_msg_body_over_howmuch=100,
                            compress_level=9) as producer:
            await producer.send(TOPIC, body(100, "x"), keys="at-100")
            await producer.send(TOPIC, body(99, "y"), keys="at-99")

    run(go())
    stored = {m.properties["KEYS"]: m for m in wait_stored(cluster, TOPIC, 2, "two messages", queues=1)}
    assert stored["at-100"].body == zlib.compress(body(100, "x"), 9)
    assert stored["at-99"].body == body(99, "y") and not stored["at-99"].sys_flag & SysFlag.COMPRESSED


def test_a_large_transactional_message_is_compressed_and_committed_whole(cluster: LocalCluster) -> None:
    from rocketstore.client import LocalTransactionState, TransactionProducer

    original = body(9000, "t")

    async def go() -> None:
        async with TransactionProducer(cluster.namesrv_addr, "hunt14-zip-tx",
                                       lambda message: LocalTransactionState.COMMIT_MESSAGE) as producer:
            await producer.send_in_transaction(TOPIC, original, lambda message, arg: LocalTransactionState.COMMIT_MESSAGE,
                                               keys="tx")

    run(go())
    [committed] = wait_stored(cluster, TOPIC, 1, "the committed message", queues=1)
    assert committed.sys_flag & SysFlag.COMPRESSED and zlib.decompress(committed.body) == original
    [half] = wait_stored(cluster, "RMQ_SYS_TRANS_HALF_TOPIC", 1, "the half message", queues=1)
    assert half.sys_flag & SysFlag.COMPRESSED and half.body == committed.body
    assert [m.body for m in pull_all(cluster.namesrv_addr, TOPIC)] == [original]


def test_the_cpp_client_consumes_a_body_our_producer_compressed(cluster: LocalCluster, tmp_path: Path) -> None:
    from cpp_driver import SKIP_REASON, Runner, messages

    if SKIP_REASON is not None:
        pytest.skip(SKIP_REASON)
    text = body(12_000, "compressed for C++ ").decode()

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt14-zip-pg") as producer:
            await producer.send(TOPIC, text.encode(), tags="Z")

    run(go())
    [record] = wait_stored(cluster, TOPIC, 1, "the message", queues=1)
    assert record.sys_flag & SysFlag.COMPRESSED
    consumer = Runner(["consume", cluster.namesrv_addr, TOPIC, "hunt14-zip-cpp-group"], tmp_path)
    try:
        consumer.collect_until(lambda seen: len(messages(seen)) >= 1, 30, "the pushed message")
        consumer.stop()
    finally:
        consumer.kill()
    assert [m["body"] for m in messages(consumer.seen)] == [text]
