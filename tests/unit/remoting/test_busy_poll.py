"""The busy poller on a real event loop with a hand-moved clock: it polls (one loop iteration per poll, a
ready callback each) while kicks keep coming, stops a window after the last one, holds still while a
blocker says so, naps when another thread is due or after a switch interval of polling, and a loop whose
poller is turned off leaves its connections' kicks without effect."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Iterator

import pytest

from rocketstore.remoting import busy_poll
from rocketstore.remoting.busy_poll import NAP_S, BusyPoll
from rocketstore.remoting.transport import new_event_loop


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.naps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = new_event_loop()
    yield lp
    busy_poll.enable(lp, 0)
    lp.close()


def _iterations(loop: asyncio.AbstractEventLoop, n: int) -> None:
    """Run *n* iterations of the loop (a sleep(0) yields exactly one)."""
    async def go() -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    loop.run_until_complete(go())


def _poller(loop: asyncio.AbstractEventLoop, clock: Clock, window_s: float = 0.0005) -> BusyPoll:
    return BusyPoll(loop, window_s, clock=clock, sleep=clock.sleep)


def test_a_kick_polls_once_per_loop_iteration_until_the_window_passes(loop: asyncio.AbstractEventLoop) -> None:
    clock = Clock()
    p = _poller(loop, clock)
    assert not p.polling
    p.kick()
    assert p.polling
    _iterations(loop, 10)
    assert 10 <= p.spins <= 14  # one poll per iteration (run_until_complete adds a few of its own)
    clock.now += 0.0004  # still inside the window
    _iterations(loop, 3)
    assert p.polling
    clock.now += 0.0002  # 600 µs since the kick: the next poll gives up
    _iterations(loop, 3)
    assert not p.polling
    spins = p.spins
    _iterations(loop, 5)
    assert p.spins == spins  # nothing scheduled any more: the loop may sleep


def test_kicks_during_the_window_extend_it(loop: asyncio.AbstractEventLoop) -> None:
    clock = Clock()
    p = _poller(loop, clock)
    p.kick()
    for _ in range(10):  # 10 x 300 µs of traffic: 3 ms, six windows long
        clock.now += 0.0003
        p.kick()
        _iterations(loop, 2)
        assert p.polling
    clock.now += 0.0006
    _iterations(loop, 2)
    assert not p.polling


def test_a_blocker_keeps_the_loop_from_polling_until_a_kick_after_it_clears(
        loop: asyncio.AbstractEventLoop) -> None:
    clock = Clock()
    p = _poller(loop, clock)
    waiting: list[int] = []
    p.add_blocker(lambda: bool(waiting))
    p.kick()
    _iterations(loop, 2)
    waiting.append(1)  # e.g. a send now waits for a sync another thread runs
    _iterations(loop, 2)
    assert not p.polling
    p.kick()  # a read while blocked starts nothing
    _iterations(loop, 2)
    assert not p.polling
    spins = p.spins
    waiting.clear()
    p.kick()  # the answer is written: poll again
    _iterations(loop, 3)
    assert p.polling and p.spins > spins


def test_it_naps_while_another_thread_is_due_and_not_before(loop: asyncio.AbstractEventLoop) -> None:
    clock = Clock()
    p = _poller(loop, clock)
    due = [math.inf]
    p.add_due(lambda: due[0])
    p.kick()
    _iterations(loop, 5)
    assert clock.naps == []
    due[0] = clock.now + 0.001  # the dispatch thread gathers records for 1 ms, then wants the GIL
    p.kick()
    _iterations(loop, 3)
    assert clock.naps == []
    clock.now += 0.001
    p.kick()
    _iterations(loop, 2)
    assert clock.naps and all(n == NAP_S for n in clock.naps)
    assert p.naps == len(clock.naps)
    due[0] = math.inf  # it got the GIL: no more naps
    before = len(clock.naps)
    p.kick()
    _iterations(loop, 3)
    assert len(clock.naps) == before


def test_a_switch_interval_of_polling_ends_with_one_nap(loop: asyncio.AbstractEventLoop) -> None:
    clock = Clock()
    p = _poller(loop, clock)
    interval = sys.getswitchinterval()
    p.kick()
    steps = 0
    while not clock.naps:  # steady traffic, 100 µs apart
        clock.now += 0.0001
        p.kick()
        _iterations(loop, 1)
        steps += 1
        assert steps < 10_000
    assert steps * 0.0001 == pytest.approx(interval, abs=0.0002)
    assert clock.naps == [NAP_S]


def test_enable_registers_one_poller_per_loop_and_zero_turns_it_off(loop: asyncio.AbstractEventLoop) -> None:
    assert busy_poll.of(loop) is None
    p = busy_poll.enable(loop, 500)
    assert p is not None and busy_poll.of(loop) is p and p.window_s == pytest.approx(0.0005)
    assert busy_poll.enable(loop, 200) is p and p.window_s == pytest.approx(0.0002)
    assert busy_poll.enable(loop, 0) is None
    assert busy_poll.of(loop) is None
    p.kick()  # a connection made while it was on still holds it: its kicks start nothing now
    assert not p.polling
    with pytest.raises(ValueError):
        busy_poll.enable(loop, -1)
    with pytest.raises(ValueError):
        BusyPoll(loop, 0)


def test_connections_on_a_polling_loop_keep_it_polling_through_a_round_trip() -> None:
    from rocketstore.remoting.codes import RequestCode, ResponseCode
    from rocketstore.remoting.command import RemotingCommand
    from rocketstore.remoting.server import RemotingServer, RequestRouter
    from rocketstore.remoting.transport import connect

    loop = new_event_loop()
    try:
        poller = busy_poll.enable(loop, 20_000)  # 20 ms: no gap in this test is that long
        assert poller is not None

        async def echo(connection: object, request: RemotingCommand) -> RemotingCommand:
            return request.make_response(ResponseCode.SUCCESS, body=request.body)

        async def scenario() -> list[bytes]:
            server = RemotingServer(RequestRouter({RequestCode.HEART_BEAT: echo}))
            await server.start("127.0.0.1", 0)
            conn = await connect(server.address)
            try:
                bodies = []
                for i in range(20):
                    spins = poller.spins
                    answer = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=b"%d" % i), 5)
                    bodies.append(answer.body)
                    assert poller.spins > spins  # the loop polled while the answer was on its way
                return bodies
            finally:
                await conn.aclose()
                await server.close()

        assert loop.run_until_complete(scenario()) == [b"%d" % i for i in range(20)]
    finally:
        busy_poll.enable(loop, 0)
        loop.close()
