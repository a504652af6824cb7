"""``rocketstore pipeline archive --name-server`` with a name server that cannot be reached, or an address that
is no HOST:PORT: one line and exit 2 before Spark starts.  The streaming archive used to start Spark, retry the
look-up fetchOffset.numRetries times and end in Spark's JVM and Python stack traces; a malformed address went
as far as the rocketmq source's option check inside Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocketstore.cli import pipeline_cmds
from rocketstore.cli.main import main

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*_: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(pipeline_cmds, "_start_spark", started)


def _archive(tmp_path: Path, name_server: str) -> list[str]:
    return ["pipeline", "archive", "--name-server", name_server, "--topic", "TopicA",
            "--checkpoint", str(tmp_path / "ckpt"), "--output", str(tmp_path / "out"), "--available-now"]


def test_an_unreachable_name_server_is_one_line_before_spark(tmp_path: Path, no_spark: None,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    status = main(_archive(tmp_path, "127.0.0.1:1"))  # port 1: nothing listens, the connection is refused
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("rocketstore: error: --name-server 127.0.0.1:1: ") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "ckpt").exists()


def test_a_malformed_name_server_is_a_usage_error(tmp_path: Path, no_spark: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(_archive(tmp_path, "garbage"))
    assert exited.value.code == 2
    assert "argument --name-server: not HOST:PORT: 'garbage'" in capsys.readouterr().err
