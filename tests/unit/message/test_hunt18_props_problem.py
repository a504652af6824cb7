"""properties_problem: which properties maps the broker would not store as given (see its docstring)."""

from __future__ import annotations

import pytest

from rocketstore.message.properties import encode_properties, parse_properties, properties_problem


@pytest.mark.parametrize("props", [
    {"k": "a\x02b"}, {"k": "a\x01b\x02c"}, {"k\x01": "v"}, {"\x02k": "v"}, {"k": ""}, {"": "v"}, {"a": "1", "b": ""},
])
def test_maps_the_broker_would_change_are_named(props: dict[str, str]) -> None:
    assert parse_properties(encode_properties(props)) != props  # what the broker would make of it
    assert properties_problem(props) is not None


@pytest.mark.parametrize("props", [
    {}, {"k": "v"}, {"k": " "}, {"k\U0001F600": "\U0001F680"}, {"KEYS": "a b  c", "TAGS": "x||y"}, {"k": "=;,"},
    {"k": "a\x01b"},  # the parser cuts a pair at its first 0x01 only: a value keeps the others
])
def test_maps_that_survive_pass(props: dict[str, str]) -> None:
    assert parse_properties(encode_properties(props)) == props
    assert properties_problem(props) is None


def test_none_values_are_skipped_as_the_writer_skips_them() -> None:
    assert properties_problem({"k": None, "j": "v"}) is None
