"""serve's --metrics-port taken by another process: the advice names that option too (it named only
--namesrv-port / --broker-port, neither of which was the taken one)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.cli.main import main


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_serve_on_a_taken_metrics_port_names_that_option(tmp_path: Path, taken_port: int,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["serve", "--store", str(tmp_path / "store"), "--namesrv-port", "0", "--broker-port", "0",
                   "--metrics-port", str(taken_port)])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{taken_port}" in err and "address already in use" in err
    assert "--metrics-port" in err
