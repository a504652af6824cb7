"""The SQL92 lexer past the text's last line break (hunt 26 review): a ``--`` comment must end in a line
break, so there none is tried.  Trying one scanned to the end of the text at every ``-``: a filter of a
long run of minus signs lexed in quadratic time on the broker's loop (30,000 of them: 3.8 s), more so once
the parser stopped running out of Python's stack on it."""

from __future__ import annotations

import re

import pytest

from rocketstore.message import sql_filter
from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql


class _CountingPattern:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.scanned += len(text) - pos  # what a failing comment alternative may read
        return self.pattern.match(text, pos)


def test_no_comment_is_tried_after_the_last_line_break(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingPattern(sql_filter._SKIP)
    monkeypatch.setattr(sql_filter, "_SKIP", counting)
    text = "a = " + "-" * 3000 + "1 AND b = 'x'"
    lexer = sql_filter._Lexer(text)
    while lexer.next().kind != "EOF":
        pass
    assert counting.scanned == 0


@pytest.mark.parametrize(("expression", "props", "verdict"), [
    ("a = 1 -- the rest of the line\n AND b = 2", {"a": "1", "b": "2"}, True),
    ("a = 1\n-- a whole line\nAND b = 3", {"a": "1", "b": "2"}, False),
    ("a\n=\n1 /* a block */ AND b = 2", {"a": "1", "b": "2"}, True),
    ("a = 1 AND b = 2\n", {"a": "1", "b": "2"}, True),
    ("a = --x\n-1", {"a": "-1"}, True),
])
def test_comments_and_line_breaks_read_as_before(expression: str, props: dict[str, str], verdict: bool) -> None:
    assert compile_sql(expression).evaluate(props) is verdict


def test_a_long_run_of_minus_signs_is_refused_without_a_crash() -> None:
    with pytest.raises(SqlSyntaxError):
        compile_sql("a = " + "-" * 30000 + "1")
