"""A server command whose port another process holds says what to do, not only the bind error."""

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


def test_serve_on_a_taken_name_server_port_names_the_option(tmp_path: Path, taken_port: int,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["serve", "--store", str(tmp_path / "store"), "--namesrv-port", str(taken_port),
                   "--broker-port", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{taken_port}" in err and "address already in use" in err
    assert "--namesrv-port / --broker-port" in err and "0 picks a free one" in err


def test_namesrv_on_a_taken_port_names_the_option(taken_port: int,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["namesrv", "--port", str(taken_port)])
    err = capsys.readouterr().err
    assert status == 2
    assert "address already in use" in err and "choose another port with --port" in err
