"""Opening a golden store read-only (scratch mode) changes nothing on disk, even when recovery runs.

The golden files are read-only for their owner, but a root process could still write them, so the test
compares every file's bytes and mtime, and the set of paths, before and after.
"""

from __future__ import annotations

from pathlib import Path

from rocketstore.store.dump import dump_store
from rocketstore.store.message_store import MessageStore
from rocketstore.store.verify import verify_store


def test_read_only_open_leaves_every_file_and_mtime_unchanged_and_creates_nothing(
        golden_store: str, golden_dir: Path, golden_config, tree_snapshot) -> None:  # type: ignore[no-untyped-def]
    root = golden_dir / "stores" / golden_store
    before = tree_snapshot(root)
    with MessageStore.open(root, golden_config(golden_store), read_only=True) as store:
        dump_store(store)
        verify_store(store)
        store.flush()
    after = tree_snapshot(root)
    assert sorted(after) == sorted(before), "paths created or removed"
    changed = sorted(p for p in before if before[p] != after[p])
    assert not changed, f"files changed: {changed}"
