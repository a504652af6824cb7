"""How the rocketmq-store reader picks its way in: a cleanly closed store is planned and read through a
StoreSnapshot in commitlog order (no recovery), anything else through a recovering open; both read the same
rows, and a consume-queue entry that disagrees with its record is an error, never a wrong row.

These drive StoreReader in-process (partitions() then read()), as Spark's Python workers do.
"""

from __future__ import annotations

import itertools
import shutil
import struct
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")
pa = pytest.importorskip("pyarrow", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import RocketStoreError
from rocketstore.message.host import parse_host
from rocketstore.spark.store_options import StoreReadOptions
from rocketstore.spark.store_source import StorePartition, StoreReader, store_schema

pytestmark = pytest.mark.spark

SMALL = StoreConfig(mapped_file_size_commit_log=32 * 1024, mapped_file_size_consume_queue=40 * 20,
                    max_hash_slot_num=64, max_index_num=256)


@pytest.fixture(scope="module")
def clean_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snap") / "store"
    v6 = parse_host("[2001:db8::1]:10911")
    with MessageStore.open(path, SMALL) as store:
        for i in range(0, 1200, 16):  # batches of 16 per queue, queues interleaved in the commitlog
            batch = [Message.create("S", b"%d" % (i + k) * (1 + (i + k) % 40), tags=["a", "b", None][(i + k) % 3],
                                    keys=f"k{i + k}", uniq_key=f"U{i + k}", queue_id=(i // 16) % 3,
                                    born_host=v6 if (i // 16) % 2 else None)
                     for k in range(16)]
            assert store.put_batch(batch).ok
        assert store.put(Message.create("Other", b"single", queue_id=1)).ok
        assert store.wait_dispatched()
    return path


def _read(path: Path, **options: str) -> tuple[list[StorePartition], pa.Table]:
    reader = StoreReader(StoreReadOptions.parse({"path": str(path), **options}), store_schema())
    partitions = reader.partitions()
    batches = [b for p in partitions for b in reader.read(p)]  # type: ignore[arg-type]
    return partitions, pa.Table.from_batches(batches, schema=batches[0].schema) if batches else pa.table({})


def test_clean_store_is_read_in_commit_log_order_without_recovery(clean_store: Path, rows) -> None:  # type: ignore[no-untyped-def]
    partitions, table = _read(clean_store, maxRecordsPerPartition="100")
    assert all(p.trusted for p in partitions)
    assert len(partitions) == 1201 // 100 + 1
    # each partition is one stretch of the commitlog: its offsets do not interleave with the next one's
    spans = []
    for p in partitions:
        reader = StoreReader(StoreReadOptions.parse({"path": str(clean_store)}), store_schema())
        offsets = pa.Table.from_batches(list(reader.read(p))).column("commitLogOffset").to_pylist()
        spans.append((min(offsets), max(offsets)))
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert rows.of_table(table) == rows.direct(clean_store, SMALL)


def test_aborted_copy_takes_the_recovering_path_and_reads_the_same(clean_store: Path, tmp_path: Path,
                                                                   rows) -> None:  # type: ignore[no-untyped-def]
    copy = tmp_path / "copy"
    shutil.copytree(clean_store, copy)
    (copy / "abort").touch()
    partitions, table = _read(copy, maxRecordsPerPartition="100", tags="a")
    assert not any(p.trusted for p in partitions)
    want = [r for r in rows.direct(clean_store, SMALL) if r[6] == "a"]
    assert rows.of_table(table) == want
    _, trusted = _read(clean_store, maxRecordsPerPartition="100", tags="a")
    assert rows.of_table(trusted) == want


def test_entry_that_disagrees_with_its_record_is_an_error(clean_store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(clean_store, copy)
    cq = min((copy / "consumequeue" / "S" / "0").iterdir())
    with open(cq, "r+b") as f:  # entry 3 now points 8 bytes into another record
        offset = struct.unpack(">q", f.read(68)[60:68])[0]
        f.seek(60)
        f.write(struct.pack(">q", offset + 8))
    with pytest.raises(RocketStoreError):
        _read(copy)


def test_copy_cut_short_falls_back_to_recovery_and_reads_the_valid_prefix(clean_store: Path,
                                                                          tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(clean_store, copy)
    with MessageStore.open(clean_store, SMALL, read_only=True) as store:
        end = store.max_commit_log_offset
        last = store.get("Other", 1, 0, 1)
    segment = max((copy / "commitlog").iterdir())
    with open(segment, "r+b") as f:  # the last record ("Other") lost its tail
        f.seek(end - int(segment.name) - 10)
        f.write(bytes(10))
    partitions, table = _read(copy)
    assert not any(p.trusted for p in partitions)
    assert table.num_rows == 1200
    assert "Other" not in set(table.column("topic").to_pylist())
    assert last.records
