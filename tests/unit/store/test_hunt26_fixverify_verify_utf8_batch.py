"""`rocketstore store verify` on a healthy store whose batch records carry properties that are not UTF-8.

RocketMQ 4.9.3 stores a batch entry's properties bytes as the producer sent them (its batch encoder copies
them), and its recovery (CommitLog.checkMessageAndReturnSize, normal and after a crash) checks the body CRC
only: the properties are read with ``new String(bytes, UTF_8)`` (one U+FFFD for each malformed sequence),
their TAGS hashed into the queue entry and their keys into the index from that text.  Such a store opens and
serves without complaint, every key found.  Our verify reported PROPERTIES_NOT_UTF8 once per such record and
exited 1 on it; it now counts them (a warning line, exit 0) and reports the record only where what was built
from its properties (the queue entry's tagsCode, the index) disagrees with them as read: a byte changed on
disk after dispatch, which still fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.cli.main import main
from rocketstore.store.verify import ProblemKind, verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=6000,
                     max_hash_slot_num=500, max_index_num=2000)
INDEX_FLAGS = ["--segment-bytes", str(1 << 20), "--cq-bytes", "6000", "--index-slots", "500",
               "--index-entries", "2000"]

#: the commitlog [0, 626) of a store written by 4.9.3's DefaultMessageStore (captured): two plain messages
#: of topic TU (TAGS tp0 / tp1, KEYS kp0 / kp1), then putMessages of a batch of three entries: e0 with TAGS
#: ED A0 80 "A1", KEYS "k" FF "y k2", a property UPROP 80 = "va" C3 and a UNIQ_KEY; e1 all ASCII; e2 with
#: TAGS "t" F0 80 80 80, KEYS kk.  4.9.3 reopened it (cleanly and after a crash) with all five messages
#: served and every key found, "k\ufffdy" among them.
COMMITLOG_4_9_3 = bytes.fromhex(
    "00000074daa320a77f19206200000000000000000000000000000000000000000000000000000000000001a221e6a89a7f00"
    "00010000007e000001a221e6a8a47f00000100002a9f00000000000000000000000000000006706c61696e3002545500114b"
    "455953016b703002544147530174703000000074daa320a7081e10f400000000000000000000000000000001000000000000"
    "007400000000000001a221e6a8b37f0000010000007e000001a221e6a8b47f00000100002a9f000000000000000000000000"
    "00000006706c61696e3102545500114b455953016b7031025441475301747031000000aadaa320a77f8abdb1000000000000"
    "0000000000000000000200000000000000e800000000000001a221e6a8b77f0000010000007e000001a221e6a8b87f000001"
    "00002a9f000000000000000000000000000000026530025455004b5441475301eda0804131024b455953016bff79206b3202"
    "5550524f5080017661c302554e49515f4b455901414141413030303030303030303030303030303030303030303030303030"
    "30310000006fdaa320a7088d8d2700000000000000000000000000000003000000000000019200000000000001a221e6a8b7"
    "7f0000010000007e000001a221e6a8b87f00000100002a9f0000000000000000000000000000000265310254550010544147"
    "53016f6b024b455953016b6f6b00000071daa320a71184dc9d00000000000000000000000000000004000000000000020100"
    "000000000001a221e6a8b77f0000010000007e000001a221e6a8b87f00000100002a9f000000000000000000000000000000"
    "0265320254550012544147530174f0808080024b455953016b6b"
)
#: 4.9.3's consume queue TU/0 for those records (captured): offset, size, tagsCode of each
CQ_4_9_3 = bytes.fromhex(
    "000000000000000000000074000000000001c134000000000000007400000074000000000001c13500000000000000e80000"
    "00aa0000000003c0fccd00000000000001920000006f0000000000000ddc000000000000020100000071000000007ea13db4"
)
NOT_UTF8_AT = (232, 513)


def _store_4_9_3(root: Path) -> None:
    """4.9.3's commitlog in a segment, queues and index dispatched by our store, then a clean shutdown."""
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / f"{0:020d}").write_bytes(COMMITLOG_4_9_3.ljust(1 << 20, b"\0"))
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        assert store.max_offset("TU", 0) == 5
    # dispatched as 4.9.3 dispatched them: the same queue entries, tagsCode of the U+FFFD text included
    assert (root / "consumequeue" / "TU" / "0" / f"{0:020d}").read_bytes()[: len(CQ_4_9_3)] == CQ_4_9_3


def test_a_4_9_3_batch_store_verifies_clean_with_a_warning(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    _store_4_9_3(root)
    with MessageStore.open(root, CONFIG, read_only=True) as store:
        report = verify_store(store)
    assert report.ok and report.problem_count == 0, report.problems
    assert (report.record_count, report.cq_entry_count, report.index_key_count) == (5, 5, 7)
    assert (report.properties_not_utf8, report.properties_not_utf8_offsets) == (2, NOT_UTF8_AT)

    assert main(["store", "verify", str(root), *INDEX_FLAGS]) == 0
    out = capsys.readouterr().out
    assert "warning: 2 record(s) with properties that are not UTF-8 (commitlog 232, 513)" in out
    assert "OK: commitlog, consume queues and index agree" in out
    assert main(["store", "verify", str(root), *INDEX_FLAGS, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["properties_not_utf8"], data["properties_not_utf8_offsets"]) == (True, 2, [232, 513])


def test_a_store_of_utf8_properties_has_no_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    with MessageStore.open(root, CONFIG) as store:
        assert store.put(Message.create("T", b"b", tags="t", keys="k")).ok
        assert store.wait_dispatched()
    assert main(["store", "verify", str(root), *INDEX_FLAGS]) == 0
    assert "warning" not in capsys.readouterr().out


def test_tags_changed_on_disk_after_dispatch_still_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    _store_4_9_3(root)
    # the first record's TAGS "tp0" -> "tp" FF: its queue entry keeps the tagsCode of "tp0"
    seg = root / "commitlog" / f"{0:020d}"
    data = bytearray(seg.read_bytes())
    at = data.index(b"TAGS\x01tp0")
    data[at + 7] = 0xFF
    seg.write_bytes(bytes(data))
    with MessageStore.open(root, CONFIG, read_only=True) as store:
        report = verify_store(store)
    assert report.counts_by_kind == {ProblemKind.CQ_TAGS_CODE_MISMATCH: 1, ProblemKind.PROPERTIES_NOT_UTF8: 1}, \
        report.problems
    where = {p.kind: p.where for p in report.problems}
    assert where[ProblemKind.PROPERTIES_NOT_UTF8] == "commitlog@0"
    detail = next(p.detail for p in report.problems if p.kind == ProblemKind.PROPERTIES_NOT_UTF8)
    assert "/0 queue offset 0)" in detail, detail  # the record's queue and queue offset named
    assert report.properties_not_utf8 == 3
    assert main(["store", "verify", str(root), *INDEX_FLAGS]) == 1
    assert "PROPERTIES_NOT_UTF8 at commitlog@0" in capsys.readouterr().out
