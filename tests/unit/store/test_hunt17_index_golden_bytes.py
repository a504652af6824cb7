"""Index files built from the golden stores' records equal the ones RocketMQ 4.9.3 wrote, byte for byte.

The reference dump lists every commitlog record (topic, offset, store time, sys flag, KEYS, UNIQ_KEY) in
commitlog order; handing them to the index one by one (``IndexService.build``, the dispatcher's per-record
path) and as one run (``build_run``, the vectorised path) must give the same files as the real IndexService:
headers (begin/end timestamps and offsets, slot and entry counts), slots, chains and time differences,
rolling at maxIndexNum - 1 keys with the next file starting from the full one's end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketstore.message.record import SysFlag
from rocketstore.store.config import StoreConfig
from rocketstore.store.index_file import IndexService

STORES = ["clean", "syncflush", "delay-demo"]


def _records(dump: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in dump["commitlogRecords"] if r["type"] == "MESSAGE"]


def _files(directory: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(directory.iterdir())]


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("path", ["per_record", "run"])
def test_index_files_equal_the_golden_ones(name: str, path: str, golden_dir: Path,
                                           golden_dump: Callable[[str], dict[str, Any]],
                                           golden_config: Callable[[str], StoreConfig],
                                           tmp_path: Path) -> None:
    config = golden_config(name)
    records = _records(golden_dump(name))
    service = IndexService(str(tmp_path / "index"), config.max_hash_slot_num, config.max_index_num,
                           writable=True)
    try:
        if path == "per_record":
            for r in records:
                if r["uniqKey"] is not None or r["keys"]:
                    service.build(r["topic"], r["offset"], r["storeTimestamp"], r["sysFlag"], r["uniqKey"],
                                  r["keys"])
        else:
            kept = [r for r in records
                    if r["sysFlag"] & SysFlag.TRANSACTION_MASK != SysFlag.TRANSACTION_ROLLBACK_TYPE]
            service.build_run(tuple(r["topic"] for r in kept), tuple(r["offset"] for r in kept),
                              tuple(r["storeTimestamp"] for r in kept), tuple(r["uniqKey"] for r in kept),
                              tuple(r["keys"] for r in kept))
        service.flush()
    finally:
        service.close()
    ours = _files(tmp_path / "index")
    reference = _files(golden_dir / "stores" / name / "index")
    assert len(ours) == len(reference)
    different = [i for i, (a, b) in enumerate(zip(ours, reference)) if a != b]
    assert not different, f"index files (in name order) whose bytes differ: {different}"
