"""The blocking consumers used as code without an event loop uses them: from a handler, from a forked
child, with Ctrl-C in a poll, from the consumer's own loop thread, after close, at exit without close."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from local_cluster import LocalCluster, send_bodies

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    ConsumeFromWhere,
    ConsumerNotRunningError,
    ConsumeStatus,
)

#: the blocking clients' loop threads make their loops with new_event_loop: both kinds
pytestmark = pytest.mark.both_loops

FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
LITE = {**FAST, "long_poll_ms": 1000, "auto_commit_interval_s": 1.0}

#: a child process: argv = mode, name server, topic; prints what it saw as "key=value" lines
CHILD = r'''
import asyncio, multiprocessing, os, signal, sys, threading
from rocketstore.client import BlockingLitePullConsumer, ConsumeFromWhere, Producer
mode, namesrv, topic = sys.argv[1:4]
settings = dict(heartbeat_interval_s=0.5, rebalance_interval_s=0.5, route_refresh_interval_s=0.5,
                long_poll_ms=1000, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)

def send(count):
    async def go():
        async with Producer(namesrv, "child-producer") as producer:
            for i in range(count):
                await producer.send(topic, f"m{i}".encode())
    asyncio.run(go())

def drain(consumer, count):
    got = set()
    for _ in range(200):
        got.update(m.body for m in consumer.poll(0.2))
        if len(got) >= count:
            break
    return len(got)

def in_child(consumer, results):
    try:
        consumer.poll(1.0)
        results.put("returned")
    except BaseException as exc:
        results.put(type(exc).__name__)

consumer = BlockingLitePullConsumer(namesrv, "child-group-" + mode, call_timeout_s=3.0, **settings)
consumer.start()
consumer.subscribe(topic)
if mode == "sigint":
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        consumer.poll(30.0)   # nothing there yet: waits, and Ctrl-C comes
        print("interrupted=no")
    except KeyboardInterrupt:
        print("interrupted=yes")
    send(5)
    print(f"polled={drain(consumer, 5)}")
    consumer.close()
elif mode == "fork":
    results = multiprocessing.get_context("fork").SimpleQueue()
    child = multiprocessing.get_context("fork").Process(target=in_child, args=(consumer, results))
    child.start()
    child.join(60)
    print(f"child={results.get() if not results.empty() else 'nothing'}")
    send(5)
    print(f"polled={drain(consumer, 5)}")
    consumer.close()
elif mode == "exit":
    send(3)
    print(f"polled={drain(consumer, 3)}", flush=True)
    # no close: the interpreter exits with the consumer running
'''


def run_child(mode: str, cluster: LocalCluster, topic: str) -> tuple[dict[str, str], str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, cluster.namesrv_addr, topic],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    return seen, proc.stderr


def test_ctrl_c_in_a_poll_cancels_it_and_loses_no_message(cluster: LocalCluster) -> None:
    # left running, the interrupted poll took the first batch sent afterwards: never returned, yet consumed
    cluster.create_topic("HuntSigint", 1)
    seen, _ = run_child("sigint", cluster, "HuntSigint")
    assert seen == {"interrupted": "yes", "polled": "5"}


def test_a_forked_child_gets_a_clear_error_and_the_parent_goes_on(cluster: LocalCluster) -> None:
    cluster.create_topic("HuntFork", 1)
    seen, _ = run_child("fork", cluster, "HuntFork")
    assert seen == {"child": "RuntimeError", "polled": "5"}


def test_exit_without_close_neither_hangs_nor_prints_tracebacks(cluster: LocalCluster) -> None:
    cluster.create_topic("HuntExit", 1)
    seen, stderr = run_child("exit", cluster, "HuntExit")
    assert seen == {"polled": "3"}
    assert "Traceback" not in stderr and "destroyed" not in stderr, stderr


def test_a_handler_that_shuts_its_consumer_down_does_not_wait_for_itself(cluster: LocalCluster) -> None:
    cluster.create_topic("HuntShutdownInHandler", 1)
    send_bodies(cluster, "HuntShutdownInHandler", ["a", "b", "c"])
    outcome: list[str] = []
    ready = threading.Event()
    holder: list[BlockingPushConsumer] = []

    first = threading.Lock()

    def handle(messages: object) -> ConsumeStatus:
        ready.wait(30)
        if first.acquire(blocking=False):  # one handler (of those running at once) shuts down
            try:
                holder[0].shutdown()
                outcome.append("returned")
            except BaseException as exc:
                outcome.append(type(exc).__name__)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = BlockingPushConsumer(cluster.namesrv_addr, "hunt-shutdown-in-handler",
                                    {"HuntShutdownInHandler": "*"}, handle, call_timeout_s=5.0, **FAST)
    holder.append(consumer)
    consumer.start()
    ready.set()
    deadline = time.monotonic() + 30
    while consumer._thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert outcome == ["returned"]
    assert not consumer._thread.is_alive()  # the shutdown the handler asked for finished
    consumer.shutdown()  # again, from here: nothing left to do
    with pytest.raises(ConsumerNotRunningError):
        consumer.assignment()


def test_calls_from_the_consumers_own_loop_thread_fail_at_once_and_calls_after_close_say_closed(
        cluster: LocalCluster) -> None:
    cluster.create_topic("HuntLoopThread", 2)
    errors: list[str] = []
    with BlockingLitePullConsumer(cluster.namesrv_addr, "hunt-loop-thread", call_timeout_s=3.0, **LITE) as consumer:
        consumer.subscribe("HuntLoopThread")

        def listener(topic: str, queues: object) -> None:  # runs on the loop thread
            try:
                consumer.assignment()
            except BaseException as exc:
                errors.append(type(exc).__name__)

        consumer.register_topic_message_queue_change_listener("HuntLoopThread", listener)
        consumer.check_topic_queues()
        cluster.create_topic("HuntLoopThread", 4)
        consumer.check_topic_queues()
    assert errors == ["RuntimeError"]
    with pytest.raises(ConsumerNotRunningError):
        consumer.poll(0)
    consumer.close()  # a second close is a no-op


def test_shutdowns_from_many_threads_at_once_all_return_with_the_consumer_shut_down(cluster: LocalCluster) -> None:
    cluster.create_topic("HuntManyShutdowns", 1)
    consumer = BlockingPushConsumer(cluster.namesrv_addr, "hunt-many-shutdowns", {"HuntManyShutdowns": "*"},
                                    lambda messages: ConsumeStatus.CONSUME_SUCCESS, **FAST)
    consumer.start()
    failures: list[BaseException] = []

    def stop() -> None:
        try:
            consumer.shutdown()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=stop) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    assert consumer.consumer.stopping and not consumer._thread.is_alive()


def test_a_shutdown_that_times_out_on_a_long_handler_still_finishes_and_commits(cluster: LocalCluster) -> None:
    # stopping the loop under the timed-out shutdown left the offsets uncommitted and the connections open
    topic, group = "HuntLongHandler", "hunt-long-handler"
    cluster.create_topic(topic, 1)
    send_bodies(cluster, topic, ["a"])
    running, release = threading.Event(), threading.Event()

    def handle(messages: object) -> ConsumeStatus:
        running.set()
        release.wait(60)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = BlockingPushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, call_timeout_s=1.0, **FAST)
    consumer.start()
    assert running.wait(30)
    with pytest.raises(TimeoutError):
        consumer.shutdown()  # the handler is still running
    release.set()
    consumer.shutdown()  # waits for the shutdown under way
    assert not consumer._thread.is_alive()
    assert cluster.call(lambda: cluster.broker.offsets.offsets(group, topic)) == {0: 1}
