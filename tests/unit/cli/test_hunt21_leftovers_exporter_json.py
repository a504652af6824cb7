"""``rocketstore exporter --json`` without ``--once`` is a usage error as the command's others are (argparse's
shape: the command's usage, then "rocketstore exporter: error: ...", exit status 2), before any connection.
It used to print a bare "error: ..." line and return 2 (no usage, no program name)."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main


def test_json_without_once_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["exporter", "--json", "-n", "127.0.0.1:1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rocketstore exporter"), err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("rocketstore exporter: error: --json "), err
    assert "--once" in errors[0] and "Traceback" not in err


def test_json_with_once_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    # a valid command line: it runs (and fails on the closed port, exit 1)
    assert main(["exporter", "--once", "--json", "-n", "127.0.0.1:1"]) == 1
    assert "cannot connect" in capsys.readouterr().err
