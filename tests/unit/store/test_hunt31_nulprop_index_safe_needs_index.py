"""messageIndexSafe bounds crash recovery's start by the index's time only when the index is on.

4.9.3 (CommitLog.isMappedFileMatchedRecover) takes the index file's time into the bound only with both
messageIndexEnable and messageIndexSafe.  We took it with messageIndexSafe alone: with the index off no
index file ever fills, its time stays 0, no segment matched, and every crash recovery walked (and checked
the consume-queue entries of) the whole commitlog.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.checkpoint import CHECKPOINT_BYTES, CHECKPOINT_LAYOUT

SEGMENT = 8192
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 64,
                     max_hash_slot_num=8, max_index_num=64, preallocate_commit_log=False)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A copy of a live store (a kill -9) over four segments whose checkpoint vouches for every record but
    names no full index file; the newest segment's start."""
    base = tmp_path_factory.mktemp("idxsafe")
    live, copy = base / "live", base / "crashed"
    cfg = CONFIG.replace(store_path_root_dir=str(live))
    with MessageStore.open(live, cfg, background=False) as store:
        while len(store._commitlog.files.files) < 4:
            assert store.put(Message.create("SafeT", b"x" * 500, keys="k", queue_id=0)).ok
        assert store.wait_dispatched(30)
        newest = store._commitlog.files.files[-1].start_offset
        shutil.copytree(live, copy, ignore=shutil.ignore_patterns("lock"))
    assert (copy / "abort").exists()
    page = bytearray(CHECKPOINT_BYTES)
    now_ms = int(time.time() * 1000) + 3_600_000
    CHECKPOINT_LAYOUT.pack_into(page, 0, now_ms, now_ms, 0)  # physic, logics; index time 0: none filled
    (copy / "checkpoint").write_bytes(bytes(page))
    return copy, newest


@pytest.mark.parametrize(("enable", "safe", "starts_at_newest"),
                         [(False, True, True), (True, True, False), (False, False, True),
                          (True, False, True)])
def test_crash_recovery_start(crashed: tuple[Path, int], tmp_path: Path, enable: bool, safe: bool,
                              starts_at_newest: bool) -> None:
    root = shutil.copytree(crashed[0], tmp_path / "s")
    cfg = CONFIG.replace(store_path_root_dir=str(root), message_index_enable=enable, message_index_safe=safe)
    with MessageStore.open(root, cfg, background=False) as store:
        assert store.recovery.abnormal
        assert store.recovery.start_segment == (crashed[1] if starts_at_newest else 0)
        assert store.recovery.first_invalid_reason is None
