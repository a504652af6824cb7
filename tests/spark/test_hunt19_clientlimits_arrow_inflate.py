"""The Spark sources' record decoding (rocketstore.spark.arrow_decode) inflates compressed bodies within
rocketstore.message.inflate's bound, as the clients do: a record whose compressed body would inflate past
MAX_INFLATED_BODY_BYTES is the MessageDecodeError a body that does not inflate is, at its position, and a
normal compressed body comes out inflated as before."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from rocketstore.errors import MessageDecodeError
from rocketstore.message.host import HostAddress
from rocketstore.message.inflate import MAX_INFLATED_BODY_BYTES
from rocketstore.message.record import Message, SysFlag, encode_record
from rocketstore.spark.arrow_decode import record_batch
from rocketstore.spark.store_source import _arrow_schema, store_schema

SCHEMA = _arrow_schema(store_schema())
HOST = HostAddress(b"\x7f\x00\x00\x01", 10911)


def _record(body: bytes) -> bytes:
    message = Message(topic="Hunt19Arrow", body=body, queue_id=0, sys_flag=SysFlag.COMPRESSED)
    raw, _ = encode_record(message, "", born_host=HOST, store_host=HOST, store_timestamp=1, commit_log_offset=0)
    return bytes(raw)


def test_a_compressed_body_inflating_past_the_bound_is_a_decode_error_at_its_record() -> None:
    fine = _record(zlib.compress(b"spark " * 1000))
    bomb = _record(zlib.compress(bytes(MAX_INFLATED_BODY_BYTES + 1), 9))
    batch = record_batch(fine, np.array([0]), np.array([0]), SCHEMA)
    assert batch.column("body").to_pylist() == [b"spark " * 1000]
    with pytest.raises(MessageDecodeError, match=f"inflates past {MAX_INFLATED_BODY_BYTES}") as raised:
        record_batch(fine + bomb, np.array([0, len(fine)]), np.array([0, 1]), SCHEMA)
    assert raised.value.offset == len(fine)
