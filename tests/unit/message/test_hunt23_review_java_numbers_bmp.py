"""Integer.parseInt / Long.parseLong read UTF-16 units: a digit beyond the BMP (a surrogate pair, such as
U+1D7D7 MATHEMATICAL BOLD DIGIT NINE) is two characters that are not digits, so the text is refused (header
fields, the DELAY property, deleteWhen's hours).  Digits of other scripts inside the BMP are still read."""

from __future__ import annotations

import pytest

from rocketstore.message.java_numbers import parse_java_int, parse_java_long


@pytest.mark.parametrize("parse", [parse_java_int, parse_java_long])
@pytest.mark.parametrize("text", ["\U0001d7d7", "1\U0001d7d7", "-\U0001d7d7"])
def test_a_digit_beyond_the_bmp_is_refused(parse, text: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        parse(text)


def test_bmp_digits_of_other_scripts_are_read() -> None:
    assert parse_java_int("\u0661\u0663") == 13  # ARABIC-INDIC one, three
    assert parse_java_long("-\u0967\u0966") == -10  # DEVANAGARI one, zero
