"""A byte order mark before the JSON (a file an editor saved: a broadcasting consumer's local offsets file,
a config file) is skipped, as fastjson skips it; the parser refused the text."""

from __future__ import annotations

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting import fastjson


@pytest.mark.parametrize("text", ['\ufeff{"offsetTable":{}}', "\ufeff{\"offsetTable\":{0:12}}"])
def test_a_byte_order_mark_is_skipped(text: str) -> None:
    assert fastjson.loads(text.encode("utf-8")) == fastjson.loads(text[1:])
    assert fastjson.loads(text) == fastjson.loads(text[1:])


def test_a_byte_order_mark_alone_is_no_json() -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads("\ufeff".encode("utf-8"))
