"""An offset message id with whitespace in it is no hex id: bytes.fromhex would skip the spaces and read the
port and offset from the wrong bytes, blaming them instead of the id's text."""

from __future__ import annotations

import pytest

from rocketstore.errors import InvalidMessageIdError
from rocketstore.message.message_id import decode_offset_message_id


@pytest.mark.parametrize("spaced", [
    "0A000001 0000 2A9F00000000000030",  # 32 characters, 15 bytes: a 3-byte IP
    "0A 00 00 01 00 00 2A 9F 00003039",
])
def test_whitespace_is_not_hexadecimal(spaced: str) -> None:
    assert len(spaced) == 32
    with pytest.raises(InvalidMessageIdError, match="not hexadecimal"):
        decode_offset_message_id(spaced)

