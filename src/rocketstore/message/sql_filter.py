"""SQL92 message filters: the expression language of RocketMQ 4.9.3's ``MessageSelector.bySql``.

A consumer subscribing with expression type ``SQL92`` gives a boolean expression over message properties;
a broker with ``enablePropertyFilter=true`` delivers only the messages for which it is TRUE.  This module
parses such an expression (:func:`compile_sql`) into a :class:`SqlFilter` and evaluates it against a
message's properties.  It is pure: no I/O, no clocks, no locks; the broker and the tests use it directly.

What 4.9.3's filter module accepts and how it evaluates, kept here on purpose (several are quirks):

* Grammar, loosest first: ``OR``; ``AND``; ``=`` / ``<>`` / ``IS [NOT] NULL``; ``>`` ``>=`` ``<`` ``<=``
  ``[NOT] BETWEEN x AND y`` ``[NOT] IN ('s', ...)``; the prefixes ``+`` ``-`` ``NOT``; literals,
  identifiers and parentheses.  Binary operators group to the left.  ``NOT`` takes only the operand
  right after it, so ``NOT a = 1`` is ``(NOT a) = 1`` and ``NOT a > 1`` does not parse.  There is no
  ``!=``, ``LIKE``, ``CONTAINS``, ``STARTSWITH`` or ``ENDSWITH`` in 4.9.3.
* Keywords ignore case; an identifier is ``[A-Za-z_$][A-Za-z0-9_$]*`` and names a property
  (case-sensitively).  Integers are ``0`` or ``[1-9][0-9]*`` with an optional ``L`` (32-bit when they fit,
  else 64-bit; a larger one does not parse); decimals such as ``5.5``, ``5.``, ``.5``, ``5E10`` are doubles,
  and one that is zero or infinite does not parse.  Strings are single-quoted with ``''`` for a quote.
  ``--`` comments run to a line end, ``/* */`` comments anywhere.
* Parsing stops at the end of the expression: whatever follows a complete expression is ignored, save
  that the token right after it must be a valid token.  ``a = 1 b`` filters by ``a = 1``.
* Checks made when parsing: ``>`` ``>=`` ``<`` ``<=`` and ``BETWEEN`` do not take a string, boolean or
  NULL literal, nor a boolean expression; ``=`` / ``<>`` do not take NULL; ``TRUE = 1`` is refused (a boolean
  literal on the left of another literal); the left of ``IN`` is a property; ``BETWEEN`` with two literal
  bounds needs them in order; the whole expression (and each operand of AND, OR, NOT) must be boolean: a
  comparison, a logic operation, TRUE / FALSE / NULL, or a bare property (which is never TRUE: its value
  is a string, so it counts as FALSE, or as unknown when the message lacks it).
* A deliberate limit: a tree more than 400 operations deep does not compile (evaluation recurses once per
  level and must stay within Python's stack).  A chain ``x AND y AND ...`` or ``x OR y OR ...`` is one level
  however long, so chains of thousands of terms compile, as in 4.9.3, and so is a list folded with
  parentheses (``((x OR y) OR z) ...``); parentheses themselves add no level.  Parsing keeps its own stack,
  so the hundreds of nested parentheses 4.9.3 takes parse (past some 1,600 they are refused).
* Values: a property's value is its string, or NULL when the message does not have it.  Comparisons
  convert as Java's ``ComparisonExpression`` does: a string against a number is parsed as that number's
  Java type (``Integer.valueOf`` for a 32-bit literal, ``Long.valueOf`` for a 64-bit one,
  ``Double.valueOf`` for a decimal); two strings under ``>`` ``<`` ... are both parsed as doubles; a string
  against a boolean is TRUE when it is ``true`` in any case.  A value that does not convert is an
  evaluation error, and an evaluation error anywhere makes the message not match.  Doubles order as Java's
  ``Double.compareTo`` (NaN above everything, -0.0 below 0.0).
* Three-valued logic: a comparison with a NULL side is unknown, with one asymmetry kept from 4.9.3:
  ``=`` with NULL on the right only is FALSE (``'x' = missing`` is FALSE, ``missing = 'x'`` unknown), so
  ``'x' <> missing`` is TRUE, and two NULLs are equal.  AND / OR / NOT follow SQL's rules and short-circuit
  left to right.  ``IN`` of a missing property is unknown.  A message matches only when the result is TRUE.
"""

from __future__ import annotations

import math
import re
import struct
import unicodedata
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from rocketstore.errors import MessageError
from rocketstore.message.java_numbers import java_decimal_digits

__all__ = ["SQL92", "SqlFilter", "SqlSyntaxError", "compile_sql"]

#: the ``expressionType`` of an SQL92 subscription
SQL92 = "SQL92"


class SqlSyntaxError(MessageError):
    """An SQL92 filter expression that does not parse (or that 4.9.3 refuses when it parses it)."""

    def __init__(self, expression: str, reason: str, position: int | None = None) -> None:
        where = f" at column {position + 1}" if position is not None else ""
        shown = expression if len(expression) <= 200 else expression[:200] + "..."
        super().__init__(f"invalid SQL92 filter {shown!r}{where}: {reason}")
        self.expression = expression
        self.reason = reason
        self.position = position


class _EvalError(Exception):
    """A value that does not convert during evaluation (the message then does not match)."""


# --- values -------------------------------------------------------------------------------------------
# Java classes in play: Boolean -> bool, Integer -> int, Long -> _Long, Double -> float, String -> str.


class _Long(int):
    """A 64-bit literal (Java's Long), kept apart from 32-bit ones because strings convert by its type."""

    __slots__ = ()


_Value = bool | int | float | str | None
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_D = struct.Struct(">d")
_Q = struct.Struct(">q")
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_JAVA_DOUBLE = re.compile(
    r"([+-]?)(?:(NaN)|(Infinity)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP]([+-]?[0-9]+)[fFdD]?)")


def _java_double(text: str) -> float:
    """``Double.valueOf(text)``; _EvalError where Java throws NumberFormatException."""
    m = _JAVA_DOUBLE.fullmatch(text.strip(_JAVA_TRIM))
    if m is None:
        raise _EvalError(f"not a number: {text!r}")
    sign, nan, inf, dec, hex_mant, hex_exp = m.groups()
    if nan:
        return math.nan
    if inf:
        return -math.inf if sign == "-" else math.inf
    if dec is not None:
        return float(sign + dec)
    try:
        return float.fromhex(f"{sign}0x{hex_mant}p{hex_exp}")
    except OverflowError:
        return -math.inf if sign == "-" else math.inf


def _java_integer(text: str, bounds: tuple[int, int]) -> int:
    """``Integer.valueOf`` / ``Long.valueOf``: an optional sign and decimal digits (any script's, as Java's
    Character.digit takes them), within *bounds*."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not java_decimal_digits(digits):
        raise _EvalError(f"not an integer: {text!r}")
    if not digits.isascii():
        digits = "".join(str(unicodedata.decimal(ch)) for ch in digits)
    digits = digits.lstrip("0") or "0"
    if len(digits) > 19:  # beyond any long (and int() of thousands of digits refuses)
        raise _EvalError(f"integer out of range: {text[:40]!r}")
    value = int(digits)
    if text[:1] == "-":
        value = -value
    if not bounds[0] <= value <= bounds[1]:
        raise _EvalError(f"integer out of range: {text!r}")
    return value


def _double_bits(x: float) -> int:
    return 0x7FF8000000000000 if math.isnan(x) else _Q.unpack(_D.pack(x))[0]


def _double_cmp(a: float, b: float) -> int:
    """``Double.compare``: numeric, then by bits, so NaN is above +inf and -0.0 below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    ba, bb = _double_bits(a), _double_bits(b)
    return (ba > bb) - (ba < bb)


def _cmp(a: bool | float | str | bytes, b: bool | float | str | bytes) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


def _string_cmp(a: str, b: str) -> int:
    # String.compareTo orders by UTF-16 code unit; only its sign matters and only = reaches it
    return 0 if a == b else _cmp(a.encode("utf-16-be", "surrogatepass"), b.encode("utf-16-be", "surrogatepass"))


def _compare(lv: bool | float | str, rv: bool | float | str) -> int:
    """``ComparisonExpression.__compare`` with string conversion on (as every parsed expression has it)."""
    lt, rt = type(lv), type(rv)
    if lt is rt:
        if lt is float:
            return _double_cmp(lv, rv)  # type: ignore[arg-type]
        if lt is str:
            return _string_cmp(lv, rv)  # type: ignore[arg-type]
        return _cmp(lv, rv)  # type: ignore[arg-type]
    if lt is bool:
        if rt is str:  # Java casts the Boolean to String here: a ClassCastException
            raise _EvalError("a boolean cannot be compared with a string")
        return -1
    if lt is int or lt is _Long:
        if rt is int or rt is _Long:
            return _cmp(int(lv), int(rv))
        if rt is float:
            return _double_cmp(float(lv), rv)  # type: ignore[arg-type]
        if rt is str:
            return _cmp(int(lv), _java_integer(rv, _INT32 if lt is int else _INT64))  # type: ignore[arg-type]
        return -1
    if lt is float:
        if rt is int or rt is _Long:
            return _double_cmp(lv, float(rv))  # type: ignore[arg-type]
        if rt is str:
            return _double_cmp(lv, _java_double(rv))  # type: ignore[arg-type]
        return -1
    # lt is str
    if rt is bool:
        return _cmp(lv.lower() == "true" if lv.isascii() else False, rv)  # type: ignore[union-attr, arg-type]
    if rt is int or rt is _Long:
        return _cmp(_java_integer(lv, _INT32 if rt is int else _INT64), int(rv))  # type: ignore[arg-type]
    return _double_cmp(_java_double(lv), rv)  # type: ignore[arg-type]


# --- the tree -----------------------------------------------------------------------------------------
# Nodes compile to closures taking the property map; kinds drive the parse-time checks.

_Eval = Callable[[Mapping[str, str]], _Value]


@dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # "const", "bool_const", "property", "negate", "boolean"
    fn: _Eval
    value: _Value = None  # for constants
    name: str = ""  # for properties
    depth: int = 1  # nodes on the longest path down: evaluation recurses that deep
    chain: bool | None = None  # an AND (False) or OR (True) chain: its operands are in terms
    terms: tuple[_Node, ...] = ()

    @property
    def is_boolean(self) -> bool:
        return self.kind in ("boolean", "bool_const")

    @property
    def is_constant(self) -> bool:
        return self.kind in ("const", "bool_const")


def _constant(value: _Value, kind: str = "const") -> _Node:
    return _Node(kind, lambda props: value, value)


def _property(name: str) -> _Node:
    return _Node("property", lambda props: props.get(name), name=name)


def _negate(operand: _Node) -> _Node:
    inner = operand.fn

    def fn(props: Mapping[str, str]) -> _Value:
        v = inner(props)
        t = type(v)
        if t is int or t is float:
            return -v  # type: ignore[operator]
        if t is _Long:
            return _Long(-v)  # type: ignore[operator]
        return None  # NULL, strings and booleans negate to NULL

    return _Node("negate", fn, depth=operand.depth + 1)


def _boolean(fn: _Eval, *operands: _Node) -> _Node:
    return _Node("boolean", fn, depth=1 + max(o.depth for o in operands))


def _not(operand: _Node) -> _Node:
    inner = operand.fn

    def fn(props: Mapping[str, str]) -> _Value:
        v = inner(props)
        return None if v is None else not v

    return _boolean(fn, operand)


def _bool_cast(operand: _Node) -> _Node:
    inner = operand.fn

    def fn(props: Mapping[str, str]) -> _Value:
        v = inner(props)
        if v is None:
            return None
        return v if type(v) is bool else False

    return _boolean(fn, operand)


def _chain(decides: bool, operands: tuple[_Node, ...]) -> _Node:
    """``a AND b AND ...`` (*decides* False) or ``a OR b OR ...`` (True): one node for a whole chain, which
    4.9.3 builds as a left-deep tree, so a chain of thousands of terms neither counts toward the nesting
    limit nor recurses when evaluated.  The same result: operands in order, the first one that is
    *decides* ends it, else unknown if any was unknown.  An operand that is itself a chain of the same
    kind (``(a OR b) OR c``, ``a OR (b OR c)``: a list folded with parentheses) joins this one: the same
    operands in the same order, so the same result and short-circuit, without a level per fold."""
    if any(o.chain is decides for o in operands):
        operands = tuple(t for o in operands for t in (o.terms if o.chain is decides else (o,)))
    fns = tuple(o.fn for o in operands)
    otherwise = not decides

    def fn(props: Mapping[str, str]) -> _Value:
        unknown = False
        for f in fns:
            v = f(props)
            if v is decides:
                return decides
            if v is None:
                unknown = True
        return None if unknown else otherwise

    return _Node("boolean", fn, depth=1 + max(o.depth for o in operands), chain=decides, terms=operands)


def _and(*operands: _Node) -> _Node:
    return _chain(False, operands)


def _or(*operands: _Node) -> _Node:
    return _chain(True, operands)


def _equal(left: _Node, right: _Node) -> _Node:
    lf, rf = left.fn, right.fn

    def fn(props: Mapping[str, str]) -> _Value:
        lv, rv = lf(props), rf(props)
        if lv is None:
            return True if rv is None else None
        if rv is None:
            return False
        return _compare(lv, rv) == 0

    return _boolean(fn, left, right)


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0}


def _order(op: str, left: _Node, right: _Node) -> _Node:
    lf, rf, test = left.fn, right.fn, _ORDER_TESTS[op]

    def fn(props: Mapping[str, str]) -> _Value:
        lv = lf(props)
        if lv is None:
            return None
        rv = rf(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:  # two strings compare as doubles
            return test(_double_cmp(_java_double(lv), _java_double(rv)))
        return test(_compare(lv, rv))

    return _boolean(fn, left, right)


def _in(operand: _Node, values: list[str], negated: bool) -> _Node:
    inner, wanted = operand.fn, frozenset(values)

    def fn(props: Mapping[str, str]) -> _Value:
        v = inner(props)
        if type(v) is not str:
            return None
        return (v in wanted) != negated

    return _boolean(fn, operand)


# --- the lexer ----------------------------------------------------------------------------------------

#: the deepest tree compiled: evaluation recurses once per level, within Python's stack (a deliberate limit;
#: Java's stack is deeper)
_MAX_DEPTH = 400
#: the most sub-parses pending at once (about six per parenthesis, one per prefix): parsing keeps them on a
#: list of its own, not on Python's stack, so 4.9.3's hundreds of nested parentheses parse; this bounds its
#: memory (4.9.3's own stack overflows at some 600 parentheses)
_MAX_PENDING = 10_000
_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
_SKIP = re.compile(r"(?:[ \t\n\r\f]+|--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)+")
#: the same past the text's last line break, where no ``--`` comment can end: trying one there would scan to
#: the end of the text at every ``-`` (a run of minus signs lexed in quadratic time)
_SKIP_LAST_LINE = re.compile(r"(?:[ \t\f]+|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?")
_FLOAT = re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")
_STRING = re.compile(r"'(?:''|[^'])*'")
_ID = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_OPERATORS = ("<>", ">=", "<=", "=", ">", "<", "(", ",", ")", "+", "-")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # a keyword, "DECIMAL", "FLOAT", "STRING", "ID", an operator, or "EOF"
    text: str
    position: int


class _Lexer:
    """Tokens on demand, as the generated parser reads them: a bad character after the end of the
    expression matters only when it is the very next token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        #: where the last line break is (-1: none): a ``--`` comment must end in one
        self.last_break = max(text.rfind("\n"), text.rfind("\r"))

    def next(self) -> _Token:
        text, pos = self.text, self.pos
        skip = (_SKIP if pos <= self.last_break else _SKIP_LAST_LINE).match(text, pos)
        if skip:
            pos = skip.end()
        if pos >= len(text):
            self.pos = pos
            return _Token("EOF", "", pos)
        best: tuple[int, str] | None = None  # (end, kind): the longest match, the earliest kind on a tie
        for pattern, kind in ((_DECIMAL, "DECIMAL"), (_FLOAT, "FLOAT"), (_STRING, "STRING"), (_ID, "ID")):
            m = pattern.match(text, pos)
            if m and (best is None or m.end() > best[0]):
                best = (m.end(), kind)
        if best is None:
            for op in _OPERATORS:
                if text.startswith(op, pos):
                    best = (pos + len(op), op)
                    break
        if best is None:
            if text[pos] == "'":
                raise SqlSyntaxError(text, "unterminated string literal", pos)
            raise SqlSyntaxError(text, f"unexpected character {text[pos]!r}", pos)
        end, kind = best
        word = text[pos:end]
        if kind == "ID" and word.upper() in _KEYWORDS:
            kind = word.upper()
        self.pos = end
        return _Token(kind, word, pos)


# --- the parser ---------------------------------------------------------------------------------------


#: a parse step: a generator that yields the generator of each sub-parse it needs and is sent back its node
_Parse = Generator[Any, _Node, _Node]


def _run(start: _Parse, parser: _Parser) -> _Node:
    """Drive the parse steps with an explicit stack, so nesting costs no Python stack."""
    stack = [start]
    value: Any = None
    while True:
        try:
            sub = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            value = done.value
        else:
            stack.append(sub)
            value = None
            if len(stack) > _MAX_PENDING:
                parser.fail("the expression nests too deep to parse (at most some 1,600 parentheses or 10,000 "
                            "prefix operators)")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lexer = _Lexer(text)
        self.buffered: list[_Token] = []

    def peek(self, ahead: int = 0) -> _Token:
        while len(self.buffered) <= ahead:
            self.buffered.append(self.lexer.next())
        return self.buffered[ahead]

    def take(self, kind: str | None = None) -> _Token:
        token = self.peek()
        if kind is not None and token.kind != kind:
            wanted = {"STRING": "a string literal", "NULL": "NULL", "AND": "AND"}.get(kind, repr(kind))
            self.fail(f"expected {wanted} but found {self.describe(token)}", token)
        self.buffered.pop(0)
        return token

    @staticmethod
    def describe(token: _Token) -> str:
        return "the end of the expression" if token.kind == "EOF" else repr(token.text)

    def fail(self, reason: str, token: _Token | None = None) -> NoReturn:
        raise SqlSyntaxError(self.text, reason, None if token is None else token.position)

    def boolean(self, node: _Node, token: _Token) -> _Node:
        """asBooleanExpression: boolean nodes as they are, a bare property cast, anything else refused."""
        if node.is_boolean:
            return node
        if node.kind == "property":
            return _bool_cast(node)
        self.fail("the expression does not give a boolean value", token)

    def parse(self) -> _Node:
        start = self.peek()
        node = self.boolean(_run(self.or_expression(), self), start)
        if node.depth > _MAX_DEPTH:
            self.fail(f"the expression nests {node.depth} operations deep; at most {_MAX_DEPTH} are allowed")
        return node

    def or_expression(self) -> _Parse:
        start = self.peek()
        left = yield self.and_expression()
        terms: list[_Node] = []  # a chain's operands, each checked as 4.9.3 checks them, once it is parsed
        while self.peek().kind == "OR":
            token = self.take()
            right = yield self.and_expression()
            if not terms:
                terms.append(self.boolean(left, start))
            terms.append(self.boolean(right, token))
        return _or(*terms) if terms else left

    def and_expression(self) -> _Parse:
        start = self.peek()
        left = yield self.equality_expression()
        terms: list[_Node] = []
        while self.peek().kind == "AND":
            token = self.take()
            right = yield self.equality_expression()
            if not terms:
                terms.append(self.boolean(left, start))
            terms.append(self.boolean(right, token))
        return _and(*terms) if terms else left

    def equality_expression(self) -> _Parse:
        left = yield self.comparison_expression()
        while True:
            token = self.peek()
            if token.kind in ("=", "<>"):
                self.take()
                right = yield self.comparison_expression()
                self.check_equal_operands(left, right, token)
                left = _equal(left, right) if token.kind == "=" else _not(_equal(left, right))
            elif token.kind == "IS":
                self.take()
                negated = self.peek().kind == "NOT"
                if negated:
                    self.take()
                self.take("NULL")
                null_test = _equal(left, _constant(None, "bool_const"))
                left = _not(null_test) if negated else null_test
            else:
                return left

    def comparison_expression(self) -> _Parse:
        left = yield self.unary_expression()
        while True:
            token = self.peek()
            kind = token.kind
            if kind in _ORDER_TESTS:
                self.take()
                left = self.ordered(kind, left, (yield self.unary_expression()), token)
            elif kind == "BETWEEN":
                self.take()
                left = yield self.between(left, token, negated=False)
            elif kind == "IN":
                self.take()
                left = self.in_list(left, token, negated=False)
            elif kind == "NOT" and self.peek(1).kind in ("BETWEEN", "IN"):
                self.take()
                if self.take().kind == "BETWEEN":
                    left = yield self.between(left, token, negated=True)
                else:
                    left = self.in_list(left, token, negated=True)
            elif kind == "NOT":
                self.fail(f"expected BETWEEN or IN after NOT, found {self.describe(self.peek(1))}", self.peek(1))
            else:
                return left

    def ordered(self, op: str, left: _Node, right: _Node, token: _Token) -> _Node:
        for side in (left, right):
            if side.is_boolean or (side.is_constant and type(side.value) not in (int, _Long, float)):
                what = "NULL" if side.kind == "bool_const" and side.value is None else (
                    "a boolean" if side.is_boolean else "a string")
                self.fail(f"{what} cannot be compared with {op}", token)
        return _order(op, left, right)

    def between(self, value: _Node, token: _Token, *, negated: bool) -> _Parse:
        low = yield self.unary_expression()
        self.take("AND")
        high = yield self.unary_expression()
        if not negated:
            if low.is_constant and high.is_constant:
                if low.value is None or high.value is None:
                    self.fail("BETWEEN bounds cannot be NULL", token)
                try:
                    in_order = _compare(high.value, low.value) >= 0  # type: ignore[arg-type]
                except _EvalError:
                    in_order = False
                if not in_order:
                    self.fail("the low bound of BETWEEN must not exceed the high bound", token)
            return _and(self.ordered(">=", value, low, token), self.ordered("<=", value, high, token))
        return _or(self.ordered("<", value, low, token), self.ordered(">", value, high, token))

    def in_list(self, operand: _Node, token: _Token, *, negated: bool) -> _Node:
        self.take("(")
        values = [self.string_literal()]
        while self.peek().kind == ",":
            self.take()
            values.append(self.string_literal())
        self.take(")")
        if operand.kind != "property":
            self.fail("the left of IN must be a property", token)
        return _in(operand, values, negated)

    def check_equal_operands(self, left: _Node, right: _Node, token: _Token) -> None:
        for side in (left, right):
            if side.kind == "bool_const" and side.value is None:
                self.fail("NULL cannot be compared with = or <> (use IS NULL)", token)
        if left.kind == "bool_const" and right.kind == "const":
            self.fail("a boolean literal cannot be compared with a non-boolean literal", token)

    def unary_expression(self) -> _Parse:
        token = self.peek()
        if token.kind == "+":
            self.take()
            return (yield self.unary_expression())
        if token.kind == "-":
            self.take()
            return _negate((yield self.unary_expression()))
        if token.kind == "NOT":
            self.take()
            operand_token = self.peek()
            return _not(self.boolean((yield self.unary_expression()), operand_token))
        return (yield self.primary_expression())

    def primary_expression(self) -> _Parse:
        token = self.peek()
        kind = token.kind
        if kind == "ID":
            self.take()
            return _property(token.text)
        if kind == "(":
            self.take()
            inner = yield self.or_expression()
            self.take(")")
            return inner  # parentheses are transparent, as in 4.9.3's tree
        if kind == "STRING":
            return _constant(self.string_literal())
        if kind == "DECIMAL":
            self.take()
            digits = token.text.rstrip("lL")
            if len(digits) > 19 or int(digits) > _INT64[1]:
                self.fail(f"integer {token.text[:40]} is out of the 64-bit range", token)
            value = int(digits)
            return _constant(value if value <= _INT32[1] else _Long(value))
        if kind == "FLOAT":
            self.take()
            number = float(token.text)
            if math.isinf(number):
                self.fail(f"decimal {token.text} is too large", token)
            if number == 0.0:  # 4.9.3 refuses any decimal below Double.MIN_VALUE, zero included
                self.fail(f"decimal {token.text} is too small", token)
            return _constant(number)
        if kind in ("TRUE", "FALSE", "NULL"):
            self.take()
            return _constant({"TRUE": True, "FALSE": False, "NULL": None}[kind], "bool_const")
        self.fail(f"expected a value, a property or '(' but found {self.describe(token)}", token)

    def string_literal(self) -> str:
        token = self.take("STRING")
        return token.text[1:-1].replace("''", "'")


# --- the public face ----------------------------------------------------------------------------------


class SqlFilter:
    """A compiled SQL92 expression.  Immutable; :meth:`matches` may be called from any thread."""

    __slots__ = ("_fn", "expression")

    def __init__(self, expression: str, fn: _Eval) -> None:
        self.expression = expression
        self._fn = fn

    def evaluate(self, properties: Mapping[str, str]) -> bool | None:
        """TRUE, FALSE or unknown (None); ValueError when a value does not convert (4.9.3 logs that and
        does not deliver the message)."""
        try:
            result = self._fn(properties)
        except _EvalError as exc:
            raise ValueError(str(exc)) from exc
        return result if type(result) is bool or result is None else False

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with *properties* is delivered: the expression is TRUE."""
        try:
            return self._fn(properties) is True
        except (_EvalError, RecursionError):  # the latter only if called with little stack left
            return False

    __call__ = matches

    def __repr__(self) -> str:
        return f"SqlFilter({self.expression!r})"


_CACHE: dict[str, SqlFilter | SqlSyntaxError] = {}
_CACHE_MAX = 1024


def compile_sql(expression: str) -> SqlFilter:
    """Parse *expression* (SqlSyntaxError if 4.9.3 would not accept it); results, failures included, are
    cached by text, so a broker compiles each subscription's expression once."""
    cached = _CACHE.get(expression)
    if cached is None:
        try:
            cached = SqlFilter(expression, _Parser(expression).parse().fn)
        except SqlSyntaxError as exc:
            cached = exc
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[expression] = cached
    if isinstance(cached, SqlSyntaxError):
        raise SqlSyntaxError(cached.expression, cached.reason, cached.position)
    return cached
