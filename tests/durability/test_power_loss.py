"""Simulated power loss (see powerloss.py): sync flush loses no acknowledged message; async flush always
reopens to a prefix of what was written."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig

from .powerloss import PowerLossRecorder

SEEDS = int(os.environ.get("ROCKETSTORE_POWERLOSS_SEEDS", "100"))


def _config(flush_type: str) -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=20 * 16,
                       max_hash_slot_num=8, max_index_num=16, flush_disk_type=flush_type,
                       flush_interval_commit_log_ms=2, flush_interval_consume_queue_ms=3,
                       flush_commit_log_thorough_interval_ms=7, flush_consume_queue_thorough_interval_ms=11,
                       preallocate_commit_log=False)


def _written_then_crashed(tmp_path: Path, seed: int, flush_type: str) -> tuple[Path, list[tuple[int, str]]]:
    rng = random.Random(seed)
    live = tmp_path / f"live{seed}"
    crashed = tmp_path / f"crashed{seed}"
    recorder = PowerLossRecorder()
    acked: list[tuple[int, str]] = []
    with recorder.active():
        store = MessageStore.open(live, _config(flush_type))
        try:
            crash_after = rng.randint(1, 40)
            for i in range(crash_after):
                key = f"s{seed}-{i}"
                r = store.put(Message.create("Power", key.encode() * rng.randint(1, 80), tags="p", keys=key,
                                             queue_id=rng.randrange(2)))
                assert r.ok
                acked.append((r.commit_log_offset, key))
            recorder.crash_image(live, crashed, rng)
        finally:
            store.close()
    shutil.rmtree(live)
    return crashed, acked


def _recovered(crashed: Path, flush_type: str) -> list[tuple[int, str]]:
    with MessageStore.open(crashed, _config(flush_type), background=False) as store:
        assert store.recovery.abnormal
        found = []
        for queue_id in (0, 1):
            offset = store.min_offset("Power", queue_id)
            while True:
                got = store.get("Power", queue_id, offset, 32)
                if got.status is not GetMessageStatus.FOUND:
                    break
                found.extend((m.commit_log_offset, m.keys) for m in got.messages)
                offset = got.next_begin_offset
        # everything in the consume queues is also what a commitlog walk sees, in the same order
        return sorted(found)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_sync_flush_loses_no_acknowledged_message_at_power_loss(tmp_path: Path, seed: int) -> None:
    crashed, acked = _written_then_crashed(tmp_path, seed, "SYNC_FLUSH")
    assert _recovered(crashed, "SYNC_FLUSH") == sorted(acked)


@pytest.mark.parametrize("seed", range(0, SEEDS, 4))
def test_async_flush_reopens_to_a_prefix_of_what_was_written(tmp_path: Path, seed: int) -> None:
    crashed, acked = _written_then_crashed(tmp_path, seed, "ASYNC_FLUSH")
    recovered = _recovered(crashed, "ASYNC_FLUSH")
    assert recovered == sorted(acked)[: len(recovered)]
