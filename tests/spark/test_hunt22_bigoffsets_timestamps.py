"""The rocketmq-store source's columns of a long-lived store's records: offsets past 2**32 and 2**40, and born
and store times near Java's long limits (a producer sets bornTimestamp to any long; RocketMQ 4.9.3 stores it
as given).  A time whose microseconds do not fit Arrow's int64 used to wrap to around 1970."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyspark", reason="pyspark not installed: pip install 'rocketstore[spark]'")

from rocketstore.message.host import HostAddress
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.record import Message, encode_record
from rocketstore.spark.arrow_decode import record_batch
from rocketstore.spark.store_source import _arrow_schema, store_schema

SCHEMA = _arrow_schema(store_schema())
HOST = HostAddress(b"\x0a\x00\x00\x01", 10911)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
#: the nearest whole milliseconds whose microseconds fit an int64
US_MAX = (LONG_MAX // 1000) * 1000
US_MIN = -(-LONG_MIN // 1000) * 1000


@pytest.mark.parametrize(("born_ms", "store_ms", "born_us", "store_us"), [
    (LONG_MAX, LONG_MIN, US_MAX, US_MIN),
    (LONG_MIN, LONG_MAX, US_MIN, US_MAX),
    (LONG_MAX // 1000, -(-LONG_MIN // 1000), US_MAX, US_MIN),  # the largest that fit, unchanged
    (1_700_000_000_000, 1_700_000_000_123, 1_700_000_000_000_000, 1_700_000_000_123_000),
])
def test_times_past_the_microsecond_range_saturate_instead_of_wrapping(born_ms: int, store_ms: int, born_us: int,
                                                                        store_us: int) -> None:
    offset = (1 << 40) + 208
    raw = bytes(encode_record(Message("T", b"body", born_timestamp=born_ms), store_host=HOST, born_host=HOST,
                              store_timestamp=store_ms, queue_offset=(1 << 32) + 3, commit_log_offset=offset)[0])
    batch = record_batch(raw, np.array([0]), np.array([(1 << 32) + 3]), SCHEMA)
    row = batch.select(["commitLogOffset", "queueOffset", "msgId"]).to_pydict()  # (datetime cannot hold the times)
    assert row["commitLogOffset"] == [offset]
    assert row["queueOffset"] == [(1 << 32) + 3]
    assert row["msgId"] == [encode_offset_message_id(HOST, offset)]
    assert batch.column("bornTimestamp").cast(pa.int64()).to_pylist() == [born_us]
    assert batch.column("storeTimestamp").cast(pa.int64()).to_pylist() == [store_us]


@pytest.mark.parametrize(("born_ms", "store_ms", "born_us", "store_us"), [
    (LONG_MAX, LONG_MIN, US_MAX, US_MIN),
    (1_700_000_000_000, 1_700_000_000_123, 1_700_000_000_000_000, 1_700_000_000_123_000),
])
def test_the_broker_stream_sources_rows_saturate_the_same_way(born_ms: int, store_ms: int, born_us: int,
                                                               store_us: int) -> None:
    # the rocketmq (broker) source builds its batches from pulled messages, column lists of its own: a time
    # past the microsecond range failed the whole micro-batch (OverflowError) there, on every retry
    from rocketstore.message.record import decode_record
    from rocketstore.spark.stream_source import _Columns

    raw = bytes(encode_record(Message("T", b"body", born_timestamp=born_ms), store_host=HOST, born_host=HOST,
                              store_timestamp=store_ms, queue_offset=3, commit_log_offset=1 << 40)[0])
    columns = _Columns(list(SCHEMA.names), SCHEMA)
    columns.add("broker-a", decode_record(raw))
    batch = columns.flush()
    assert batch.column("bornTimestamp").cast(pa.int64()).to_pylist() == [born_us]
    assert batch.column("storeTimestamp").cast(pa.int64()).to_pylist() == [store_us]
    assert batch.column("commitLogOffset").to_pylist() == [1 << 40]
