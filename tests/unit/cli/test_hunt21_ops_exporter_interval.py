"""``rocketstore exporter --min-interval-s`` takes a finite number of seconds, 0 or more: ``nan`` (or ``inf``)
used to be taken, and then ``age >= nan`` is never true, so the exporter served its first collection
forever, stale metrics that look live.  Refused now as a usage error (exit 2), before any connection."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "soon"])
def test_min_interval_must_be_finite_and_not_negative(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["exporter", "--once", "-n", "127.0.0.1:1", "--min-interval-s", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--min-interval-s" in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1, err


def test_zero_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    # every scrape collects: a valid setting, so the command runs (and fails on the closed port, exit 1)
    assert main(["exporter", "--once", "-n", "127.0.0.1:1", "--min-interval-s", "0"]) == 1
    assert "cannot connect" in capsys.readouterr().err
