"""``-b`` where a command takes a broker's HOST:PORT: a broker name (``-b broker-a``, as mqadmin's
name-taking commands have it) or a bad port is one usage error naming what is wanted, not a ValueError
traceback from the connection code."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main

CLOSED = ["-n", "127.0.0.1:1"]

COMMANDS = [
    ["broker-admin", "status"], ["broker-admin", "config", "get"], ["broker-admin", "watch", "--count", "1"],
    ["broker-admin", "stats", "-s", "TOPIC_PUT_NUMS", "-k", "T"], ["topic", "create", "T"],
    ["topic", "cq", "T", "-q", "0"], ["topic", "clean-unused"], ["topic", "perm", "T", "-p", "6"],
    ["group", "update", "g"], ["group", "delete", "g"], ["group", "correction-offset", "g", "-t", "T"],
    ["acl", "version"], ["export", "metadata"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize("broker", ["broker-a", "127.0.0.1:port", "127.0.0.1:0"])
def test_a_broker_that_is_no_address_is_a_usage_error(argv: list[str], broker: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "-b", broker, *CLOSED])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert "Traceback" not in err and "argument -b/--broker: not HOST:PORT" in last and broker in last, err
