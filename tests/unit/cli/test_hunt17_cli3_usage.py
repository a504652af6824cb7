"""An unknown option is reported with the sub-command's own usage line and name, as for any other bad
argument of it, not with the top level's ``usage: rocketstore [-h] COMMAND ...``."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main


@pytest.mark.parametrize(("argv", "prog"), [
    (["kv", "get", "ORDER_TOPIC_CONFIG", "T", "-s", "x"], "rocketstore kv get"),
    (["topic", "create", "-t", "T"], "rocketstore topic create"),
    (["broker-admin", "config", "get", "--bogus"], "rocketstore broker-admin config get"),
    (["store", "dump", "/nonexistent", "--bogus"], "rocketstore store dump"),
])
def test_unknown_option_names_the_sub_command(capsys: pytest.CaptureFixture[str], argv: list[str],
                                              prog: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {prog} ")
    assert err.splitlines()[-1].startswith(f"{prog}: error: unrecognized arguments: ")


@pytest.mark.parametrize(("argv", "option"), [
    (["message", "query", "-t", "T", "-k", "K", "--max", "0"], "--max"),  # was: "no message with key 'K'"
    (["message", "query", "-t", "T", "-k", "K", "--max", "-3"], "--max"),
    (["broker-admin", "consume-stats", "--timeout-ms", "-1"], "--timeout-ms"),  # was: "within -0.001 s"
])
def test_counts_below_one_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], option: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "-n", "127.0.0.1:1"])  # refused before any connection is tried
    assert exit_info.value.code == 2
    assert f"error: argument {option}" in capsys.readouterr().err.splitlines()[-1]
