"""An index entry's timeDiff when Java's long ``storeTimestamp - beginTimestamp`` wraps and the file began near
Long.MAX_VALUE: the wrapped difference is small (Long.MIN_VALUE + 5000 - Long.MAX_VALUE wraps to 5001 ms), so
4.9.3's IndexFile.putKey writes its seconds (5), as the store's vectorised paths and the rebuild do; the
key-by-key paths wrote Integer.MAX_VALUE for every wrapped difference."""

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
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
#: store times after a file begun at Long.MAX_VALUE, and the timeDiff 4.9.3 writes (Java's wrapped long / 1000)
STAMPS = [(LONG_MIN, 0), (LONG_MIN + 5000, 5), (LONG_MIN + 3_000_000_000_000_000, 0x7FFFFFFF), (-1, 0)]


def _time_diffs(root: Path) -> list[int]:
    (index,) = (root / "index").iterdir()
    data = index.read_bytes()
    entries_at = 40 + SLOTS * 4
    return [INDEX_ENTRY.unpack_from(data, entries_at + k * 20)[2] for k in range(2, 2 + len(STAMPS))]


@pytest.mark.parametrize("batch", [False, True], ids=["put", "put_batch"])
def test_a_small_wrapped_difference_gives_its_seconds_as_the_rebuild_does(tmp_path: Path, batch: bool) -> None:
    root = tmp_path / "s"
    with MessageStore.open(root, CONFIG) as store:
        store.put(Message("T", b"first", {"KEYS": "first"}, store_timestamp=LONG_MAX))
        for i, (ts, _) in enumerate(STAMPS):
            m = Message("T", b"x", {"KEYS": f"k{i}"}, store_timestamp=ts)
            if batch:
                store.put_batch([m])
            else:
                store.put(m)
        assert store.wait_dispatched()
    assert _time_diffs(root) == [want for _, want in STAMPS]

    rebuilt = tmp_path / "r"
    rebuilt.mkdir()
    shutil.copytree(root / "commitlog", rebuilt / "commitlog")
    plan = plan_rebuild(str(rebuilt), CONFIG.replace(store_path_root_dir=str(rebuilt)))
    rebuild_store(plan, scan_serial(plan), in_place=True)
    assert _time_diffs(rebuilt) == [want for _, want in STAMPS]  # the vectorised rebuild agrees
