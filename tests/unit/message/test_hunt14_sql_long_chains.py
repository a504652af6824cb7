"""Long AND / OR chains, as a program that builds a filter from a list writes them (``a = 'v0' OR a = 'v1'
OR ...``): 4.9.3 parses a chain in a loop and takes thousands of terms; the nesting limit of
message/sql_filter.py must not refuse them, and a chain must keep 4.9.3's left-to-right short-circuit and
three-valued results."""

from __future__ import annotations

import pytest

from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql


def chain(op: str, terms: list[str]) -> str:
    return f" {op} ".join(terms)


def test_a_chain_of_thousands_of_or_terms_compiles_and_matches_as_4_9_3() -> None:
    f = compile_sql(chain("OR", [f"a = 'v{i}'" for i in range(3000)]))
    assert f.matches({"a": "v0"}) and f.matches({"a": "v2999"})
    assert f.evaluate({"a": "other"}) is False
    assert f.evaluate({}) is None  # every term unknown


def test_a_chain_of_thousands_of_and_terms_compiles_and_matches_as_4_9_3() -> None:
    f = compile_sql(chain("AND", [f"n{i} IS NULL" for i in range(3000)]))
    assert f.matches({"a": "x"})
    assert f.evaluate({"n2999": "1"}) is False


def test_a_long_chain_keeps_three_valued_logic_and_left_to_right_short_circuit() -> None:
    terms = [f"a = 'v{i}'" for i in range(600)]
    ors = compile_sql(chain("OR", [*terms, "b = 5", "c = 'x'"]))
    with pytest.raises(ValueError):  # b = 5 is reached before c = 'x': "oops" is not an integer
        ors.evaluate({"c": "x", "b": "oops", "a": "q"})
    assert ors.evaluate({"a": "v599", "b": "oops"}) is True  # TRUE before b: b is never converted
    assert ors.evaluate({"a": "q", "b": "6"}) is None  # c unknown, nothing TRUE
    assert ors.evaluate({"a": "q", "b": "6", "c": "y"}) is False

    ands = compile_sql(chain("AND", ["a IS NULL"] * 600 + ["b = 5", "c = 'x'"]))
    assert ands.evaluate({"b": "4", "c": "x"}) is False
    assert ands.evaluate({"c": "x"}) is None
    assert ands.evaluate({"b": "5", "c": "x"}) is True
    assert ands.evaluate({"a": "1", "b": "oops"}) is False  # FALSE first: b is never converted


def test_mixed_long_chains_group_as_4_9_3_and_binds_tighter_than_or() -> None:
    f = compile_sql(chain("OR", [chain("AND", [f"a{i}{j} = 1" for j in range(3)]) for i in range(500)]))
    assert f.matches({"a4990": "1", "a4991": "1", "a4992": "1"})
    assert not f.matches({"a4990": "1", "a4991": "1", "a4992": "2"})


def test_chain_operands_are_still_checked_as_4_9_3_checks_them() -> None:
    for bad in ("5 OR " + chain("OR", ["a = 1"] * 500), chain("OR", ["a = 1"] * 500) + " OR 'x'",
                chain("AND", ["a = 1"] * 500) + " AND -b", chain("OR", ["a = 1"] * 500) + " OR"):
        with pytest.raises(SqlSyntaxError):
            compile_sql(bad)
    assert compile_sql(chain("OR", ["a"] * 500)).evaluate({"a": "true"}) is False  # bare properties, cast


def test_deep_nesting_other_than_a_chain_is_still_limited() -> None:
    with pytest.raises(SqlSyntaxError, match="nests"):
        compile_sql("NOT " * 1000 + "a = 1")
