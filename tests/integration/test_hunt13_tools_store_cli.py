"""`rocketstore store dump|verify|recover` on the paths and damaged copies a user hands it: a directory that
is not a store root, a store that lost commitlog segments, a record whose fields do not decode, a broker.conf
that is not text.  Run in process on copies of the golden stores."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocketstore.cli.main import main

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("action", ["verify", "dump"])
def test_reading_a_commitlog_directory_instead_of_the_store_root_is_an_error(
        action: str, golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    code, out, err = _run(capsys, "store", action, str(root / "commitlog"), *INDEX_FLAGS)
    assert code == 2 and out == ""
    assert err.startswith("rocketstore: error: ") and len(err.splitlines()) == 1
    assert "not a store root" in err and "commitlog or consume-queue directory" in err


def test_recover_of_a_commitlog_directory_writes_nothing_into_it(golden_copy, tree_snapshot, capsys) -> None:  # type: ignore[no-untyped-def]
    # A new store's checkpoint and lock written among the segments would stop RocketMQ 4.9.3 loading the
    # real store (MappedFileQueue.doLoad refuses any file there that is not of the segment size).
    root: Path = golden_copy("clean")
    before = tree_snapshot(root)
    code, _, err = _run(capsys, "store", "recover", str(root / "commitlog"), *INDEX_FLAGS)
    assert code == 2 and "not a store root" in err
    assert tree_snapshot(root) == before


def test_verify_of_an_empty_directory_is_an_error_not_ok(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _run(capsys, "store", "verify", str(tmp_path))
    assert code == 2 and "OK" not in out and "not a store root" in err


def test_verify_reports_consume_queue_entries_a_lost_last_segment_drops(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    (root / "commitlog" / f"{1179648:020d}").unlink()  # the last segment: 6 TopicB messages
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS, "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    dropped = [p for p in report["problems"] if p["kind"] == "RECOVERY_DROPS_CQ_ENTRIES"]
    assert {p["where"] for p in dropped} == {"consumequeue/TopicB/0#29", "consumequeue/TopicB/1#29",
                                             "consumequeue/TopicB/2#28", "consumequeue/TopicB/3#28"}


def test_recover_says_how_many_queue_entries_a_lost_last_segment_drops(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    (root / "commitlog" / f"{1179648:020d}").unlink()  # the last segment: 6 TopicB messages
    code, out, _ = _run(capsys, "store", "recover", str(root), *INDEX_FLAGS)
    assert code == 0
    assert "  queue entries dropped: 6 (pointing past the valid end)" in out.splitlines()
    assert "WARNING: the last shutdown was clean" in out
    code, out, _ = _run(capsys, "store", "recover", str(root), *INDEX_FLAGS)  # nothing left to drop
    assert code == 0 and "  queue entries dropped: 0 (pointing past the valid end)" in out and "WARNING" not in out


def test_verify_reports_every_queue_when_the_commitlog_directory_is_gone(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    for segment in (root / "commitlog").iterdir():
        segment.unlink()
    (root / "commitlog").rmdir()
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS)
    assert code == 1
    assert "RECOVERY_DROPS_CQ_ENTRIES 22" in out  # every queue with entries on disk


def test_dump_lists_an_undecodable_message_and_dumps_the_rest(golden_copy, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    segment = root / "commitlog" / f"{65536:020d}"
    data = bytearray(segment.read_bytes())
    data[2] ^= 0xFF  # TOTALSIZE of the segment's first record (TopicA/1 queue offset 1)
    segment.write_bytes(data)
    target = tmp_path / "dump.json"
    code, _, err = _run(capsys, "store", "dump", str(root), *INDEX_FLAGS, "-o", str(target))
    assert code == 0, err
    assert "1 message(s) did not decode" in err
    dump = json.loads(target.read_text(encoding="utf-8"))
    bad = [m for t in dump["topics"] for q in t["queues"] for m in q["messages"] if "error" in m]
    assert [(m["commitLogOffset"], m["queueOffset"]) for m in bad] == [(65536, 1)]
    assert sum(len(q["messages"]) for t in dump["topics"] for q in t["queues"]) == 1627  # all, as in the reference
    assert dump["commitlogRecords"][-1] == {"offset": 65536, "type": "INVALID"}


def test_dump_walk_reads_a_record_whose_topic_is_not_utf8(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    segment = root / "commitlog" / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    size = int.from_bytes(data[0:4], "big")
    data[bytes(data[:size]).index(b"TopicA")] = 0xFF  # the first record's topic: no longer UTF-8
    segment.write_bytes(data)
    code, out, err = _run(capsys, "store", "dump", str(root), *INDEX_FLAGS)
    assert code == 0, err
    # the record is read as 4.9.3's checkMessageAndReturnSize reads it (new String(bytes, UTF_8): U+FFFD), and
    # the walk goes on past it (it ended there, listing no later record)
    records = json.loads(out)["commitlogRecords"]
    assert records[0]["type"] == "MESSAGE" and records[0]["topic"] == "\ufffdopicA"
    assert len(records) > 1 and records[1]["offset"] == size


def test_a_broker_conf_that_is_not_text_is_one_error_line(golden_copy, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"\xff\xfe\x00mappedFileSizeCommitLog=65536\n")
    code, out, err = _run(capsys, "store", "verify", str(golden_copy("clean")), "-c", str(conf))
    assert code == 2 and out == ""
    assert err.startswith(f"rocketstore: error: cannot read {conf}: not UTF-8") and len(err.splitlines()) == 1


def test_a_first_segment_cut_short_is_the_file_the_error_names(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root: Path = golden_copy("clean")
    first = root / "commitlog" / f"{0:020d}"
    os.truncate(first, 30000)  # an interrupted copy; the 18 other segments have 65536 bytes
    code, _, err = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS)
    assert code == 2
    assert err == f"rocketstore: error: {first} has 30000 bytes; every segment here must have 65536 (check the " \
                  f"configured segment size)\n"
