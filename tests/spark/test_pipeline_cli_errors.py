"""``rocketstore pipeline`` as a user meets it when something is wrong, and the streaming archive's count:
a failed Spark job is one ``rocketstore: error:`` line and exit status 2 (no Python or JVM traceback), and
``archive --name-server`` reports every micro-batch's rows, however quickly the batches follow each other."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

from rocketstore.cli.main import main
from rocketstore.cli.pipeline_cmds import spark_error_line
from rocketstore.client import Producer
from rocketstore.spark.jobs import archive_topic

pytestmark = pytest.mark.spark

CLEAN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "stores" / "clean"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("rocketstore: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_archive_of_a_missing_store_is_one_line(spark: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["pipeline", "archive", "--store", str(tmp_path / "nope"), "--output", str(tmp_path / "out")])
    assert code == 2
    assert "is not a directory" in _one_error_line(capsys.readouterr().err)
    assert main(["pipeline", "report", "--store", str(tmp_path / "nope"), "--output", str(tmp_path / "r")]) == 2
    assert "is not a directory" in _one_error_line(capsys.readouterr().err)


def test_archive_into_an_existing_output_names_the_overwrite_flag(spark: Any, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    if not CLEAN.is_dir():
        pytest.skip(f"golden store missing: {CLEAN}")
    out = tmp_path / "archive"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["pipeline", "archive", "--store", str(CLEAN), "--output", str(out), "--topics", "TopicA"]) == 2
    assert "--overwrite" in _one_error_line(capsys.readouterr().err)
    assert (out / "keep.txt").read_text() == "mine"


def test_streaming_archive_from_an_unreachable_name_server_is_one_line(spark: Any, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    code = main(["pipeline", "archive", "--name-server", f"127.0.0.1:{port}", "--topic", "Gone",
                 "--checkpoint", str(tmp_path / "ckpt"), "--output", str(tmp_path / "out"), "--available-now"])
    assert code == 2
    assert f"--name-server 127.0.0.1:{port}: cannot connect" in _one_error_line(capsys.readouterr().err)


def test_spark_error_line_prefers_the_wrapped_rocketstore_error() -> None:
    wrapped = RuntimeError("[PYTHON_DATA_SOURCE_ERROR] Failed:\nTraceback (most recent call last):\n"
                           '  File "x.py", line 1, in f\nrocketstore.errors.StoreConfigError: path \'/x\' is not a '
                           "directory\n SQLSTATE: 38000")
    assert spark_error_line(wrapped) == "StoreConfigError: path '/x' is not a directory"
    plain = RuntimeError("[PATH_ALREADY_EXISTS] Path file:/x already exists. SQLSTATE: 42K04")
    assert spark_error_line(plain) == "[PATH_ALREADY_EXISTS] Path file:/x already exists."


def test_streaming_archive_counts_every_batch(spark: Any, tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "archive-count") as producer:
                for i in range(30):
                    await producer.send("ArchiveCount", f"m{i}".encode())

        asyncio.run(send())
        cluster.wait_dispatched()
        out = tmp_path / "out"
        # one row per micro-batch: the batches follow each other faster than the job polls its progress
        total = archive_topic(spark, cluster.namesrv_addr, "ArchiveCount", str(tmp_path / "ckpt"), str(out),
                              lambda _: None, available_now=True, max_offsets_per_trigger=1)
        assert spark.read.parquet(str(out)).count() == 30
        assert total == 30


def test_archive_refuses_to_overwrite_the_store_it_reads(spark: Any, golden_copy, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    store = golden_copy("clean")
    before = sorted(str(p.relative_to(store)) for p in store.rglob("*"))
    # the store itself, and a directory holding it: Spark's overwrite would delete either before reading
    for output in (store, store.parent):
        assert main(["pipeline", "archive", "--store", str(store), "--output", str(output), "--overwrite",
                     "--topics", "TopicA"]) == 2
        assert "overwriting it would delete the store" in _one_error_line(capsys.readouterr().err)
    assert sorted(str(p.relative_to(store)) for p in store.rglob("*")) == before
    # a sibling directory is fine
    assert main(["pipeline", "archive", "--store", str(store), "--output", str(tmp_path / "parquet"),
                 "--overwrite", "--topics", "TopicA"]) == 0
    assert spark.read.parquet(str(tmp_path / "parquet")).count() == 100


def test_an_in_place_rebuild_of_an_open_store_is_refused_before_spark_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketstore import Message, MessageStore
    from rocketstore.store.config import StoreConfig

    config = StoreConfig(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                         mapped_file_size_consume_queue=6000, max_hash_slot_num=100, max_index_num=400)
    with MessageStore.open(config=config) as store:
        assert store.put(Message.create("T", b"x")).ok
        code = main(["pipeline", "rebuild", str(tmp_path / "store"), "--in-place", "--index-slots", "100",
                     "--index-entries", "400"])
        err = capsys.readouterr().err
    assert code != 0
    assert "lock" in _one_error_line(err)
    assert "starting Spark" not in err
