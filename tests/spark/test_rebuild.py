"""``rocketstore pipeline rebuild``: consume queues and index rebuilt by the Spark job from the commitlog.

Must-shows of the issue: the golden ``clean`` store with consumequeue/ and index/ deleted dumps exactly as
the reference after the rebuild (and its files are byte-identical to those real RocketMQ wrote); a store of
a million messages written by rocketstore gets consume-queue files byte-identical to its dispatcher's, and
``store verify`` passes.
"""

from __future__ import annotations

import json
import shutil
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from rocketstore.cli.main import main
from rocketstore.message.record import Message
from rocketstore.spark.rebuild import rebuild_with_spark
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.rebuild import RebuildPlan

pytestmark = pytest.mark.spark

GOLDEN_FLAGS = ["--segment-bytes", "65536", "--cq-bytes", "6000", "--index-slots", "100", "--index-entries", "400"]
#: the fields `store dump` fills from the store's content (the rest describe the tool and the run)
DUMP_FIELDS = ("lastShutdownAbnormal", "afterRecover_maxPhyOffset", "commitlogRecords", "topics", "queries")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _index_contents(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((root / "index").iterdir())]


def test_golden_clean_rebuilt_in_place_dumps_as_the_reference(spark: Any, golden_copy, golden_dir: Path,  # type: ignore[no-untyped-def]
                                                              golden_dump, tmp_path: Path, capsys) -> None:
    store = golden_copy("clean")
    shutil.rmtree(store / "consumequeue")
    shutil.rmtree(store / "index")
    assert main(["pipeline", "rebuild", str(store), "--in-place", "--master", "local[2]", *GOLDEN_FLAGS]) == 0
    out, err = capsys.readouterr()
    assert "rebuilt in place" in out and "1629 records" in out
    assert "rebuild [" in err and "done" in err  # the progress bar
    dump_path = tmp_path / "dump.json"
    assert main(["store", "dump", str(store), *GOLDEN_FLAGS, "-o", str(dump_path)]) == 0
    ours = json.loads(dump_path.read_text(encoding="utf-8"))
    ref = golden_dump("clean")
    for name in DUMP_FIELDS:
        assert ours[name] == ref[name], name
    assert ours["commitlog"]["maxPhyOffset"] == ref["commitlog"]["maxPhyOffset"]
    # the files themselves are those real RocketMQ 4.9.3 wrote (index file names aside: creation times)
    golden = golden_dir / "stores" / "clean"
    assert _tree(store / "consumequeue") == _tree(golden / "consumequeue")
    assert _index_contents(store) == _index_contents(golden)


def test_damaged_record_fails_the_job_and_skip_bad_reports_the_range(spark: Any, golden_copy, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                     capsys) -> None:
    store = golden_copy("clean")
    seg = sorted((store / "commitlog").iterdir())[3]
    with open(seg, "r+b") as fh:
        fh.seek(4)
        fh.write(struct.pack(">i", 0x12345678))  # the segment's first record loses its magic
    code = main(["pipeline", "rebuild", str(store), "--output", str(tmp_path / "a"), "--master", "local[2]",
                 *GOLDEN_FLAGS])
    err = capsys.readouterr().err
    assert code == 2
    assert f"damaged record at commitlog offset {int(seg.name)}" in err
    assert main(["pipeline", "rebuild", str(store), "--output", str(tmp_path / "b"), "--master", "local[2]",
                 "--skip-bad", *GOLDEN_FLAGS]) == 0
    out = capsys.readouterr().out
    assert f"SKIPPED commitlog [{int(seg.name)}, {int(seg.name) + 65536}): bad magic 0x12345678" in out


MILLION = 1_000_000
BIG = StoreConfig(mapped_file_size_commit_log=64 << 20, max_hash_slot_num=500_000, max_index_num=1_000_000,
                  check_crc_on_recover=True)


def _million_store(path: Path) -> None:
    """A million small messages over 3 topics x 4 queues, each with a tag, a key and a UNIQ_KEY."""
    batches = []
    for b in range(96):
        topic, queue_id = f"Topic{b % 3}", b % 4
        batches.append([Message.create(topic, b"x" * (i % 24), tags=f"Tag{i % 7}", keys=f"order-{b}-{i}",
                                       uniq_key=uuid.UUID(int=b << 64 | i).hex.upper(), queue_id=queue_id)
                        for i in range(100)])
    with MessageStore.open(path, BIG) as store:
        for i in range(MILLION // 100):
            result = store.put_batch(batches[i % len(batches)])
            assert result.status.name == "PUT_OK", result
        assert store.wait_dispatched(600)


@pytest.mark.slow
def test_million_message_store_rebuilds_byte_identical_and_verifies(spark: Any, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "source"
    t0 = time.monotonic()
    _million_store(source)
    built_s = time.monotonic() - t0
    store = tmp_path / "store"
    store.mkdir()
    shutil.copytree(source / "commitlog", store / "commitlog")
    steps: list[int] = []
    plans: list[RebuildPlan] = []
    report = rebuild_with_spark(spark, str(store), BIG.replace(store_path_root_dir=str(store)), in_place=True,
                                range_bytes=16 << 20, progress=steps.append, on_plan=plans.append)
    assert report.record_count == MILLION and report.cq_entry_count == MILLION
    assert report.index_key_count == 2 * MILLION and report.index_file_count == 3
    # progress covered every range (the plan: each segment up to its records, not its preallocated zeros)
    assert sum(steps) == plans[0].commit_log_bytes == sum(r.end - r.begin for r in plans[0].ranges)
    assert _tree(store / "consumequeue") == _tree(source / "consumequeue")
    assert _index_contents(store) == _index_contents(source)
    assert main(["store", "verify", str(store), "--index-slots", "500000", "--index-entries", "1000000"]) == 0
    assert "OK: commitlog, consume queues and index agree" in capsys.readouterr().out
    print(f"built in {built_s:.0f} s, rebuilt in {report.seconds:.1f} s")
