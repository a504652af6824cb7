"""The CLI's time arguments in mqadmin's ``yyyy-MM-dd#HH:mm:ss:SSS`` form read as mqadmin reads them (4.9.3's
UtilAll.parseDate, a lenient SimpleDateFormat): SSS is a count of milliseconds, so "…:05:6" is 6 ms past the
second, not 600; and a text that only looks numeric is refused as "not a time", not with a traceback."""

from __future__ import annotations

import argparse
from datetime import datetime

import pytest

from rocketstore.cli.main import main
from rocketstore.cli.output import parse_time_ms

SECOND_MS = int(datetime(2024, 1, 2, 3, 4, 5).timestamp()) * 1000  # local time, as mqadmin's JVM zone


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-01-02#03:04:05:006", SECOND_MS + 6),
    ("2024-01-02#03:04:05:6", SECOND_MS + 6),
    ("2024-01-02#03:04:05:60", SECOND_MS + 60),
    ("2024-01-02#03:04:05:999", SECOND_MS + 999),
    ("2024-01-02#03:04:05:1234", SECOND_MS + 1234),  # lenient: past the second, as SimpleDateFormat
    (" 2024-01-02#03:04:05:000 ", SECOND_MS),
    ("2024-01-02T03:04:05.006", SECOND_MS + 6),
    ("1700000000000", 1700000000000),
    (" 1700000000000 ", 1700000000000),
])
def test_times_read_as_mqadmin_reads_them(text: str, expected: int) -> None:
    assert parse_time_ms(text, -1) == expected


@pytest.mark.parametrize("text", ["--5", "²", "-²", "٣", "2024-01-02#03:04:05:x", "2024-01-02#03:04:65:000", ""])
def test_texts_that_only_look_like_times_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a time"):
        parse_time_ms(text, -1)


def test_the_query_command_refuses_such_a_time_with_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    # refused before any connection: the name server address is never dialled
    status = main(["message", "query", "-t", "T", "-k", "k", "--begin", "²", "-n", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("rocketstore: error: not a time") and len(err.splitlines()) == 1, err
