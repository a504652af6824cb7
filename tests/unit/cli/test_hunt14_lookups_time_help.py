"""What the CLI says a time bound means: the broker's SEARCH_OFFSET_BY_TIMESTAMP answers the queue offset of
the message stored *nearest* the time (4.9.3's getOffsetInQueueByTime), which may be stored before it, and a
time past the last message answers the last message's offset.  The help must not promise "the first message
stored at or after TIME" (tests/integration/test_message_queue_cli.py shows the nearest answer in action)."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import main


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare the words


def test_print_queue_time_bounds_are_described_as_the_nearest_message(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "message", "print-queue")
    assert "at or after" not in text
    text = text[text.index("options:"):]
    begin = text[text.index("--begin TIME"):text.index("--begin-offset N")]
    end = text[text.index("--end TIME"):text.index("--end-offset N")]
    assert "nearest TIME" in begin and "may be stored before" in begin
    assert "nearest TIME" in end and "past the last message" in end
