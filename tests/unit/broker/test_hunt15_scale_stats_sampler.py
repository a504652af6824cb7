"""The statistics sampler of a broker with many stats items (10,000 topics and 5,000 groups are ~30,000
items, ~125 ms to snapshot) lets the event loop serve requests between chunks of items instead of holding it
for the whole snapshot every 10 s; every item of one tick is still dated the same.  Counted, not timed."""

from __future__ import annotations

import asyncio

from rocketstore.broker import broker_stats
from rocketstore.broker.broker_stats import GROUP_GET_NUMS, BrokerStats

ITEMS = 5000


def test_the_sampler_pauses_between_chunks_of_items_and_dates_them_alike() -> None:
    now = [1_700_000_000_000]
    stats = BrokerStats("C", clock_ms=lambda: now[0])
    for g in range(ITEMS // 3 + 1):
        stats.pulled(f"g{g}", "T", 1, 10, 1)  # 3 items a group (GET_NUMS, GET_SIZE, GET_LATENCY), BROKER_GET once
    items = [item for items in stats.sets.values() for item in items.items.values()]
    assert len(items) >= ITEMS

    async def main() -> list[int]:
        partial_views: list[int] = []
        sampler = asyncio.ensure_future(stats.run(period_s=3600.0))  # one tick (the first samples every window)
        for _ in range(10 * ITEMS):
            await asyncio.sleep(0)
            done = sum(1 for item in items if item.minute)
            if 0 < done < len(items):
                partial_views.append(done)  # this coroutine ran while the tick was half-way
            if done == len(items):
                break
        sampler.cancel()
        return partial_views

    partial_views = asyncio.run(main())
    assert all(item.minute and item.hour and item.day for item in items)
    assert {item.minute[-1][0] for item in items} == {now[0]}
    chunk = getattr(broker_stats, "_SAMPLE_CHUNK", 1000)
    assert len(partial_views) >= len(items) // chunk - 1, (
        f"the loop ran other work {len(partial_views)} times while {len(items)} items were sampled")
    nums = stats.item(GROUP_GET_NUMS, "T@g7")
    assert nums is not None and list(nums.minute)[-1][1:] == (1, 1)  # (times, value) as counted
