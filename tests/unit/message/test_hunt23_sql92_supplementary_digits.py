"""A property compared with an integer literal is read as Java's ``Integer.valueOf`` / ``Long.valueOf`` do
(4.9.3 ComparisonExpression.__compare), which takes digits of any script, but one UTF-16 unit at a time:
a digit outside the BMP (a surrogate pair, such as U+1D7D9 MATHEMATICAL DOUBLE-STRUCK DIGIT ONE) is not a
digit to Java, so the value does not convert and the message is not delivered, whatever the operator."""

from __future__ import annotations

import pytest

from rocketstore.message.sql_filter import compile_sql

DOUBLE_STRUCK_ONE = "\U0001d7d9"


@pytest.mark.parametrize("expression",
                         ["a <> 0", "a = 1", "-1L < a", "2147483647 > a", "a NOT BETWEEN 5 AND 9"])
def test_a_digit_beyond_the_bmp_does_not_convert(expression: str) -> None:
    f = compile_sql(expression)
    with pytest.raises(ValueError):
        f.evaluate({"a": DOUBLE_STRUCK_ONE})
    assert not f.matches({"a": DOUBLE_STRUCK_ONE})
    assert not f.matches({"a": "-" + DOUBLE_STRUCK_ONE + "0"})


def test_bmp_digits_of_other_scripts_still_convert() -> None:
    assert compile_sql("a = 13").matches({"a": "\u0661\u0663"})  # ARABIC-INDIC one, three
    assert compile_sql("a > 9L").matches({"a": "\u0967\u0966"})  # DEVANAGARI one, zero
    assert compile_sql("a <> 0").matches({"a": "1"})
