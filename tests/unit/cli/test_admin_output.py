"""The pure parts of the admin and client commands: names, times, bodies and tables as printed."""

from __future__ import annotations

import argparse

import pytest

from rocketstore.cli.admin_cmds import parse_time_ms
from rocketstore.cli.output import BODY_PREVIEW_CHARS, body_text, namesrv_list, print_table
from rocketstore.client.admin import InvalidNameError, check_name


@pytest.mark.parametrize("name", ["TopicA", "%RETRY%group-1", "a_b|c", "x" * 127])
def test_names_rocketmq_accepts_pass(name: str) -> None:
    assert check_name("topic", name) == name


@pytest.mark.parametrize("name", ["", "has space", "slash/y", "ünï", "x" * 256, "dot.ted"])
def test_other_names_are_refused_with_the_reason(name: str) -> None:
    with pytest.raises(InvalidNameError, match="invalid group name"):
        check_name("group", name)


def test_times_are_epoch_milliseconds_or_iso() -> None:
    assert parse_time_ms(None, 7) == 7
    assert parse_time_ms("1700000000000", 0) == 1700000000000
    assert parse_time_ms("2023-11-14T22:13:20+00:00", 0) == 1700000000000
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time_ms("yesterday", 0)


def test_bodies_print_as_text_or_base64_and_are_cut_unless_asked() -> None:
    assert body_text("grüße\n\tok".encode(), False) == ("grüße\n\tok", "utf-8", False)
    assert body_text(b"\x00\x01\xff", False) == ("AAH/", "base64", False)
    assert body_text(b"bell\x07", False) == ("YmVsbAc=", "base64", False)
    long = b"y" * (BODY_PREVIEW_CHARS + 1)
    assert body_text(long, False) == ("y" * BODY_PREVIEW_CHARS, "utf-8", True)
    assert body_text(long, True) == (long.decode(), "utf-8", False)


def test_tables_align_columns_and_right_align_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(["TOPIC", "QID", "DIFF"], [("a", 0, 12), ("longer", 10, 3)], right=(1, 2))
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC   QID  DIFF",
        "a         0    12",
        "longer   10     3",
    ]


def test_name_server_addresses_are_checked_before_anything_runs() -> None:
    assert namesrv_list("127.0.0.1:9876") == "127.0.0.1:9876"
    assert namesrv_list(" a:1 ; b:2 ;") == "a:1;b:2"
    for bad in ("", ";", "host", "host:", ":9876", "h:port", "h:0", "h:70000"):
        with pytest.raises(argparse.ArgumentTypeError):
            namesrv_list(bad)
