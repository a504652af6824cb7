"""``Message.create("TopicA", "hello")`` (a str body, for the embedded store) raises a TypeError that says
the body must be bytes and how to get them, instead of bytes()'s "string argument without an encoding"."""

from __future__ import annotations

from typing import Any

import pytest

from rocketstore import Message


def test_a_str_body_is_refused_naming_the_fix() -> None:
    body: Any = "hello"
    with pytest.raises(TypeError, match=r"must be bytes .*not str: encode a str first, e\.g\. body\.encode\(\)"):
        Message.create("TopicA", body)


@pytest.mark.parametrize("body", [b"hi", bytearray(b"hi"), memoryview(b"hi")])
def test_bytes_like_bodies_still_pass(body: Any) -> None:
    assert Message.create("TopicA", body).body == b"hi"
