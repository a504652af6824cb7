"""The streaming ``rocketmq`` source rides out a broker restart of a few seconds with its default options, as
Spark's Kafka source does (its consumer keeps reconnecting inside each call for up to default.api.timeout.ms,
60 s, before fetchOffset.numRetries counts a failure): a name server or broker that cannot be reached is waited
for up to reconnectTimeoutMs (default 60000), and one that stays away fails with an error naming what was being
done, for how long, and the option.  Before, the defaults gave up after 3 tries 1 s apart (a 4 s restart killed
the query).  fetchOffset.numRetries given alone keeps bounding an outage by its tries."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from serve_process import ServeProcess, free_port, write_broker_conf

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError, SystemBusyError
from rocketstore.errors import ConnectionClosedError
from rocketstore.spark import stream_plan
from rocketstore.spark.stream_options import SourceOptions

TOPIC = "ReconnectedTrigger"
BASE = {"nameServer": "127.0.0.1:9876", "subscribe": TOPIC}


class FakeClock:
    """time.monotonic / time.sleep for stream_plan: an outage of minutes passes at once."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(stream_plan, "time", fake)
    return fake


def _down_for(clock: FakeClock, seconds: float, error: Exception) -> Any:
    """A look-up that raises *error* until *seconds* of the clock have passed, then answers 42."""
    back_at = clock.now + seconds
    calls = []

    def look_up() -> int:
        calls.append(clock.now)
        if clock.now < back_at:
            raise error
        return 42

    look_up.calls = calls  # type: ignore[attr-defined]
    return look_up


def _retrying(options: SourceOptions, fn: Any) -> Any:
    return stream_plan._retrying(options, "looking up the latest offsets", fn, lambda: None)


@pytest.mark.parametrize("error", [
    ConnectionClosedError("cannot connect to '127.0.0.1:10911': [Errno 111] Connection refused"),
    NoRouteError(TOPIC, "cannot connect to 127.0.0.1:9876: [Errno 111] Connection refused"),
    TimeoutError(),
])
def test_a_four_second_outage_is_ridden_out_with_the_default_options(clock: FakeClock, error: Exception) -> None:
    options = SourceOptions.parse(BASE, streaming=True)
    look_up = _down_for(clock, 4.0, error)
    assert _retrying(options, look_up) == 42
    assert len(look_up.calls) > 4  # more than the 3 retries, which used to end it
    assert max(clock.slept) <= 1.0  # tried again at least every second, as Kafka's reconnect.backoff.max.ms


def test_a_broker_that_stays_away_fails_after_reconnect_timeout_naming_it(clock: FakeClock) -> None:
    options = SourceOptions.parse({**BASE, "reconnectTimeoutMs": "20000"}, streaming=True)
    started = clock.now
    look_up = _down_for(clock, 3600.0, ConnectionClosedError("cannot connect to '127.0.0.1:10911': refused"))
    with pytest.raises(stream_plan.SourceUnreachableError) as caught:
        _retrying(options, look_up)
    assert 20.0 <= clock.now - started <= 21.0
    text = str(caught.value)
    assert "looking up the latest offsets" in text and "reconnectTimeoutMs=20000" in text
    assert "cannot connect to '127.0.0.1:10911'" in text
    assert isinstance(caught.value.__cause__, ConnectionClosedError)


def test_an_error_the_broker_answers_is_tried_fetch_offset_num_retries_more_times(clock: FakeClock) -> None:
    options = SourceOptions.parse(BASE, streaming=True)
    look_up = _down_for(clock, 3600.0, SystemBusyError(2, "[PC_SYNCHRONIZED]broker busy"))
    with pytest.raises(SystemBusyError, match="PC_SYNCHRONIZED") as caught:
        _retrying(options, look_up)
    assert len(look_up.calls) == 4
    assert clock.slept == [0.01, 0.01, 0.01]  # Kafka's 10 ms
    assert "fetchOffset.numRetries=3" in "".join(caught.value.__notes__)


def test_num_retries_given_alone_still_bounds_an_outage_by_its_tries(clock: FakeClock) -> None:
    options = SourceOptions.parse({**BASE, "fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "100"},
                                  streaming=True)
    look_up = _down_for(clock, 3600.0, ConnectionClosedError("cannot connect to '127.0.0.1:10911': refused"))
    with pytest.raises(ConnectionClosedError) as caught:
        _retrying(options, look_up)
    assert len(look_up.calls) == 3
    assert "fetchOffset.numRetries=2" in "".join(caught.value.__notes__)


def _prepare(serve: ServeProcess) -> None:
    async def go() -> None:
        async with AdminClient(serve.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, broker_addr=serve.broker_addr, read_queue_nums=2, write_queue_nums=2)
            for _ in range(200):  # until the name server routes it
                try:
                    await admin.route(TOPIC)
                    break
                except NoRouteError:
                    await asyncio.sleep(0.05)
        async with Producer(serve.namesrv_addr, "reconnect-producer") as producer:
            for i in range(4):
                await producer.send(TOPIC, f"m{i}".encode())

    asyncio.run(go())


def test_a_name_server_never_reached_fails_after_the_tries_not_the_reconnect_timeout(
        clock: FakeClock, tmp_path: Path) -> None:
    # a wrong address (a batch read, a new stream) is told after fetchOffset.numRetries, not a minute later
    planner = stream_plan._Planner(SourceOptions.parse({"nameServer": f"127.0.0.1:{free_port()}", "subscribe": TOPIC},
                                           streaming=True))
    try:
        with pytest.raises(NoRouteError, match="Connection refused|Connect call failed"):
            planner.retrying("looking up the latest offsets", planner.latest)
        assert clock.slept == [0.01, 0.01, 0.01]
    finally:
        planner.close()


def test_the_planner_sees_a_real_broker_restart_through_with_the_default_options(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    servers = [ServeProcess(tmp_path / "store", conf, **ports).start()]
    planner = None
    restarter = None
    try:
        _prepare(servers[0])
        planner = stream_plan._Planner(SourceOptions.parse({"nameServer": servers[0].namesrv_addr, "subscribe": TOPIC},
                                               streaming=True))
        before = planner.retrying("looking up the latest offsets", planner.latest)
        for _ in range(200):  # the sends reach their queues after they are acknowledged
            if sum(sum(queues.values()) for queues in before.values()) == 4:
                break
            time.sleep(0.05)
            before = planner.retrying("looking up the latest offsets", planner.latest)
        servers[0].kill()  # name server and broker gone at once

        def restart() -> None:
            time.sleep(4)  # the outage the planner must see through (the 3 default tries used to last 3 s)
            servers.append(ServeProcess(tmp_path / "store", conf, **ports).start())

        restarter = threading.Thread(target=restart, daemon=True)
        restarter.start()
        got = planner.retrying("looking up the latest offsets", planner.latest)  # the outage: no error
        for _ in range(200):
            # the restarted name server answers before its broker has registered (the topic unknown: {})
            if got == before:
                break
            time.sleep(0.05)
            got = planner.retrying("looking up the latest offsets", planner.latest)
        assert got == before
    finally:
        if restarter is not None:
            restarter.join(60)
        if planner is not None:
            planner.close()
        for serve in servers:
            serve.kill()
