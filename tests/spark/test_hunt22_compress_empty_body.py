"""The Spark sources' record decoding gives a record flagged COMPRESSED with an empty body an empty body, as
4.9.3's MessageDecoder hands it to a consumer (it inflates only a body of one byte or more), instead of
failing the read on it as a body that does not inflate."""

from __future__ import annotations

import zlib

import numpy as np

from rocketstore.message.host import HostAddress
from rocketstore.message.record import Message, SysFlag, encode_record
from rocketstore.spark.arrow_decode import record_batch
from rocketstore.spark.store_source import _arrow_schema, store_schema

SCHEMA = _arrow_schema(store_schema())
HOST = HostAddress(b"\x7f\x00\x00\x01", 10911)


def _record(body: bytes) -> bytes:
    message = Message(topic="Hunt22Arrow", body=body, queue_id=0, sys_flag=SysFlag.COMPRESSED)
    raw, _ = encode_record(message, "", born_host=HOST, store_host=HOST, store_timestamp=1, commit_log_offset=0)
    return bytes(raw)


def test_an_empty_body_flagged_compressed_is_an_empty_body() -> None:
    empty, fine = _record(b""), _record(zlib.compress(b"spark " * 1000))
    batch = record_batch(empty + fine, np.array([0, len(empty)]), np.array([0, 1]), SCHEMA, check_crc=True)
    assert batch.column("body").to_pylist() == [b"", b"spark " * 1000]
