"""docs/spark.md's ``rocketstore pipeline`` lines run as a reader runs them, each line's own words (in process,
on the tests' Spark session): ``/data/`` is pointed at this test's directory and ``127.0.0.1:9876`` at a
running name server.  The one addition: a rebuild of a store written with a small index (1000 slots, 4000
entries, so that the test does not write 420 MB index files) is given that geometry with ``--index-slots`` /
``--index-entries``, as the page's "Geometry" notes tell a reader to; everything else is read off the files."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, run_within

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.cli.main import main
from rocketstore.client import Producer

pytestmark = pytest.mark.spark

SPARK_MD = Path(__file__).resolve().parents[2] / "docs" / "spark.md"
SMALL_INDEX = ["--index-slots", "1000", "--index-entries", "4000"]


def pipeline_lines() -> list[list[str]]:
    """The words of each ``rocketstore pipeline`` line of the page's shell blocks (``\\`` continuations joined)."""
    text = SPARK_MD.read_text(encoding="utf-8")
    lines = []
    for part in text.split("```sh\n")[1:]:
        for line in part[:part.index("```")].replace("\\\n", " ").splitlines():
            if line.startswith("rocketstore pipeline "):
                lines.append(shlex.split(line, comments=True))
    return lines


def run_line(words: list[str], data: Path, namesrv: str = "") -> None:
    args = [w.replace("/data/", f"{data}/").replace("127.0.0.1:9876", namesrv) for w in words[1:]]
    if args[:2] == ["pipeline", "rebuild"]:
        args += SMALL_INDEX
    assert main(args) == 0, words


def _store(root: Path) -> None:
    config = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20_000 * 20,
                         max_hash_slot_num=1000, max_index_num=4000, preallocate_commit_log=False)
    with MessageStore.open(root, config) as store:
        for i in range(12):
            store.put(Message.create(("A", "B", "C")[i % 3], f"m{i}".encode(), tags="TagA", keys=f"k{i}"))


def test_the_store_lines_archive_report_and_rebuild(spark: Any, tmp_path: Path) -> None:
    lines = [w for w in pipeline_lines() if "--store" in w or w[2] == "rebuild"]
    assert [w[2] for w in lines] == ["archive", "report", "rebuild", "rebuild", "rebuild"], lines
    data = tmp_path / "data"
    _store(data / "store")
    archive, report, *rebuilds = lines
    for _ in range(2):  # --overwrite: the second run replaces the first's output
        run_line(archive, data)
    rows = spark.read.parquet(str(data / "archive")).select("topic", "body").collect()
    assert sorted((r["topic"], bytes(r["body"])) for r in rows) == sorted(
        (("A", "B", "C")[i % 3], f"m{i}".encode()) for i in range(12) if i % 3 != 2)
    run_line(report, data)
    assert {"report.html", "report.png", "traffic.csv"} <= {p.name for p in (data / "report").iterdir()}
    before = sorted(p.relative_to(data / "store").as_posix() for p in (data / "store" / "consumequeue").rglob("*")
                    if p.is_file())
    run_line(rebuilds[0], data)  # into STORE.rebuilt/
    rebuilt = data / "store.rebuilt"
    assert sorted(p.relative_to(rebuilt).as_posix() for p in (rebuilt / "consumequeue").rglob("*")
                  if p.is_file()) == before
    for line in rebuilds[1:]:  # --in-place, then --in-place --skip-bad
        run_line(line, data)
    with MessageStore.open(data / "store", StoreConfig(mapped_file_size_commit_log=1 << 20,
                                                       mapped_file_size_consume_queue=20_000 * 20,
                                                       max_hash_slot_num=1000, max_index_num=4000,
                                                       preallocate_commit_log=False)) as store:
        assert [bytes(m.body) for m in store.get("A", 0, 0, 32).messages] == [f"m{i}".encode() for i in (0, 3, 6, 9)]


def test_the_live_topic_line_archives_what_the_topic_holds(spark: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    [line] = [w for w in pipeline_lines() if "--name-server" in w]
    assert "--available-now" in line  # a line that stops by itself
    cluster.create_topic("TopicA", 2)

    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "docs2-pipeline-producer") as producer:
            for i, tags in enumerate(("A", "B", "C", "A")):
                await producer.send("TopicA", f"live {i}".encode(), tags=tags)

    run_within(send, 20.0)
    data = tmp_path / "data"
    run_line(line, data, cluster.namesrv_addr)
    rows = spark.read.parquet(str(data / "live")).select("tags", "body").collect()
    assert sorted((r["tags"], bytes(r["body"])) for r in rows) == [("A", b"live 0"), ("A", b"live 3"),
                                                                  ("B", b"live 1")]  # --tags 'A || B'
