"""`rocketstore store dump|verify|recover`, run in-process against the golden stores and damaged copies."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from rocketstore.cli.main import main
from rocketstore.message.record import decode_record
from rocketstore.store.dump import dump_store
from rocketstore.store.message_store import MessageStore

INDEX_FLAGS = ["--index-slots", "100", "--index-entries", "400"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dump_prints_the_json_of_dump_store(golden_dir: Path, golden_config, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_dir / "stores" / "clean"
    code, out, _ = _run(capsys, "store", "dump", str(root), *INDEX_FLAGS)
    assert code == 0
    with MessageStore.open(root, golden_config("clean"), read_only=True) as store:
        expected = dump_store(store)
    assert json.loads(out) == expected


def test_dump_detects_segment_sizes_from_the_first_files(golden_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = _run(capsys, "store", "dump", str(golden_dir / "stores" / "delay-demo"), *INDEX_FLAGS)
    assert code == 0
    config = json.loads(out)["config"]
    assert config == {"mappedFileSizeCommitLog": 65536, "mappedFileSizeConsumeQueue": 6000, "maxHashSlotNum": 100,
                      "maxIndexNum": 400}


def test_dump_writes_indented_unescaped_json_to_the_output_file(golden_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "dump.json"
    code, out, _ = _run(capsys, "store", "dump", str(golden_dir / "stores" / "clean"), *INDEX_FLAGS,
                        "--output", str(target))
    assert code == 0 and out == ""
    text = target.read_text(encoding="utf-8")
    assert text.startswith('{\n "tool"')
    assert "välue€0" in text  # ensure_ascii off
    assert json.loads(text)["commitlog"]["maxPhyOffset"] == 1197540


def test_index_geometry_mismatch_is_an_error_naming_both_sizes(golden_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _run(capsys, "store", "dump", str(golden_dir / "stores" / "clean"))
    assert code == 2 and out == ""
    assert "8440 bytes" in err and "420000040 bytes" in err and "--index-slots" in err


def test_broker_conf_supplies_the_geometry(golden_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\nmaxHashSlotNum=100\nmaxIndexNum = 400\nstorePathRootDir=/elsewhere\n",
                    encoding="utf-8")
    code, out, _ = _run(capsys, "store", "verify", str(golden_dir / "stores" / "clean"), "-c", str(conf))
    assert code == 0, out


def test_verify_exits_0_on_every_golden_store(golden_store: str, golden_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = _run(capsys, "store", "verify", str(golden_dir / "stores" / golden_store), *INDEX_FLAGS)
    assert code == 0, out
    assert "OK:" in out


def test_verify_json_report_lists_counts_and_recovery_preview(golden_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = _run(capsys, "store", "verify", str(golden_dir / "stores" / "killed"), *INDEX_FLAGS, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["problems"] == []
    assert report["record_count"] == 1629
    assert report["recovery_preview"]["abnormal"] is True
    assert report["recovery_preview"]["valid_end"] == 1197540


def test_verify_names_a_body_crc_mismatch_after_a_body_byte_flip(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy("clean")
    segment = root / "commitlog" / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    offset = 0
    while decode_record(data, offset).body == b"":  # the first record with a body
        offset += decode_record(data, offset).store_size
    m = decode_record(data, offset)
    body_at = offset + m.store_size - 2 - len(m.properties_string.encode()) - 1 - len(m.topic) - len(m.body)
    data[body_at] ^= 0xFF
    segment.write_bytes(data)
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS)
    assert code == 1
    assert f"BODY_CRC_MISMATCH at commitlog@{offset}" in out


def test_verify_reports_a_consume_queue_entry_pointing_elsewhere(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy("clean")
    cq = root / "consumequeue" / "TopicA" / "0" / f"{0:020d}"
    data = bytearray(cq.read_bytes())
    phy, size, tags = struct.unpack_from(">qiq", data, 20)
    struct.pack_into(">qiq", data, 20, phy, size + 1, tags)  # entry 1: wrong size
    cq.write_bytes(data)
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS, "--json")
    assert code == 1
    kinds = {(p["kind"], p["where"]) for p in json.loads(out)["problems"]}
    assert ("CQ_SIZE_MISMATCH", "consumequeue/TopicA/0#1") in kinds


def test_verify_reports_index_keys_a_query_cannot_find(golden_copy, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy("clean")
    for index_file in (root / "index").iterdir():
        data = bytearray(index_file.read_bytes())
        data[40 : 40 + 100 * 4] = bytes(100 * 4)  # empty every hash slot: no chain is reachable
        index_file.write_bytes(data)
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS, "--json")
    assert code == 1
    report = json.loads(out)
    assert set(report["counts_by_kind"]) == {"INDEX_KEY_NOT_FOUND"}
    assert report["problem_count"] > 400


@pytest.mark.parametrize("name", ["clean", "killed"])
def test_dump_and_verify_never_modify_the_directory(name: str, golden_copy, tree_snapshot, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy(name)  # a writable copy: a stray write would succeed here
    before = tree_snapshot(root)
    assert _run(capsys, "store", "dump", str(root), *INDEX_FLAGS)[0] == 0
    assert _run(capsys, "store", "verify", str(root), *INDEX_FLAGS)[0] == 0
    assert tree_snapshot(root) == before


def test_recover_closes_a_crashed_store_cleanly(golden_copy, golden_config, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy("killed")
    assert (root / "abort").exists()
    code, out, err = _run(capsys, "store", "recover", str(root), *INDEX_FLAGS)
    assert code == 0, out + err
    assert "abnormal" in out and "valid end:        1197540" in out
    assert "recovery [" in err  # the progress bar
    assert not (root / "abort").exists()
    with MessageStore.open(root, golden_config("killed"), read_only=True) as store:
        dump = dump_store(store)
    assert dump["lastShutdownAbnormal"] is False
    assert dump["afterRecover_maxPhyOffset"] == 1197540
    code, out, _ = _run(capsys, "store", "verify", str(root), *INDEX_FLAGS)
    assert code == 0, out


def test_recover_refuses_a_read_only_store_even_for_root(golden_copy, tree_snapshot, capsys) -> None:  # type: ignore[no-untyped-def]
    root = golden_copy("killed")
    for dirpath, _, files in os.walk(root):  # read-only like the golden stores: for root, only these bits
        for p in (dirpath, *(os.path.join(dirpath, f) for f in files)):
            os.chmod(p, os.stat(p).st_mode & ~0o222)
    before = tree_snapshot(root)
    code, _, err = _run(capsys, "store", "recover", str(root), *INDEX_FLAGS)
    assert code == 2 and "read-only" in err
    assert tree_snapshot(root) == before


def test_store_without_an_action_is_a_usage_error(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["store"])
    assert exc.value.code == 2
