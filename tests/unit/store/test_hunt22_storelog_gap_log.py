"""A crashed store missing a commitlog segment in the middle: every later record of each queue skips queue
offsets, and dispatch refuses each (a gap).  Opening such a store (``store verify``, ``dump``, ``serve``)
logged one ERROR line per refused record, hundreds of them burying the one that matters; now the first gap
of each queue is logged at ERROR with its detail, the rest at DEBUG (still there for whoever looks)."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

#: the killed store's fourth commitlog segment (of seven), removed
SEGMENT_3 = 196608
GAP = re.compile(r"consume queue (\S+) expected entry (\d+) but holds (\d+)")


def test_a_missing_middle_segment_logs_one_error_per_queue_with_the_first_gaps_detail(
        golden_copy: Callable[[str], Path], golden_config: Callable[[str], StoreConfig],
        caplog: pytest.LogCaptureFixture) -> None:
    root = golden_copy("killed")
    (root / "commitlog" / f"{SEGMENT_3:020d}").unlink()
    caplog.set_level(logging.DEBUG, logger="rocketstore.store.dispatch")
    with MessageStore.open(root, golden_config("killed"), read_only=True, background=False) as store:
        assert store.wait_dispatched()
    found = ((r.levelno, GAP.search(r.getMessage())) for r in caplog.records if r.name == "rocketstore.store.dispatch")
    gaps = [(level, match) for level, match in found if match is not None]
    errors = [match for level, match in gaps if level == logging.ERROR]
    per_queue = Counter(match.group(1) for match in errors)
    assert per_queue and max(per_queue.values()) == 1, per_queue
    # the ERROR line of a queue is its first gap: the lowest queue offset refused in it
    for match in errors:
        queue = match.group(1)
        assert int(match.group(2)) == min(int(m.group(2)) for _, m in gaps if m.group(1) == queue)
    # the others are not lost, only quieter
    assert len(gaps) > 5 * len(errors)
    assert {level for level, _ in gaps} == {logging.ERROR, logging.DEBUG}
