"""The blocking clients' life cycle as code without an event loop meets it: a shutdown while another thread's
call is under way, a start after shutdown, a shutdown from a signal handler inside the main thread's own."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from local_cluster import LocalCluster

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    BlockingTransactionProducer,
    ConsumeFromWhere,
    ConsumerNotRunningError,
    ConsumeStatus,
    LocalTransactionState,
)
from rocketstore.client.errors import ClientError

#: the blocking clients' loop threads make their loops with new_event_loop: both kinds
pytestmark = pytest.mark.both_loops

FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def wait_for(condition: object, bound_s: float = 30.0) -> None:
    deadline = time.monotonic() + bound_s
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


def test_a_shutdown_while_a_transaction_runs_fails_that_send_at_once(cluster: LocalCluster) -> None:
    # the loop stopped with the send pending on it: its caller waited call_timeout_s + timeout_s (63 s) for a
    # TimeoutError, with "Task was destroyed but it is pending!" and a callback traceback on the closed loop
    cluster.create_topic("HuntTxShutdown", 1)
    running, release = threading.Event(), threading.Event()
    outcome: list[BaseException | str] = []

    def execute(message: object, arg: object) -> LocalTransactionState:
        running.set()
        release.wait(120)
        return LocalTransactionState.COMMIT_MESSAGE

    producer = BlockingTransactionProducer(cluster.namesrv_addr, "hunt-tx-shutdown",
                                           lambda message: LocalTransactionState.ROLLBACK_MESSAGE)
    producer.start()

    def send() -> None:
        try:
            producer.send_in_transaction("HuntTxShutdown", b"half", execute)
            outcome.append("returned")
        except BaseException as exc:
            outcome.append(exc)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        assert running.wait(30)
        producer.shutdown()
        wait_for(lambda: outcome)
    finally:
        release.set()
    assert len(outcome) == 1 and isinstance(outcome[0], ClientError), outcome
    assert "SHUTDOWN_ALREADY" in str(outcome[0]) and "under way" in str(outcome[0])
    sender.join(30)


@pytest.mark.parametrize("kind", ["push", "lite"])
def test_a_start_after_shutdown_raises_the_not_running_error(cluster: LocalCluster, kind: str) -> None:
    # the failed start's clean-up scheduled a stop on the closed loop: RuntimeError "Event loop is closed"
    cluster.create_topic("HuntStartAgain", 1)
    consumer: BlockingPushConsumer | BlockingLitePullConsumer
    if kind == "push":
        consumer = BlockingPushConsumer(cluster.namesrv_addr, "hunt-start-again", {"HuntStartAgain": "*"},
                                        lambda messages: ConsumeStatus.CONSUME_SUCCESS, **FAST)
        consumer.start()
        consumer.shutdown()
    else:
        consumer = BlockingLitePullConsumer(cluster.namesrv_addr, "hunt-start-again", long_poll_ms=1000)
        consumer.start()
        consumer.close()
    with pytest.raises(ConsumerNotRunningError):
        consumer.start()
    with pytest.raises(ConsumerNotRunningError):
        consumer.start()  # and again


#: a child process: argv = name server, topic; prints "key=value" lines.  Its main thread shuts a consumer
#: down while a handler still runs; SIGTERM comes meanwhile and its handler shuts the consumer down too
SIGNAL_CHILD = r'''
import asyncio, os, signal, sys, threading, time
from rocketstore.client import BlockingPushConsumer, ConsumeFromWhere, ConsumeStatus, Producer
namesrv, topic = sys.argv[1:3]

async def send():
    async with Producer(namesrv, "signal-producer") as producer:
        await producer.send(topic, b"m")
asyncio.run(send())

running, release, in_signal_handler = threading.Event(), threading.Event(), threading.Event()

def handle(messages):
    running.set()
    release.wait(60)
    return ConsumeStatus.CONSUME_SUCCESS

consumer = BlockingPushConsumer(namesrv, "signal-group", {topic: "*"}, handle, call_timeout_s=60.0,
                                heartbeat_interval_s=0.5, rebalance_interval_s=0.5, persist_interval_s=0.2,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)

def on_sigterm(signum, frame):
    in_signal_handler.set()
    consumer.shutdown()
    print("signal_handler=returned", flush=True)

signal.signal(signal.SIGTERM, on_sigterm)

def meanwhile():
    running.wait(60)
    for _ in range(600):  # until the main thread's shutdown is under way
        if consumer._stopping is not None:
            break
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)
    in_signal_handler.wait(60)
    release.set()

consumer.start()
threading.Thread(target=meanwhile, daemon=True).start()
running.wait(60)
consumer.shutdown()
print(f"main=returned alive={consumer._thread.is_alive()}", flush=True)
'''


def test_a_signal_handlers_shutdown_inside_the_main_threads_shutdown_returns(cluster: LocalCluster) -> None:
    # the handler waited for the shutdown lock its own (interrupted) thread held: the process hung for good
    cluster.create_topic("HuntSignalShutdown", 1)
    proc = subprocess.run([sys.executable, "-c", SIGNAL_CHILD, cluster.namesrv_addr, "HuntSignalShutdown"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["signal_handler=returned", "main=returned alive=False"], proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
