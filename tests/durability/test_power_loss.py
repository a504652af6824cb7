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


def test_a_sync_flush_broker_answers_only_sends_a_power_loss_keeps(tmp_path: Path) -> None:
    """The broker's SYNC_FLUSH path (puts on the event loop, answers after the group commit): 16 producers'
    sends in flight, the power goes out in the middle; every send answered SEND_OK by then is in the
    store that recovery makes of the crashed disk."""
    import asyncio
    import sys

    here = Path(__file__).resolve().parents[1] / "integration"
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    from local_cluster import LocalCluster

    from rocketstore.client import Producer

    rng = random.Random(2026)
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    overrides = {"flush_disk_type": "SYNC_FLUSH", "mapped_file_size_commit_log": 64 * 1024,
                 "mapped_file_size_consume_queue": 20 * 256}
    recorder = PowerLossRecorder()
    with recorder.active(), LocalCluster(live, store_overrides=overrides) as cluster:
        async def scenario() -> list[str]:
            acked: list[str] = []
            async with Producer(cluster.namesrv_addr, "power-producer", timeout_s=30) as producer:
                async def sender(w: int) -> None:
                    for i in range(40):
                        key = f"w{w}-{i}"
                        result = await producer.send("PowerTopic", key.encode() * rng.randint(1, 40), keys=key)
                        assert result.status == "SEND_OK"
                        acked.append(key)

                senders = [asyncio.ensure_future(sender(w)) for w in range(16)]
                while len(acked) < 300:
                    await asyncio.sleep(0.001)
                # the power goes out now: the broker's loop is this one, so no send is answered meanwhile
                answered = list(acked)
                recorder.crash_image(live, crashed, rng)
                await asyncio.gather(*senders)
            return answered

        answered = cluster.run(scenario(), 120)
    config = StoreConfig(**{**overrides, "max_hash_slot_num": 1000, "max_index_num": 4000})  # type: ignore[arg-type]
    found: set[str] = set()
    with MessageStore.open(crashed, config, background=False) as store:
        assert store.recovery.abnormal
        for queue_id in range(8):
            offset = store.min_offset("PowerTopic", queue_id)
            while True:
                got = store.get("PowerTopic", queue_id, offset, 32)
                if got.status is not GetMessageStatus.FOUND:
                    break
                found.update(m.keys for m in got.messages if m.keys)
                offset = got.next_begin_offset
    lost = sorted(set(answered) - found)
    assert not lost, f"{len(lost)} of {len(answered)} answered sends are not in the recovered store: {lost[:5]}"
