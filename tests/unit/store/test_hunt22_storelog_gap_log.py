"""A crashed store missing a commitlog segment in the middle.  Session 22: every later record of each queue
skipped queue offsets and dispatch refused each (a gap), logging one ERROR line per refused record
(hundreds); it then logged the first gap of each queue at ERROR, the rest at DEBUG.  Session 23: recovery
keeps the entries that point into the missing segment, as 4.9.3's abnormal recovery does
(test_hunt23_javarecover_missing_segment.py), so there is no gap left to log: the open logs none, and every
queue keeps its entries past the hole."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

#: the killed store's fourth commitlog segment (of seven), removed
SEGMENT_3 = 196608
GAP = re.compile(r"consume queue (\S+) expected entry (\d+) but holds (\d+)")


def _queue_ends(store: MessageStore) -> dict[tuple[str, int], int]:
    return {(topic, q): store.max_offset(topic, q) for topic, queues in store.topics().items() for q in queues}


def test_a_missing_middle_segment_leaves_no_gap_to_log(
        golden_copy: Callable[[str], Path], golden_config: Callable[[str], StoreConfig],
        caplog: pytest.LogCaptureFixture) -> None:
    root = golden_copy("killed")
    config = golden_config("killed")
    with MessageStore.open(root, config, read_only=True, background=False) as store:  # (scratch: no change)
        assert store.wait_dispatched()
        whole = _queue_ends(store)
    (root / "commitlog" / f"{SEGMENT_3:020d}").unlink()
    caplog.set_level(logging.DEBUG, logger="rocketstore.store.dispatch")
    with MessageStore.open(root, config, read_only=True, background=False) as store:
        assert store.wait_dispatched()
        holed = _queue_ends(store)
    gaps = [r.getMessage() for r in caplog.records
            if r.name == "rocketstore.store.dispatch" and GAP.search(r.getMessage())]
    assert gaps == []
    assert holed == whole  # every queue's end as in the whole store: nothing past the hole dropped
