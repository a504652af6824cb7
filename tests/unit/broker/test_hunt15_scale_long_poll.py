"""Many pulls parked on one queue (PullHold): one arrival wakes every one of them, and each leaves the hold in
O(1).  Each used to be removed from a list of the queue's waiters by equality, comparing it with every waiter
before it: 2,000 parked pulls made ~2 million dataclass comparisons on the loop at the wake-up.  Counted,
not timed."""

from __future__ import annotations

import asyncio

import pytest

from rocketstore.broker import long_poll
from rocketstore.broker.long_poll import PullHold

PARKED = 2000


def test_one_arrival_wakes_every_parked_pull_without_comparing_waiters(monkeypatch: pytest.MonkeyPatch) -> None:
    comparisons = [0]

    def counted_eq(self: object, other: object) -> bool:
        comparisons[0] += 1
        return self is other

    monkeypatch.setattr(long_poll._Waiter, "__eq__", counted_eq)

    async def main() -> list[bool]:
        max_offset = [0]
        hold = PullHold(lambda topic, queue_id: max_offset[0])
        other = asyncio.ensure_future(hold.wait("Other", 0, 0, None, 30.0))
        # every other pull subscribes to tag code 1, the rest to 2 (groups with different tags on one queue)
        pulls = [asyncio.ensure_future(hold.wait("T", 3, 0, frozenset({1 + i % 2}), 30.0)) for i in range(PARKED)]
        while hold.waiting_count < PARKED + 1:
            await asyncio.sleep(0)
        assert hold.waiting("T") == {3: [0] * PARKED}
        max_offset[0] = 1
        hold._wake("T", 3, 1, 1)  # what on_dispatch hops to the loop with: a message of tag code 1 at offset 0
        first = await asyncio.gather(*pulls[0::2])
        assert hold.waiting("T") == {3: [0] * (PARKED // 2)}, "the woken pulls left the hold, the others wait"
        hold._wake("T", 3, 2, 2)  # then one of tag code 2
        woken = first + await asyncio.gather(*pulls[1::2])
        assert hold.waiting("T") == {} and hold.waiting_count == 1, "the woken pulls left the hold"
        assert not other.done(), "a pull parked on another topic was woken"
        hold.close()
        assert await other is False
        return woken

    woken = asyncio.run(main())
    assert woken == [True] * PARKED
    assert comparisons[0] < PARKED, f"{comparisons[0]} waiter comparisons for {PARKED} parked pulls"
