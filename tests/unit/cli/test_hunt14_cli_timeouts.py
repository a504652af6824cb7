"""``request --timeout`` takes a finite number of seconds above 0 and ``consume --timeout`` one above 0
(``inf``: until Ctrl-C), refused by the parser (one usage error, exit 2) otherwise: ``nan`` (and ``request
--timeout inf``) used to end in a traceback, and ``consume --timeout 0`` (or -1) ran and stopped at once as
if the topic were empty."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main

CLOSED = ["-n", "127.0.0.1:1"]  # nothing listens: a command that got past its arguments fails differently


@pytest.mark.parametrize(("argv", "value"), [
    *[(["consume", "T", "-g", "g"], v) for v in ("nan", "0", "-1", "abc")],  # inf: consume until Ctrl-C
    *[(["request", "T", "ping"], v) for v in ("nan", "0", "-1", "inf", "abc")]])  # a request's TTL is finite
def test_a_timeout_that_is_no_positive_number_is_a_usage_error(argv: list[str], value: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--timeout", value, *CLOSED])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "argument --timeout" in err.splitlines()[-1], err


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "abc"])
def test_cluster_rt_takes_a_finite_pause_between_rounds(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:  # nan used to end in a ValueError traceback after the first round
        main(["cluster", "rt", "--rounds", "2", "--interval-s", value, *CLOSED])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "argument --interval-s" in err.splitlines()[-1], err
