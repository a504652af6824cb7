"""Nested parentheses in SQL92 filters, as a program that folds a list into an expression writes them
(``((a = '0' OR a = '1') OR a = '2') ...``).  4.9.3's parser takes hundreds of nesting levels (its thread's
stack overflows at some 600 parentheses); ours refused anything past some 165 ("nests deeper than Python's
stack allows"), so a consumer whose filter 4.9.3 delivers by got SUBSCRIPTION_PARSE_FAILED at start.

The verdicts below were captured from 4.9.3 itself: its filter module's SelectorParser (FilterFactory's
SQL92 filter) compiling each expression and evaluating it over the properties with the broker's
MessageEvaluationContext, as ExpressionMessageFilter does.  EXC is an exception while evaluating (the
broker then does not deliver the message)."""

from __future__ import annotations

import pytest

from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql


def left_fold(n: int, op: str, term: str, first: str) -> str:
    e = first
    for i in range(1, n + 1):
        e = f"({e} {op} {term.format(i)})"
    return e


def right_fold(n: int, op: str, term: str, first: str) -> str:
    e = first
    for i in range(1, n + 1):
        e = f"({term.format(i)} {op} {e})"
    return e


def alternating(n: int) -> str:
    e = "a = '0'"
    for i in range(1, n + 1):
        e = f"({e} {'AND' if i % 2 else 'OR'} a <> '{i}')"
    return e


EXPRESSIONS = {
    "or_left_300": left_fold(300, "OR", "a = '{}'", "a = '0'"),
    "or_right_300": right_fold(300, "OR", "a = '{}'", "a = '0'"),
    "and_left_300": left_fold(300, "AND", "a <> '{}'", "a IS NOT NULL"),
    "parens_500": "(" * 500 + "a = 1" + ")" * 500,
    "or_left_250_then_c": left_fold(250, "OR", "a = '{}'", "(b = 5)") + " OR c = 'x'",
    "and_or_150": alternating(150),
}

PROPS = [{"a": "300"}, {"a": "0"}, {"a": "301"}, {}, {"a": "150"}, {"a": "1", "b": "oops"},
         {"a": "x", "b": "5"}, {"b": "oops", "c": "x"}, {"c": "x"}, {"a": "1.0"}]

# 4.9.3's results, one per PROPS entry, for each expression (captured from 4.9.3, see the module's doc)
VERDICTS = {
    "or_left_300": "TRUE TRUE FALSE NULL TRUE TRUE FALSE NULL NULL FALSE",
    "or_right_300": "TRUE TRUE FALSE NULL TRUE TRUE FALSE NULL NULL FALSE",
    "and_left_300": "FALSE TRUE TRUE FALSE FALSE FALSE TRUE FALSE FALSE TRUE",
    "parens_500": "FALSE FALSE FALSE NULL FALSE TRUE EXC NULL NULL EXC",
    "or_left_250_then_c": "NULL NULL NULL NULL TRUE EXC TRUE EXC TRUE NULL",
    "and_or_150": "TRUE TRUE TRUE NULL TRUE TRUE TRUE NULL NULL TRUE",
}

_EXPECTED = {"TRUE": True, "FALSE": False, "NULL": None}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_deeply_parenthesized_filters_compile_and_evaluate_as_4_9_3(name: str) -> None:
    f = compile_sql(EXPRESSIONS[name])
    for props, verdict in zip(PROPS, VERDICTS[name].split(), strict=True):
        if verdict == "EXC":
            with pytest.raises(ValueError):
                f.evaluate(props)
            assert f.matches(props) is False
        else:
            assert f.evaluate(props) is _EXPECTED[verdict], (props, verdict)
            assert f.matches(props) is (verdict == "TRUE")


def test_a_folded_chain_keeps_left_to_right_short_circuit() -> None:
    # ((b = 5 OR a = '1') OR ...) OR c = 'x': b is converted first, so "oops" fails before c is looked at,
    # unless an earlier term is TRUE
    f = compile_sql(EXPRESSIONS["or_left_250_then_c"])
    with pytest.raises(ValueError):
        f.evaluate({"b": "oops", "a": "nope", "c": "x"})
    assert f.evaluate({"b": "5", "c": "oops"}) is True


def test_parenthesized_operands_are_still_checked_as_4_9_3_checks_them() -> None:
    # refused by 4.9.3 too: a string where a boolean operand of OR is needed, and an unclosed parenthesis
    for bad in ("(" * 300 + "'x'" + ")" * 300 + " OR a = 1", "(" * 300 + "a = 1" + ")" * 299,
                left_fold(300, "OR", "a = '{}'", "a = '0'") + " OR 5"):
        with pytest.raises(SqlSyntaxError):
            compile_sql(bad)


def test_absurd_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(SqlSyntaxError, match="nests"):
        compile_sql("(" * 5000 + "a = 1" + ")" * 5000)
