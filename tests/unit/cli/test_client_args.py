"""Arguments checked before anything is sent or started: a producer group RocketMQ would refuse, a request
timeout that is not a positive number of seconds (which used to surface as "cannot connect to HOST within
0.0 s"), and the pipeline's sizes and intervals (a zero or negative one used to be quietly replaced)."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import build_parser, main

#: nothing listens here; the checks must answer before any connection is tried
UNREACHABLE = "127.0.0.1:1"


@pytest.mark.parametrize("command", [["send", "T1", "x"], ["request", "T1", "x"]])
def test_a_bad_producer_group_is_refused_by_name(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--group", "bad group", "-n", UNREACHABLE]) == 1
    assert capsys.readouterr().err == (
        "rocketstore: error: invalid group name 'bad group': use 1 to 255 of the characters a-z A-Z 0-9 _ - % |\n")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_request_timeout_must_be_a_positive_number_of_seconds(value: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["send", "T1", "x", "--request-timeout-s", value])
    assert exit_info.value.code == 2
    assert "--request-timeout-s" in capsys.readouterr().err.splitlines()[-1]


def test_a_fractional_request_timeout_is_fine() -> None:
    args = build_parser().parse_args(["topic", "list", "--request-timeout-s", "0.25"])
    assert args.request_timeout_s == 0.25


@pytest.mark.parametrize("argv", [
    ["pipeline", "rebuild", "/tmp", "--range-mb", "0"],
    ["pipeline", "rebuild", "/tmp", "--range-mb", "-3"],
    ["pipeline", "archive", "--output", "o", "--max-offsets-per-trigger", "0"],
    ["pipeline", "archive", "--output", "o", "--trigger-interval-s", "-2"],
])
def test_pipeline_sizes_and_intervals_must_be_positive(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    assert argv[-2] in capsys.readouterr().err.splitlines()[-1]
