"""A pull parked with suspendTimeoutMillis <= 0 waits for the next look at its queue, as in 4.9.3.

4.9.3's PullRequestHoldService checks a parked pull's time only when it looks at the queue: a message
dispatched to it (notifyMessageArriving) or the periodic check (every 5 s when long polling).  A pull whose
time is up already (a timeout of 0 or less, or one whose deadline wraps past 2^63-1) is answered by the
first of those: at once with a message it wants, else with nothing at the check.  Ours answered it at once,
so a client sending such a timeout re-pulled in a tight loop.  A message still wakes it at once; a pull
with time left is not answered by a look that finds nothing."""

from __future__ import annotations

import asyncio

from rocketstore.broker.long_poll import PullHold


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_pull_out_of_time_waits_for_a_message_and_is_woken_by_it_at_once() -> None:
    async def main() -> None:
        max_offset = [0]
        hold = PullHold(lambda topic, queue_id: max_offset[0], check_interval_s=3600.0)
        hold.start()
        try:
            for timeout_s in (0.0, -1.0):
                pull = asyncio.ensure_future(hold.wait("T", 0, max_offset[0], None, timeout_s))
                await _settle()
                assert not pull.done(), "answered at once (4.9.3 holds it until it looks at the queue)"
                assert hold.waiting("T") == {0: [max_offset[0]]}
                max_offset[0] += 1
                hold.on_dispatch("T", 0, max_offset[0], 0, 0)  # the dispatcher's call for a new message
                assert await asyncio.wait_for(pull, 30.0) is True
                assert hold.waiting_count == 0
        finally:
            hold.close()

    asyncio.run(main())


def test_the_periodic_check_answers_a_pull_out_of_time_and_keeps_one_with_time_left() -> None:
    async def main() -> None:
        checks = [0]

        def max_offset(topic: str, queue_id: int) -> int:
            checks[0] += 1
            return 0

        hold = PullHold(max_offset, check_interval_s=0.05)
        hold.start()
        try:
            timed = asyncio.ensure_future(hold.wait("T", 0, 0, None, 3600.0))
            pull = asyncio.ensure_future(hold.wait("T", 0, 0, None, 0.0))
            await _settle()
            assert not pull.done()
            assert await asyncio.wait_for(pull, 30.0) is False  # the check found nothing: answered
            assert checks[0] > 2  # (each wait reads the max offset once; the check read it since)
            await _settle()
            assert not timed.done() and hold.waiting("T") == {0: [0]}
        finally:
            hold.close()

    asyncio.run(main())


def test_a_message_the_pull_does_not_want_answers_it_when_out_of_time_only() -> None:
    async def main() -> None:
        hold = PullHold(lambda topic, queue_id: 0, check_interval_s=3600.0)
        hold.start()
        try:
            timed = asyncio.ensure_future(hold.wait("T", 0, 0, frozenset({7}), 3600.0))
            pull = asyncio.ensure_future(hold.wait("T", 0, 0, frozenset({7}), 0.0))
            await _settle()
            assert not pull.done()
            hold.on_dispatch("T", 0, 1, 8, 0)  # tag code 8: not wanted (4.9.3 then checks the time)
            assert await asyncio.wait_for(pull, 30.0) is False
            await _settle()
            assert not timed.done()
        finally:
            hold.close()

    asyncio.run(main())
