"""``rocketstore pipeline ... --conf key=value`` (repeatable, as spark-submit's) sets Spark properties of the
session the job starts; a malformed pair is a usage error before Spark starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketstore.cli.main import build_parser, main

pytestmark = pytest.mark.spark

CLEAN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "stores" / "clean"
SRC = Path(__file__).resolve().parents[2] / "src"

JOBS = {
    "archive": ["pipeline", "archive", "--store", "s", "--output", "o"],
    "report": ["pipeline", "report", "--store", "s", "--output", "o"],
    "rebuild": ["pipeline", "rebuild", "s"],
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_spark_command_takes_repeated_conf_pairs(job: str) -> None:
    args = build_parser().parse_args([*JOBS[job], "--conf", "spark.executor.memory=4g", "--conf",
                                      "spark.driver.extraJavaOptions=-Da=b -Dc=d", "--conf", "spark.x= "])
    assert args.conf == [("spark.executor.memory", "4g"), ("spark.driver.extraJavaOptions", "-Da=b -Dc=d"),
                         ("spark.x", " ")]
    assert build_parser().parse_args(JOBS[job]).conf == []


@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize(("pair", "said"), [("spark.executor.memory", "expected key=value"),
                                            ("=4g", "expected key=value"),
                                            ("executor.memory=4g", "is not a Spark property")])
def test_a_malformed_conf_pair_is_a_usage_error(job: str, pair: str, said: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*JOBS[job], "--conf", pair])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "--conf" in err and said in err, err


def test_archive_runs_spark_with_the_conf_given(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if not CLEAN.is_dir():
        pytest.skip(f"golden store missing: {CLEAN}")
    out = tmp_path / "archive"
    paths = [str(SRC), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [sys.executable, "-m", "rocketstore.cli.main", "pipeline", "archive", "--store", str(CLEAN),
         "--output", str(out), "--topics", "TopicA", "--conf", "spark.master=local[1]",
         "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.parquet.compression.codec=snappy",
         "--conf", "spark.sql.parquet.compression.codec=gzip"],
        env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "starting Spark (local[1])" in done.stderr
    parts = sorted(p.name for p in out.glob("part-*"))
    # the last --conf of a key won
    assert parts and all(name.endswith(".gz.parquet") for name in parts), parts
