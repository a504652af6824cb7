"""Parked pulls share one timer: no timer handle (nor asyncio.timeout, nor shield) per parked pull.

Session 30's adversary parked 65,536 pulls: +430 MB here against +82 MB for 4.9.3 (~6.5 KB each against
~1.3 KB).  tracemalloc of 5,000 parked put ~1.3 KB of each in its asyncio.timeout (a Timeout and a TimerHandle)
and its asyncio.shield (a future and callbacks); they now time out on one shared timer of 1/20 s ticks (4.9.3's
hold service looks every 5 s).  Counts scheduled handles and answers; never times anything.
"""

from __future__ import annotations

import asyncio

from rocketstore.broker.long_poll import PullHold


def test_parked_pulls_time_out_on_one_shared_timer() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        hold = PullHold(lambda topic, queue_id: 0)
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        # 300 pulls, their suspend times over 3 ticks: the 0.1 s ones answer False, the long ones stay
        waits = [asyncio.ensure_future(hold.wait("T", q % 4, 0, None, 0.1 if q < 200 else 60.0))
                 for q in range(300)]
        while hold.waiting_count < 300:
            await asyncio.sleep(0)
        scheduled = len(loop._scheduled)  # type: ignore[attr-defined]
        assert scheduled - before <= 2, "one timer for all the parked pulls"
        done, _ = await asyncio.wait(waits[:200], timeout=30)
        assert len(done) == 200 and not any(w.result() for w in done), "timed out, answered False"
        assert hold.waiting_count == 100
        # a message wakes the long ones (True); a cancelled one (its connection closed) leaves nothing behind
        waits[299].cancel()
        hold._wake("T", 1, 1, None)
        woken = [w for q, w in enumerate(waits) if q >= 200 and q % 4 == 1 and q != 299]
        await asyncio.wait(woken, timeout=30)
        assert all(w.result() is True for w in woken)
        while hold.waiting_count > 75 - 1:  # 25 woken, 1 cancelled: 74 left
            await asyncio.sleep(0)
        for w in waits[200:]:
            w.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        assert hold.waiting_count == 0 and not any(hold._ticks.values()), "nothing left in the timer's buckets"
        hold.close()

    asyncio.run(main())
