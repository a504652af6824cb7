"""``rocketstore pipeline report`` and ``archive --store`` on the golden ``clean`` store (read-only: its
files must not change), run in-process through the CLI's main() on the shared Spark session."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.cli.main import main
from rocketstore.spark.report import consumer_lag

pytestmark = pytest.mark.spark

CLEAN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "stores" / "clean"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def clean_store() -> Path:
    if not CLEAN.is_dir():
        pytest.skip(f"golden store missing: {CLEAN}")
    return CLEAN


def test_report_writes_html_and_png_for_the_clean_store_without_touching_it(
        spark: Any, clean_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _fingerprint(clean_store)
    out = tmp_path / "report"
    assert main(["pipeline", "report", "--store", str(clean_store), "--output", str(out)]) == 0
    assert _fingerprint(clean_store) == before

    captured = capsys.readouterr()
    assert "rocketstore pipeline:" in captured.err  # progress on stderr
    png = (out / "report.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 1000
    from PIL import Image  # matplotlib depends on pillow

    with Image.open(out / "report.png") as image:
        image.verify()
    page = (out / "report.html").read_text()
    topics = sorted(p.name for p in (clean_store / "consumequeue").iterdir()
                    if p.name != "SCHEDULE_TOPIC_XXXX")
    assert topics
    for topic in topics:
        assert topic in page, topic
    assert "data:image/png;base64," in page and "<style>" in page
    assert "http://" not in page and "https://" not in page  # self-contained

    # the per-hour CSV adds up to the number of messages the source reads
    lines = (out / "traffic.csv").read_text().splitlines()[1:]
    total = sum(int(line.rsplit(",", 2)[1]) for line in lines)
    expected = spark.read.format("rocketmq-store").option("path", str(clean_store)).load().count()
    assert total == expected > 0


def test_consumer_lag_is_queue_max_offset_minus_committed_offset(clean_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(clean_store, store)
    (store / "config" / "consumerOffset.json").write_text(json.dumps(
        {"offsetTable": {"TopicA@groupA": {"0": 1, "1": 0}, "TopicB@groupB": {"0": 0}}}))
    lags = {(g.group, g.topic, g.queue_id): (g.committed_offset, g.max_offset, g.lag) for g in consumer_lag(str(store))}
    assert set(lags) == {("groupA", "TopicA", 0), ("groupA", "TopicA", 1), ("groupB", "TopicB", 0)}
    for committed, high, lag in lags.values():
        assert lag == max(0, high - committed)
    assert lags[("groupA", "TopicA", 0)][1] > 1


def test_archive_store_writes_parquet_with_every_message(spark: Any, clean_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "archive"
    assert main(["pipeline", "archive", "--store", str(clean_store), "--output", str(out),
                 "--topics", "TopicA,TopicB"]) == 0
    archived = spark.read.parquet(str(out))
    source = spark.read.format("rocketmq-store").option("path", str(clean_store)).option("topics", "TopicA,TopicB")
    assert archived.count() == source.load().count() > 0


def test_archive_needs_a_store_or_a_name_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pipeline", "archive", "--output", "/tmp/x"]) == 2
    assert main(["pipeline", "archive", "--name-server", "h:1", "--output", "/tmp/x"]) == 2
    assert "--checkpoint" in capsys.readouterr().err
