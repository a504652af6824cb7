"""An index entry's timeDiff for a store time near Java's long minimum (a slave's replica bytes or an embedded
put carry any long): 4.9.3's IndexFile.putKey computes ``storeTimestamp - beginTimestamp`` as a long, which
wraps to a large positive value, and clamps it to Integer.MAX_VALUE.  The store's key-by-key paths wrote 0
(Python ints do not wrap) where its vectorised paths and the rebuild wrote Integer.MAX_VALUE."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.index_file import INDEX_ENTRY
from rocketstore.store.message_store import MessageStore
from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial

SLOTS = 100
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, store_host="10.0.0.1:10911", max_hash_slot_num=SLOTS,
                     max_index_num=400)
BEGIN = 1_700_000_000_000
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
#: store times after the file's begin one, and what 4.9.3 writes as their timeDiff
STAMPS = [(LONG_MIN + 5, 0x7FFFFFFF), (LONG_MIN + BEGIN - 1, 0x7FFFFFFF), (LONG_MIN + BEGIN, 0),
          (-1000, 0), (BEGIN - 1, 0), (BEGIN + 1999, 1), (LONG_MAX, 0x7FFFFFFF)]


def _time_diffs(root: Path) -> list[int]:
    (index,) = (root / "index").iterdir()
    data = index.read_bytes()
    entries_at = 40 + SLOTS * 4
    return [INDEX_ENTRY.unpack_from(data, entries_at + k * 20)[2] for k in range(2, 2 + len(STAMPS))]


@pytest.mark.parametrize("batch", [False, True], ids=["put", "put_batch"])
def test_a_store_time_whose_difference_wraps_in_java_gets_the_largest_time_diff(tmp_path: Path, batch: bool) -> None:
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG) as store:
        store.put(Message("T", b"first", {"KEYS": "first"}, store_timestamp=BEGIN))
        messages = [Message("T", b"x", {"KEYS": f"k{i}"}, store_timestamp=ts) for i, (ts, _) in enumerate(STAMPS)]
        if batch:
            for m in messages:  # one batch a store time: a batch shares its store timestamp
                store.put_batch([m])
        else:
            for m in messages:
                store.put(m)
        assert store.wait_dispatched()
    assert _time_diffs(root) == [want for _, want in STAMPS]

    rebuilt = tmp_path / "r"
    rebuilt.mkdir()
    shutil.copytree(root / "commitlog", rebuilt / "commitlog")
    plan = plan_rebuild(str(rebuilt), CONFIG.replace(store_path_root_dir=str(rebuilt)))
    rebuild_store(plan, scan_serial(plan), in_place=True)
    assert _time_diffs(rebuilt) == [want for _, want in STAMPS]  # the vectorised rebuild agrees
