"""The blocking producers used as code without an event loop uses them (as Java's producer.send(msg) from any
thread): many threads through one producer, errors raised as the asyncio producer raises them, Ctrl-C in a
blocked send, a forked child, exit without shutdown; and the asyncio Producer used from another event loop
refused at once (not retried into a SendFailedError)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.client import (
    BlockingProducer,
    BlockingPushConsumer,
    BlockingRequestProducer,
    BlockingTransactionProducer,
    ClientError,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    OutgoingMessage,
    Producer,
    SendFailedError,
)
from rocketstore.client.errors import MessageIllegalError
from rocketstore.errors import LoopBoundError, RemotingError

FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def test_sixteen_threads_send_through_one_producer_and_every_message_is_stored_once(cluster: LocalCluster) -> None:
    topic, threads_n, per_thread = "HuntBpMany", 16, 25
    cluster.create_topic(topic, 4)
    results: dict[bytes, object] = {}
    failures: list[BaseException] = []
    lock = threading.Lock()
    with BlockingProducer(cluster.namesrv_addr, "hunt-bp-many", timeout_s=10.0) as producer:
        start = threading.Barrier(threads_n)

        def sender(t: int) -> None:
            try:
                start.wait(30)
                for i in range(per_thread):
                    body = b"t%d-m%d" % (t, i)
                    if i % 5 == 4:  # an orderly send now and then: same key, same queue
                        result = producer.send_orderly(topic, body, f"key-{t}")
                    else:
                        result = producer.send(topic, body, tags=f"T{t}", keys=f"k{t}-{i}")
                    with lock:
                        results[body] = result
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                failures.append(exc)

        workers = [threading.Thread(target=sender, args=(t,)) for t in range(threads_n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        batch = producer.send_batch(topic, [OutgoingMessage(b"batch-0"), OutgoingMessage(b"batch-1")])
    assert failures == []
    total = threads_n * per_thread
    assert len(results) == total and {r.status for r in results.values()} == {"SEND_OK"}
    assert len({r.msg_id for r in results.values()}) == total  # every result is its own message's
    positions = Counter((r.message_queue.queue_id, r.queue_offset) for r in results.values())
    assert max(positions.values()) == 1
    for t in range(threads_n):  # an orderly key kept to one queue
        assert len({results[b"t%d-m%d" % (t, i)].message_queue.queue_id for i in range(4, per_thread, 5)}) == 1
    assert batch.status == "SEND_OK" and len(batch.msg_id.split(",")) == 2
    stored = wait_stored(cluster, topic, total + 2, "every message", queues=4)
    assert Counter(m.body for m in stored) == Counter([*results, b"batch-0", b"batch-1"])
    by_body = {m.body: m for m in stored}
    for body, result in results.items():  # the result names where its own message was stored
        assert (by_body[body].queue_id, by_body[body].queue_offset) == (
            result.message_queue.queue_id, result.queue_offset)


def test_errors_are_raised_as_the_asyncio_producer_raises_them(cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.create_topic("HuntBpErrors", 1)
    other = cluster.start_broker(tmp_path / "store-b", "broker-gone")
    cluster.create_topic_on("HuntBpGone", [other.address])
    producer = BlockingProducer(cluster.namesrv_addr, "hunt-bp-errors", timeout_s=5.0)
    producer.start()
    try:
        with pytest.raises(MessageIllegalError):
            producer.send("HuntBpErrors", b"")
        with pytest.raises(MessageIllegalError):
            producer.send("bad topic name", b"x")
        assert producer.send("HuntBpGone", b"while up").status == "SEND_OK"
        cluster.run(other.close())
        with pytest.raises(SendFailedError) as failed:  # every try failed on its connection: as is
            producer.send("HuntBpGone", b"after it went")
        assert isinstance(failed.value, RemotingError) and failed.value.times == 3
        with pytest.raises(ValueError):
            producer.send_batch("HuntBpErrors", [])
        assert producer.send("HuntBpErrors", b"still usable").status == "SEND_OK"
    finally:
        producer.shutdown()
    producer.shutdown()  # again: nothing left to do
    with pytest.raises(ClientError):
        producer.send("HuntBpErrors", b"after shutdown")
    assert not producer._thread.is_alive()


def test_a_producer_that_cannot_start_leaves_no_loop_thread() -> None:
    with pytest.raises(ClientError):
        with BlockingProducer("127.0.0.1:1", "bad group name"):
            pass
    producer = BlockingTransactionProducer("127.0.0.1:1", "DEFAULT_PRODUCER", lambda message: None)
    with pytest.raises(ClientError):
        producer.start()
    assert not producer._thread.is_alive()


def test_transactions_commit_with_execute_off_the_loop_thread(cluster: LocalCluster) -> None:
    topic = "HuntBpTx"
    cluster.create_topic(topic, 1)
    ran_on: list[str] = []

    def execute(message: object, arg: object) -> LocalTransactionState:
        ran_on.append(threading.current_thread().name)
        return LocalTransactionState.COMMIT_MESSAGE if arg == "commit" else LocalTransactionState.ROLLBACK_MESSAGE

    with BlockingTransactionProducer(cluster.namesrv_addr, "hunt-bp-tx",
                                     lambda message: LocalTransactionState.ROLLBACK_MESSAGE) as producer:
        committed = producer.send_in_transaction(topic, b"kept", execute, "commit")
        rolled = producer.send_in_transaction(topic, b"dropped", execute, "rollback")
        with pytest.raises(TypeError):
            producer.send_in_transaction(topic, b"x", None)  # type: ignore[arg-type]
    assert committed.local_transaction_state == LocalTransactionState.COMMIT_MESSAGE
    assert rolled.local_transaction_state == LocalTransactionState.ROLLBACK_MESSAGE
    assert len(ran_on) == 2 and not any(name.startswith("transaction-producer-") for name in ran_on)
    assert [m.body for m in wait_stored(cluster, topic, 1, "the committed message", queues=1)] == [b"kept"]


def test_a_request_is_answered_by_a_blocking_replier_in_a_blocking_consumer(cluster: LocalCluster) -> None:
    topic = "HuntBpRpc"
    cluster.create_topic(topic, 1)
    with BlockingProducer(cluster.namesrv_addr, "hunt-bp-replier") as replier:
        def handle(messages: list) -> ConsumeStatus:  # type: ignore[type-arg]
            for m in messages:
                replier.send_reply(m, b"price of " + m.body)
            return ConsumeStatus.CONSUME_SUCCESS

        with BlockingPushConsumer(cluster.namesrv_addr, "hunt-bp-server", {topic: "*"}, handle, **FAST), \
                BlockingRequestProducer(cluster.namesrv_addr, "hunt-bp-client") as requester:
            reply = requester.request(topic, b"sku-7", timeout_s=20.0)
    assert reply.body == b"price of sku-7"


def test_an_asyncio_producer_used_from_another_loop_is_refused_at_once_not_retried(cluster: LocalCluster) -> None:
    # retried as a connection failure, this programming error came back as SendFailedError "Send [3] times"
    topic = "HuntBpLoop"
    cluster.create_topic(topic, 2)
    producer = Producer(cluster.namesrv_addr, "hunt-bp-loop", timeout_s=5.0)
    assert cluster.run(producer.send(topic, b"on its own loop")).status == "SEND_OK"
    errors: list[BaseException] = []

    def elsewhere() -> None:
        async def go() -> None:
            for sending in (producer.send(topic, b"elsewhere"), producer.send_oneway(topic, b"elsewhere")):
                try:
                    await sending
                except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                    errors.append(exc)

        asyncio.run(asyncio.wait_for(go(), 30))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(60)
    cluster.run(producer.close())
    assert len(errors) == 2
    for error in errors:
        assert isinstance(error, LoopBoundError) and isinstance(error, RuntimeError), repr(error)
        assert not isinstance(error, SendFailedError), error
        assert "another event loop" in str(error)
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, topic, 2)] == [b"on its own loop"]


#: a child process: argv = mode, name server, topic; prints "key=value" lines
CHILD = r'''
import multiprocessing, os, signal, sys, threading
from rocketstore.client import BlockingProducer
mode, namesrv, topic = sys.argv[1:4]

def in_child(producer, results):
    try:
        producer.send(topic, b"from the forked child")
        results.put("returned")
    except BaseException as exc:
        results.put(f"{type(exc).__name__}:{'fork' in str(exc)}")

producer = BlockingProducer(namesrv, "hunt-bp-child-" + mode, timeout_s=30.0)
producer.start()
print(f"first={producer.send(topic, b'first').status}", flush=True)
if mode == "sigint":
    sys.stdin.readline()   # the broker stops answering: the next send blocks
    try:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        producer.send(topic, b"interrupted")
        print("interrupted=no", flush=True)
    except KeyboardInterrupt:
        print("interrupted=yes", flush=True)
    sys.stdin.readline()   # the broker answers again
    print(f"after={producer.send(topic, b'after').status}", flush=True)
    producer.shutdown()
elif mode == "fork":
    ctx = multiprocessing.get_context("fork")
    results = ctx.SimpleQueue()
    child = ctx.Process(target=in_child, args=(producer, results))
    child.start()
    child.join(60)
    print(f"child={results.get() if not results.empty() else 'nothing'}", flush=True)
    print(f"after={producer.send(topic, b'after').status}", flush=True)
    producer.shutdown()
elif mode == "exit":
    producer.send_oneway(topic, b"oneway")
    # no shutdown: the interpreter exits with the producer running
'''


def child_process(mode: str, cluster: LocalCluster, topic: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, mode, cluster.namesrv_addr, topic], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def seen_of(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def test_ctrl_c_in_a_blocked_send_raises_keyboard_interrupt_and_the_producer_stays_usable(
        cluster: LocalCluster) -> None:
    topic = "HuntBpSigint"
    cluster.create_topic(topic, 1)
    proc = child_process("sigint", cluster, topic)
    release = threading.Event()
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "first=SEND_OK"
        cluster.loop.call_soon_threadsafe(release.wait, 60)  # the broker's loop answers nothing meanwhile
        proc.stdin.write("\n")
        proc.stdin.flush()
        interrupted = proc.stdout.readline().strip()
        release.set()
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert interrupted == "interrupted=yes", err
    assert seen_of(out) == {"after": "SEND_OK"}, err
    assert proc.returncode == 0, err


def test_a_forked_child_is_refused_clearly_and_the_parent_goes_on(cluster: LocalCluster) -> None:
    topic = "HuntBpFork"
    cluster.create_topic(topic, 1)
    proc = child_process("fork", cluster, topic)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert seen_of(out) == {"first": "SEND_OK", "child": "RuntimeError:True", "after": "SEND_OK"}, err
    assert sorted(m.body for m in wait_stored(cluster, topic, 2, "the parent's messages", queues=1)) == [
        b"after", b"first"]


def test_exit_without_shutdown_neither_hangs_nor_prints_tracebacks(cluster: LocalCluster) -> None:
    topic = "HuntBpExit"
    cluster.create_topic(topic, 1)
    proc = child_process("exit", cluster, topic)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert seen_of(out) == {"first": "SEND_OK"}
    assert "Traceback" not in err and "destroyed" not in err and "Exception" not in err, err
