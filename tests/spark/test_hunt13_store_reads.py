"""The rocketmq-store source on the paths and damaged copies a user hands it: a directory that is not the
store root is refused instead of read as an empty store, and a damaged record is named by its commitlog
offset, not by its position in a batch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyarrow", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("sub", ["commitlog", "consumequeue/TopicA/0"])
def test_a_directory_below_the_store_root_is_refused_not_read_as_empty(golden_dir, load, sub: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="is not a store root.*commitlog or consume-queue directory"):
        load(golden_dir / "stores" / "clean" / sub).count()


def test_a_damaged_record_is_named_by_its_commitlog_offset(golden_copy, load) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")  # closed cleanly: read through the consume queues, in commitlog order
    segment = root / "commitlog" / f"{65536:020d}"
    data = bytearray(segment.read_bytes())
    data[2] ^= 0xFF  # TOTALSIZE of the segment's first record: the first of its batch, at position 0
    segment.write_bytes(data)
    with pytest.raises(Exception, match="cannot decode record at offset 65536"):
        load(root, topics="TopicA").toArrow()


def test_a_segment_cut_short_in_a_clean_store_is_an_error_not_fewer_rows(golden_copy, load) -> None:  # type: ignore[no-untyped-def]
    # MessageStore (and RocketMQ 4.9.3's loader) refuse such a store; the read through the consume queues
    # used to leave the 13 messages of the missing bytes out without a word.
    root: Path = golden_copy("clean")
    segment = root / "commitlog" / f"{65536:020d}"
    os.truncate(segment, 30000)
    with pytest.raises(Exception, match=f"CorruptFileError: {segment} at offset 0: the file is cut short: 30000 "
                                        f"of 65536 bytes"):
        load(root).toArrow()
