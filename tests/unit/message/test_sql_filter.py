"""The SQL92 filter language of RocketMQ 4.9.3 (message/sql_filter.py): parsing, the checks 4.9.3 makes
when it parses, Java's conversions when it compares, three-valued logic, and a hypothesis comparison with
an evaluation written straight from a generated tree."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql

Props = dict[str, str]


def result(expression: str, props: Props) -> bool | None | str:
    """The three-valued result, or "error" when a value does not convert."""
    try:
        return compile_sql(expression).evaluate(props)
    except ValueError:
        return "error"


# --- comparisons ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "props", "expected"), [
    ("a = 5", {"a": "5"}, True),
    ("a = 5", {"a": "6"}, False),
    ("a <> 5", {"a": "6"}, True),
    ("a > 5", {"a": "6"}, True),
    ("a > 5", {"a": "5"}, False),
    ("a >= 5", {"a": "5"}, True),
    ("a < 5", {"a": "4"}, True),
    ("a < 5", {"a": "5"}, False),
    ("a <= 5", {"a": "5"}, True),
    ("a = 'eu'", {"a": "eu"}, True),
    ("a = 'eu'", {"a": "EU"}, False),
    ("a <> 'eu'", {"a": "us"}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a = ''", {"a": ""}, True),
    ("a = b", {"a": "x", "b": "x"}, True),
    ("a = TRUE", {"a": "TRUE"}, True),  # a string against a boolean: Boolean.valueOf, any case
    ("a = FALSE", {"a": "yes"}, True),
    ("TRUE = a", {"a": "true"}, "error"),  # the other way round Java casts the Boolean to String and fails
    ("5 = a", {"a": "5"}, True),
    ("5 < a", {"a": "7"}, True),
])
def test_each_comparison_operator(expression: str, props: Props, expected: object) -> None:
    assert result(expression, props) == expected
    assert compile_sql(expression).matches(props) is (expected is True)


@pytest.mark.parametrize(("expression", "props", "expected"), [
    # a string against an integer literal parses as Java's Integer (32-bit), against a 64-bit literal as Long
    ("a = 5", {"a": "+5"}, True),
    ("a = 5", {"a": "05"}, True),
    ("a = 5", {"a": "5.0"}, "error"),
    ("a = 5", {"a": " 5"}, "error"),
    ("a = 5", {"a": "abc"}, "error"),
    ("a > 5", {"a": "3000000000"}, "error"),  # beyond Integer
    ("a > 2147483648", {"a": "3000000000"}, True),  # the literal is a Long: the string parses as one
    ("a > -1", {"a": "-0"}, True),
    # against a decimal literal, as Java's Double.valueOf: surrounding blanks, suffixes, NaN, hex
    ("a = 5.0", {"a": "5"}, True),
    ("a = 5.0", {"a": " 5.0d "}, True),
    ("a > 1.5", {"a": "0x1p1"}, True),
    ("a > 1.5", {"a": "NaN"}, True),  # Double.compareTo puts NaN above everything
    ("a < 1.5", {"a": "-Infinity"}, True),
    ("a > 1.5", {"a": "inf"}, "error"),
    ("a > 1.5", {"a": "1_0"}, "error"),
    # two strings under an ordering compare as doubles; a non-number there is an error
    ("a > b", {"a": "10", "b": "9"}, True),
    ("a > b", {"a": "10", "b": "x"}, "error"),
    ("a = b", {"a": "10", "b": "10.0"}, False),  # = of two strings compares the strings
    # integer and decimal literals compare numerically
    ("2.5 > 2", {}, True),
    ("2 = 2.0", {}, True),
    ("2147483648 > 2147483647", {}, True),
    # negation: of a number; a string property negates to NULL
    ("-a > 1", {"a": "-5"}, None),
    ("a > -3", {"a": "-2"}, True),
    ("a > - -3", {"a": "2"}, False),
    ("a > +3", {"a": "4"}, True),
])
def test_numeric_and_string_conversions_follow_java(expression: str, props: Props, expected: object) -> None:
    assert result(expression, props) == expected
    assert compile_sql(expression).matches(props) is (expected is True)


def test_between_and_not_between() -> None:
    assert result("a BETWEEN 2 AND 4", {"a": "2"}) is True
    assert result("a BETWEEN 2 AND 4", {"a": "4"}) is True
    assert result("a BETWEEN 2 AND 4", {"a": "5"}) is False
    assert result("a NOT BETWEEN 2 AND 4", {"a": "5"}) is True
    assert result("a NOT BETWEEN 2 AND 4", {"a": "3"}) is False
    assert result("a BETWEEN 2 AND 4", {}) is None
    assert result("a NOT BETWEEN 2 AND 4", {}) is None
    assert result("a BETWEEN 2.0 AND 4.5", {"a": "4.25"}) is True
    assert result("a BETWEEN 2 AND 4.5", {"a": "4.25"}) == "error"  # a >= 2 parses "4.25" as an Integer
    assert result("a BETWEEN 2 AND 4", {"a": "x"}) == "error"


def test_in_and_not_in() -> None:
    assert result("a IN ('x', 'y')", {"a": "y"}) is True
    assert result("a IN ('x', 'y')", {"a": "z"}) is False
    assert result("a NOT IN ('x', 'y')", {"a": "z"}) is True
    assert result("a NOT IN ('x', 'y')", {"a": "x"}) is False
    assert result("a IN ('x')", {}) is None
    assert result("a NOT IN ('x')", {}) is None
    assert result("(a) IN ('x')", {"a": "x"}) is True  # parentheses are transparent
    assert result("a IN ('1', '2', '3', '4', '5', '6')", {"a": "6"}) is True


# --- NULL and three-valued logic ------------------------------------------------------------------


def test_is_null_and_is_not_null() -> None:
    assert result("a IS NULL", {}) is True
    assert result("a IS NULL", {"a": "1"}) is False
    assert result("a IS NOT NULL", {"a": "1"}) is True
    assert result("a IS NOT NULL", {}) is False
    assert result("NULL IS NULL", {}) is True
    assert result("5 IS NOT NULL", {}) is True


def test_a_missing_property_makes_a_comparison_unknown() -> None:
    for expression in ("a = 5", "a <> 5", "a > 5", "a <= 5", "a = 'x'", "a <> 'x'", "5 < a", "a > b"):
        assert result(expression, {}) is None, expression
        assert not compile_sql(expression).matches({})
    assert result("a = b", {}) is True  # two NULLs are equal to 4.9.3's =


def test_equality_with_null_on_the_right_only_is_false_as_in_4_9_3() -> None:
    assert result("'x' = a", {}) is False
    assert result("'x' <> a", {}) is True  # so this one matches a message without the property
    assert result("a = b", {"a": "1"}) is False
    assert result("a = b", {"b": "1"}) is None


def test_and_or_not_follow_three_valued_logic() -> None:
    t, f, u = "TRUE", "FALSE", "NULL"
    table = {
        (t, "AND", t): True, (t, "AND", f): False, (t, "AND", u): None, (f, "AND", u): False,
        (u, "AND", f): False, (u, "AND", u): None,
        (t, "OR", u): True, (u, "OR", t): True, (f, "OR", u): None, (f, "OR", f): False, (u, "OR", u): None,
    }
    for (left, op, right), expected in table.items():
        assert result(f"{left} {op} {right}", {}) is expected, (left, op, right)
    assert result("NOT TRUE", {}) is False
    assert result("NOT NULL", {}) is None
    assert result("NOT (a = 1)", {}) is None
    assert result("NOT (a = 1)", {"a": "2"}) is True


def test_logic_short_circuits_left_to_right_so_a_later_error_does_not_count() -> None:
    assert result("a = 'x' OR b = 5", {"a": "x", "b": "oops"}) is True
    assert result("b = 5 OR a = 'x'", {"a": "x", "b": "oops"}) == "error"
    assert result("a = 'y' AND b = 5", {"a": "x", "b": "oops"}) is False
    assert not compile_sql("b = 5 OR a = 'x'").matches({"a": "x", "b": "oops"})


def test_a_bare_property_is_boolean_but_never_true() -> None:
    assert result("a", {"a": "true"}) is False
    assert result("a", {}) is None
    assert result("a OR TRUE", {"a": "x"}) is True


# --- precedence and the grammar's quirks ---------------------------------------------------------


def test_and_binds_tighter_than_or() -> None:
    assert result("TRUE OR FALSE AND FALSE", {}) is True
    assert result("(TRUE OR FALSE) AND FALSE", {}) is False
    assert result("a = 1 OR b = 2 AND c = 3", {"a": "1"}) is True


def test_comparison_binds_tighter_than_equality_and_both_group_left() -> None:
    assert result("a > 1 = TRUE", {"a": "2"}) is True  # (a > 1) = TRUE
    assert result("a = 1 = TRUE", {"a": "1"}) is True


def test_not_takes_only_the_operand_after_it() -> None:
    assert result("NOT a = 1", {"a": "1"}) is False  # (NOT a) = 1: a boolean never equals a number
    assert result("NOT (a = 1)", {"a": "2"}) is True
    with pytest.raises(SqlSyntaxError):
        compile_sql("NOT a > 1")  # (NOT a) > 1: a boolean cannot be ordered


def test_keywords_ignore_case_and_property_names_do_not() -> None:
    assert result("a between 1 and 3 and b is not null or c in ('x')", {"a": "2", "b": "1"}) is True
    assert result("A = 1", {"a": "1"}) is None
    assert result("Not TRUE", {}) is False


def test_identifiers_literals_and_comments() -> None:
    assert result("$x_1 = 1", {"$x_1": "1"}) is True
    assert result("notable = 1", {"notable": "1"}) is True  # a keyword prefix is an identifier
    assert result("a = 5L", {"a": "5"}) is True
    assert result("a = 5.", {"a": "5"}) is True
    assert result("a = .5", {"a": "0.5"}) is True
    assert result("a = 5E1", {"a": "50"}) is True
    assert result("a = 1 /* note */ AND b = 2 -- tail\n", {"a": "1", "b": "2"}) is True
    assert result("a = 007", {"a": "0"}) is True  # 4.9.3 reads "0", then ignores the rest


def test_text_after_a_complete_expression_is_ignored_as_in_4_9_3() -> None:
    assert result("a = 1 b = 2", {"a": "1", "b": "3"}) is True
    assert result("a = 1)", {"a": "1"}) is True
    assert result("a = 1 - 2", {"a": "1"}) is True
    with pytest.raises(SqlSyntaxError):
        compile_sql("a = 1 #")  # ... but the next token must still be one
    # 4.9.3 has no LIKE / CONTAINS / STARTSWITH / ENDSWITH: these read as the bare property "a", never TRUE
    for expression in ("a LIKE 'x'", "a CONTAINS 'x'", "a STARTSWITH 'x'", "a ENDSWITH 'x'"):
        assert result(expression, {"a": "x"}) is False, expression


# --- syntax errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", [
    "", "   ", "a >", "a = ", "(a = 1", "a IN ()", "a IN (1)", "a IN 'x'", "a IS 5", "a IS NOT 5",
    "a BETWEEN 1", "a NOT 5", "a != 1", "a == 1", "a = 'x", "a = 1 AND", "AND a = 1",
    "a.b = 1", "a = #", "/* open",
    # checks 4.9.3 makes while it parses
    "5", "'x'", "-a", "a = NULL", "NULL = a", "a > 'x'", "a > TRUE", "a > NULL", "(a = 1) > 2",
    "TRUE = 1", "1 IN ('x')", "a BETWEEN 5 AND 1", "a BETWEEN NULL AND 1", "a BETWEEN 'a' AND 'b'",
    "a > 0.0", "a > 1e-400", "a > 1e400", "a = 9223372036854775808", "NOT 5", "5 AND a = 1",
])
def test_invalid_expressions_raise_a_syntax_error(expression: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        compile_sql(expression)
    assert info.value.expression == expression
    assert str(info.value).startswith("invalid SQL92 filter")


def test_a_syntax_error_says_where() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        compile_sql("a = 1 AND b >")
    assert info.value.position == len("a = 1 AND b >")
    assert "column 14" in str(info.value)


def test_quirks_that_do_parse() -> None:
    # BETWEEN checks the order of literal bounds only; a negated bound is not a literal
    assert result("a BETWEEN -1 AND -5", {"a": "-3"}) is False
    assert result("1 = TRUE", {}) is False  # a literal on the left of a boolean literal is allowed
    assert result("a = 9223372036854775807", {"a": "9223372036854775807"}) is True


def test_compiled_filters_are_cached_by_text() -> None:
    assert compile_sql("x > 1") is compile_sql("x > 1")
    with pytest.raises(SqlSyntaxError):
        compile_sql("x >")
    with pytest.raises(SqlSyntaxError):
        compile_sql("x >")


# --- hypothesis: the evaluator against a direct evaluation of a generated tree ---------------------


class Boom(Exception):
    """A value that does not convert (the expected evaluation's error)."""


@dataclass(frozen=True)
class Cmp:  # prop OP integer
    prop: str
    op: str
    number: int


@dataclass(frozen=True)
class StrEq:  # prop = 'text' (or text on the left)
    prop: str
    op: str
    text: str
    text_first: bool


@dataclass(frozen=True)
class In:
    prop: str
    texts: tuple[str, ...]
    negated: bool


@dataclass(frozen=True)
class IsNull:
    prop: str
    negated: bool


@dataclass(frozen=True)
class Between:
    prop: str
    low: int
    high: int
    negated: bool


@dataclass(frozen=True)
class Lit:
    value: bool


@dataclass(frozen=True)
class Not:
    operand: object


@dataclass(frozen=True)
class Logic:
    op: str
    left: object
    right: object


PROPS = ("a", "b", "c")
TEXTS = ("x", "y", "eu", "5", "")
VALUES = st.one_of(st.integers(-20, 20).map(str), st.sampled_from(["x", "eu", "", "1.5", "+3", "007", "-0"]))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _number(n: int) -> str:
    return str(n) if n >= 0 else f"-{-n}"


atoms = st.one_of(
    st.builds(Cmp, st.sampled_from(PROPS), st.sampled_from(["=", "<>", ">", ">=", "<", "<="]), st.integers(-10, 10)),
    st.builds(StrEq, st.sampled_from(PROPS), st.sampled_from(["=", "<>"]), st.sampled_from(TEXTS), st.booleans()),
    st.builds(In, st.sampled_from(PROPS), st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3).map(tuple),
              st.booleans()),
    st.builds(IsNull, st.sampled_from(PROPS), st.booleans()),
    st.builds(lambda p, lo, span, neg: Between(p, lo, lo + span, neg), st.sampled_from(PROPS),
              st.integers(-5, 5), st.integers(0, 5), st.booleans()),
    st.builds(Lit, st.booleans()),
)
trees = st.recursive(atoms, lambda inner: st.one_of(
    st.builds(Not, inner), st.builds(Logic, st.sampled_from(["AND", "OR"]), inner, inner)), max_leaves=8)


def render(node: object, kw: str) -> str:
    """SQL text with only the parentheses the grammar needs; *kw* is "upper" or "lower" for keywords."""
    def k(word: str) -> str:
        return word.upper() if kw == "upper" else word.lower()

    if isinstance(node, Cmp):
        return f"{node.prop} {node.op} {_number(node.number)}"
    if isinstance(node, StrEq):
        if node.text_first:
            return f"{_quote(node.text)} {node.op} {node.prop}"
        return f"{node.prop} {node.op} {_quote(node.text)}"
    if isinstance(node, In):
        return f"{node.prop} {k('NOT ') if node.negated else ''}{k('IN')} ({', '.join(map(_quote, node.texts))})"
    if isinstance(node, IsNull):
        return f"{node.prop} {k('IS')} {k('NOT ') if node.negated else ''}{k('NULL')}"
    if isinstance(node, Between):
        return (f"{node.prop} {k('NOT ') if node.negated else ''}{k('BETWEEN')} {_number(node.low)} {k('AND')} "
                f"{_number(node.high)}")
    if isinstance(node, Lit):
        return k("TRUE") if node.value else k("FALSE")
    if isinstance(node, Not):
        return f"{k('NOT')} ({render(node.operand, kw)})"
    assert isinstance(node, Logic)
    left, right = render(node.left, kw), render(node.right, kw)
    # AND binds tighter than OR and both group to the left: parenthesise a right operand of the same or
    # looser operator, and an OR under an AND
    if isinstance(node.left, Logic) and node.op == "AND" and node.left.op == "OR":
        left = f"({left})"
    if isinstance(node.right, Logic) and (node.op == "AND" or node.right.op == "OR"):
        right = f"({right})"
    return f"{left} {k(node.op)} {right}"


def as_int32(value: str) -> int:
    """Java's Integer.valueOf for the values the strategy makes."""
    body = value[1:] if value[:1] in "+-" else value
    if not body or not body.isdigit():
        raise Boom(value)
    return -int(body) if value.startswith("-") else int(body)


def expect(node: object, props: Props) -> bool | None:
    if isinstance(node, Cmp):
        v = props.get(node.prop)
        if v is None:
            return None
        n = as_int32(v)
        return {"=": n == node.number, "<>": n != node.number, ">": n > node.number, ">=": n >= node.number,
                "<": n < node.number, "<=": n <= node.number}[node.op]
    if isinstance(node, StrEq):
        v = props.get(node.prop)
        if v is None:
            # NULL on the right only is FALSE for =, so TRUE for <>; NULL on the left is unknown
            return (node.op == "<>") if node.text_first else None
        return (v == node.text) == (node.op == "=")
    if isinstance(node, In):
        v = props.get(node.prop)
        return None if v is None else (v in node.texts) != node.negated
    if isinstance(node, IsNull):
        return (props.get(node.prop) is None) != node.negated
    if isinstance(node, Between):
        v = props.get(node.prop)
        if v is None:
            return None
        n = as_int32(v)
        inside = node.low <= n <= node.high
        return not inside if node.negated else inside
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Not):
        inner = expect(node.operand, props)
        return None if inner is None else not inner
    assert isinstance(node, Logic)
    left = expect(node.left, props)
    if node.op == "AND":
        if left is False:
            return False
        right = expect(node.right, props)
        if right is False:
            return False
        return None if left is None or right is None else True
    if left is True:
        return True
    right = expect(node.right, props)
    if right is True:
        return True
    return None if left is None or right is None else False


@settings(max_examples=400, deadline=None)
@given(tree=trees, props=st.dictionaries(st.sampled_from(PROPS), VALUES), kw=st.sampled_from(["upper", "lower"]))
def test_the_evaluator_agrees_with_a_direct_evaluation_of_the_tree(tree: object, props: Props, kw: str) -> None:
    text = render(tree, kw)
    compiled = compile_sql(text)
    try:
        wanted: bool | None | str = expect(tree, props)
    except Boom:
        wanted = "error"
    assert result(text, props) == wanted, text
    assert compiled.matches(props) is (wanted is True), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 '()=<>-.,*/!#NOTANDORISLE\n")), max_size=30))
def test_any_text_compiles_or_raises_the_syntax_error_type(text: str) -> None:
    try:
        compiled = compile_sql(text)
    except SqlSyntaxError:
        return
    assert compiled.matches({"a": "1", "b": "x"}) in (True, False)


# --- what the filter is given: a stored record's properties (store/reads.py) ----------------------


@pytest.mark.parametrize(("born", "store"), [("10.0.0.1:1", "10.0.0.2:2"), ("[::1]:1", "10.0.0.2:2"),
                                             ("10.0.0.1:1", "[fe80::1]:2"), ("[::1]:1", "[::2]:2")])
def test_the_store_reads_a_records_properties_as_the_codec_decodes_them(born: str, store: str) -> None:
    from rocketstore.message.host import parse_host
    from rocketstore.message.properties import parse_properties
    from rocketstore.message.record import Message, decode_record, encode_record
    from rocketstore.store.reads import record_properties

    message = Message.create("TopicA", b"body" * 10, tags="T", properties={"a": "5", "region": "eu", "e": ""})
    data, _ = encode_record(message, born_host=parse_host(born), store_host=parse_host(store))
    record = bytes(data)
    expected = parse_properties(decode_record(record).properties_string)
    assert record_properties(record) == expected
    assert expected["a"] == "5" and "e" not in expected  # empty values vanish, as in Java's parse
    for cut in (0, 20, 40, len(record) - 30, len(record) - 1):
        assert record_properties(record[:cut]) is None, cut


def test_huge_or_deep_input_is_a_syntax_error_or_no_match_never_a_crash() -> None:
    # 300 parentheses parse in 4.9.3 (and here); 5000 overflow its stack
    for expression in ("(" * 5000 + "a = 1" + ")" * 5000, "NOT " * 500 + "TRUE", "a = " + "9" * 5000):
        with pytest.raises(SqlSyntaxError) as info:
            compile_sql(expression)
        assert len(str(info.value)) < 400
    assert compile_sql(" AND ".join(["a = 1"] * 1000)).matches({"a": "1"})  # a chain is one level, as in 4.9.3
    equal_5 = compile_sql("a = 5")
    assert equal_5.matches({"a": "0" * 5000 + "5"})  # leading zeros, as Integer.valueOf reads them
    assert not equal_5.matches({"a": "5" * 5000})
    assert equal_5.matches({"a": "\u0665"})  # Java's Character.digit reads any script's digits
