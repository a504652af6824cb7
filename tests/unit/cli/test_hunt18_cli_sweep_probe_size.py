"""``message check-rt``, ``message send-status`` and ``cluster rt`` with a ``-s`` body size beyond the
producer's maxMessageSize (4 MiB): a usage error before anything connects, not a MemoryError traceback from
building a body of that many bytes (or, under 4 GiB, a run where every send fails)."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main

DOWN = "127.0.0.1:1"  # never reached: the size is refused while parsing


@pytest.mark.parametrize("argv", [
    ["message", "check-rt", "-t", "T", "-a", "1"],
    ["message", "send-status", "-b", "broker-a", "-c", "1"],
    ["cluster", "rt", "-a", "1"],
])
@pytest.mark.parametrize("size", ["4194305", "99999999999"])
def test_a_probe_body_over_the_max_message_size_is_a_usage_error(
        argv: list[str], size: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main([*argv, "-s", size, "-n", DOWN])
    assert usage.value.code == 2
    assert "maxMessageSize" in capsys.readouterr().err
