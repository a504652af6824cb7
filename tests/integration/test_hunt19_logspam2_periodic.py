"""What a client's periodic jobs log while its broker is down: a push consumer's heartbeats, rebalances (of
the topic and of its retry topic) and offset commits, a producer's heartbeats and route refreshes fail at
every round for as long as the broker is away.  Each job's run of failures gives one line at its level (the
first; then every 1000th), the repeats are debug lines, and the round that works again after the broker is
back says so at INFO.  Real name server, broker, store and clients, the intervals shortened; counts of
records over a bounded number of rounds, deadlines only."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster, eventually, run_within
from serve_process import free_port

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer
from rocketstore.repeats import EVERY, FailureRun, FailureRuns
from rocketstore.store.config import StoreConfig

TOPIC = "Hunt19Periodic"
GROUP = "hunt19-periodic-group"
CONSUMER_LOG = "rocketstore.client.group_consumer"
PRODUCER_LOG = "rocketstore.client.producer"
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.05, "rebalance_interval_s": 0.05, "persist_interval_s": 0.05,
                        "route_refresh_interval_s": 0.05, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.05,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
ROUNDS = 15  # failed rounds of each job looked at


def said(caplog: pytest.LogCaptureFixture, logger: str, text: str, level: int | None = None) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.getMessage().startswith(text)
            and (level is None or r.levelno == level)]


def test_periodic_jobs_of_clients_of_a_down_broker_log_one_line_each_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    # the cluster's broker-a serves nothing here (no TBW102 either: the producer's route refresh of TOPIC
    # fails while broker-b is away, rather than falling back to the auto-create topic's route)
    with LocalCluster(tmp_path / "unused", auto_create_topic_enable=False) as cluster:
        config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=port,
                              listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=0,
                              auto_create_topic_enable=False)

        def start_broker() -> Broker:
            broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE))
            cluster.run(broker.start())
            return broker

        broker = start_broker()
        cluster.create_topic_on(TOPIC, [broker.address])
        addr = broker.address
        consumed: list[bytes] = []
        handling: list[bytes] = []
        gate = threading.Event()  # the first message is handled once the broker is down

        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            handling.extend(m.body for m in messages)
            gate.wait(60)
            consumed.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS

        # what each job's failures start with, on whose log
        jobs = {(CONSUMER_LOG, f"heartbeat to {addr}"), (CONSUMER_LOG, f"rebalance of {TOPIC}"),
                (CONSUMER_LOG, f"rebalance of %RETRY%{GROUP}"), (CONSUMER_LOG, "persist_offsets"),
                (PRODUCER_LOG, f"heartbeat to {addr}"), (PRODUCER_LOG, f"route of {TOPIC}")}

        def failed_rounds(logger: str, job: str) -> int:
            return len(said(caplog, logger, f"{job} failed: "))

        async def go() -> None:
            nonlocal broker
            async with Producer(cluster.namesrv_addr, "hunt19-periodic-producer",
                                heartbeat_interval_s=0.05, route_refresh_interval_s=0.05) as producer:
                await producer.send(TOPIC, b"m0")
                async with PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle, **FAST):
                    await eventually(lambda: handling, 30, "the message handed to the handler")
                    with caplog.at_level(logging.DEBUG, logger="rocketstore.client"):
                        # a message consumed after the broker went: its offset is never committed meanwhile
                        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(broker.close(), cluster.loop))
                        gate.set()
                        await eventually(lambda: consumed, 30, "the message consumed")
                        await eventually(lambda: all(failed_rounds(*job) >= ROUNDS for job in jobs), 60,
                                         f"{ROUNDS} failed rounds of each periodic job")
                        broker = await asyncio.to_thread(start_broker)  # back, on the same port
                        await eventually(lambda: said(caplog, CONSUMER_LOG, f"heartbeat to {addr} works again")
                                         and said(caplog, PRODUCER_LOG, f"heartbeat to {addr} works again"), 60,
                                         "the heartbeats to the broker back")
                        await producer.send(TOPIC, b"m1")
                        await eventually(lambda: len(consumed) >= 2, 30, "a message sent after the broker is back")

        try:
            run_within(go, 120)
        finally:
            cluster.run(broker.close())
    for logger, job in sorted(jobs):
        level = logging.WARNING if logger == CONSUMER_LOG else logging.INFO  # a plain producer's: INFO
        first = said(caplog, logger, f"{job} failed: ", level)
        assert len(first) == 1, (job, first)
        assert first[0].endswith("(1 in a row)"), first
        repeats = said(caplog, logger, f"{job} failed: ", logging.DEBUG)
        assert len(repeats) >= ROUNDS - 1, (job, len(repeats))
        assert all(m.endswith(" in a row)") and "(1 in a row)" not in m for m in repeats), repeats
    for logger in (CONSUMER_LOG, PRODUCER_LOG):
        back = said(caplog, logger, f"heartbeat to {addr} works again after ", logging.INFO)
        assert len(back) == 1, back
    # the consumer's route refresh keeps the route known meanwhile: said once, and once when it is back
    stale = said(caplog, "rocketstore.client.route", f"the name servers give no route for {TOPIC},")
    assert len(stale) == 1, stale
    back = said(caplog, "rocketstore.client.route", f"the name servers give a route for {TOPIC} again",
                logging.INFO)
    assert len(back) == 1, back
    assert not [r for r in caplog.records if r.name.startswith("rocketstore.client") and r.exc_info]


def test_a_run_logs_its_first_and_every_1000th_failure_then_its_end(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("rocketstore.hunt19.repeats")
    runs = FailureRuns()
    with caplog.at_level(logging.DEBUG, logger=log.name):
        for _ in range(2 * EVERY + 1):
            runs.failed(log, "heartbeat to 127.0.0.1:1", OSError("refused"))
        runs.failed(log, "rebalance of T", OSError("refused"), logging.INFO)
        runs.worked(log, "heartbeat to 127.0.0.1:1")
        runs.worked(log, "heartbeat to 127.0.0.1:1")  # no run any more: nothing
        runs.failed(log, "heartbeat to 127.0.0.1:1", OSError("refused again"))
    at = {level: [r.getMessage() for r in caplog.records if r.levelno == level]
          for level in (logging.DEBUG, logging.INFO, logging.WARNING)}
    assert at[logging.WARNING] == ["heartbeat to 127.0.0.1:1 failed: refused (1 in a row)",
                                   "heartbeat to 127.0.0.1:1 failed: refused (1001 in a row)",
                                   "heartbeat to 127.0.0.1:1 failed: refused (2001 in a row)",
                                   "heartbeat to 127.0.0.1:1 failed: refused again (1 in a row)"]
    assert at[logging.INFO] == ["rebalance of T failed: refused (1 in a row)",
                                "heartbeat to 127.0.0.1:1 works again after 2001 failure(s)"]
    assert len(at[logging.DEBUG]) == 2 * EVERY - 2
    run = FailureRun()
    assert [run.failed(logging.ERROR) for _ in range(EVERY + 1)].count(logging.ERROR) == 2
    assert run.ended() == EVERY + 1 and run.count == 0 and run.ended() == 0


def test_lock_renewals_of_an_orderly_consumer_of_a_down_broker_log_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An orderly CLUSTERING consumer renews its queue locks every ``lock_renew_interval_s``: while their
    broker is down, one warning, then debug lines (and the heartbeats etc. as above)."""
    topic, group = "Hunt19PeriodicOrderly", "hunt19-periodic-orderly-group"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, queues=2)
        addr = cluster.broker_addr
        job = f"the lock of queues on {addr} failed: "
        push_log = "rocketstore.client.push_consumer"  # the lock's own module, as before

        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            return ConsumeStatus.SUCCESS

        async def go() -> None:
            async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, orderly=True,
                                    lock_renew_interval_s=0.05, **FAST) as consumer:
                await eventually(lambda: len(consumer.assignment(topic)) == 2, 30, "both queues taken")
                with caplog.at_level(logging.DEBUG, logger="rocketstore.client"):
                    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(cluster.broker.close(),
                                                                               cluster.loop))
                    await eventually(lambda: len(said(caplog, push_log, job)) >= ROUNDS, 60,
                                     f"{ROUNDS} failed lock renewals")

        run_within(go, 90)
    warned = said(caplog, push_log, job, logging.WARNING)
    assert len(warned) == 1 and warned[0].endswith("(1 in a row)"), warned
    assert len(said(caplog, push_log, job, logging.DEBUG)) >= ROUNDS - 1
