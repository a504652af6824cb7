"""A send whose attempt timed out is not retried: that attempt had all the time left.  The deadline is read
with time.monotonic(), the attempt's timer runs on the loop's clock, and uvloop's is read once a loop
iteration: on a loaded machine the timer fired before time.monotonic() reached the deadline, and a retry
with a few ms left went out (test_hunt14_pyclient_send_timeout's [uvloop] case failed in a CI run with two
frames for one send).  Here the producer's clock is made to lag after the send starts, the same skew,
deterministically; 4.9.3's sendDefaultImpl finds the time spent and sends no retry."""

from __future__ import annotations

import asyncio
import time
import types

import pytest
from test_hunt14_pyclient_send_timeout import TOPIC, SilentBroker, with_registered_broker

from rocketstore.client import Producer
from rocketstore.client import producer as producer_module
from rocketstore.errors import RequestTimeoutError
from rocketstore.remoting.transport import run


class _LaggingClock(types.SimpleNamespace):
    """The time module, but monotonic() runs 0.3 s behind from its second call on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    def monotonic(self) -> float:
        self.calls += 1
        return time.monotonic() - (0.3 if self.calls > 1 else 0.0)


def test_an_attempt_that_timed_out_is_not_retried_though_the_clocks_disagree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> tuple[int, BaseException | None]:
        silent = SilentBroker()
        addr = await silent.start()

        async def send(namesrv_addr: str) -> BaseException | None:
            async with Producer(namesrv_addr, "hunt29-clock-pg", timeout_s=1.0) as producer:
                await producer.routes.publish_route(TOPIC)  # the route cached: the send starts the clock
                monkeypatch.setattr(producer_module, "time", _LaggingClock())
                try:
                    await asyncio.wait_for(producer.send(TOPIC, b"into the void"), 30)
                except RequestTimeoutError as exc:
                    return exc
                finally:
                    monkeypatch.setattr(producer_module, "time", time)
            return None

        try:
            error = await with_registered_broker(addr, send)
            await asyncio.sleep(0.2)  # a retry's frame, if one went out, is read by now
        finally:
            await silent.close()
        return silent.frames, error

    frames, error = run(go())
    assert isinstance(error, RequestTimeoutError)
    assert frames == 1
