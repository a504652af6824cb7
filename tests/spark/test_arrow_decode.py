"""record_batch (numpy + Arrow, no per-record loop) yields the rows decode_record + parse_properties give.

No SparkSession needed: these run on pyarrow alone.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyspark", reason="pyspark not installed: pip install 'rocketstore[spark]'")

from rocketstore.errors import MessageDecodeError
from rocketstore.message.host import HostAddress
from rocketstore.message.properties import PropertyName, encode_properties, parse_properties
from rocketstore.message.record import Message, SysFlag, decode_record, encode_record
from rocketstore.spark.arrow_decode import record_batch
from rocketstore.spark.store_source import _arrow_schema, store_schema

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCHEMA = _arrow_schema(store_schema())

NAMES = st.one_of(st.sampled_from([PropertyName.TAGS, PropertyName.KEYS, PropertyName.UNIQ_KEY, "a", "ключ"]),
                  st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"),
                          min_size=1, max_size=8))
VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=40)
#: properties strings as written, duplicate names and empty values included
PROPERTY_STRINGS = st.lists(st.tuples(NAMES, VALUES), max_size=7).map(
    lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs))
HOSTS = st.builds(HostAddress, st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
                  st.integers(0, 65535))
MESSAGES = st.builds(Message, topic=st.text("abcXYZ019_-%|", min_size=1, max_size=60),
                     body=st.one_of(st.just(b""), st.binary(max_size=3000)), queue_id=st.integers(0, 2**31 - 1),
                     flag=st.integers(-(2**31), 2**31 - 1),
                     sys_flag=st.sampled_from([0, SysFlag.COMPRESSED, SysFlag.MULTI_TAGS, 8]),
                     born_timestamp=st.integers(0, 2**50), reconsume_times=st.integers(0, 2**31 - 1))
RECORDS = st.tuples(MESSAGES, PROPERTY_STRINGS, HOSTS, HOSTS, st.integers(0, 2**50), st.integers(0, 2**60))


def _expected(raw: bytes, queue_offset: int) -> dict[str, object]:
    m = decode_record(raw)
    if m.sys_flag & SysFlag.COMPRESSED:  # inflated, as a consumer receives it
        m = dataclasses.replace(m, body=zlib.decompress(m.body))
    props = parse_properties(m.properties_string)
    return {"topic": m.topic, "queueId": m.queue_id, "queueOffset": queue_offset,
            "commitLogOffset": m.commit_log_offset, "msgId": m.msg_id, "body": m.body,
            "tags": props.get(PropertyName.TAGS), "keys": props.get(PropertyName.KEYS),
            "properties": list(props.items()), "uniqKey": props.get(PropertyName.UNIQ_KEY),
            "bornTimestamp": m.born_timestamp * 1000, "storeTimestamp": m.store_timestamp * 1000,
            "bornHost": str(m.born_host), "storeHost": str(m.store_host), "sysFlag": m.sys_flag, "flag": m.flag,
            "reconsumeTimes": m.reconsume_times}


def _rows(batch: pa.RecordBatch) -> list[dict[str, object]]:
    table = pa.Table.from_batches([batch])
    for name in ("bornTimestamp", "storeTimestamp"):
        table = table.set_column(table.schema.get_field_index(name), name, table.column(name).cast(pa.int64()))
    return table.to_pylist()


@SETTINGS
@given(st.lists(RECORDS, min_size=1, max_size=20))
def test_record_batch_matches_decode_record_row_for_row(specs: list) -> None:  # type: ignore[type-arg]
    raws = []
    for message, props, born, store, store_ts, offset in specs:
        if message.sys_flag & SysFlag.COMPRESSED:
            message = dataclasses.replace(message, body=zlib.compress(message.body, 5))
        raw, _ = encode_record(message, props, born_host=born, store_host=store, store_timestamp=store_ts,
                               commit_log_offset=offset)
        raws.append(bytes(raw))
    buf = b"".join(raws)
    positions = np.cumsum([0] + [len(r) for r in raws[:-1]])
    queue_offsets = np.arange(len(raws)) + 7
    batch = record_batch(buf, positions, queue_offsets, SCHEMA)
    assert batch.schema == SCHEMA
    assert _rows(batch) == [_expected(r, int(q)) for r, q in zip(raws, queue_offsets)]


def test_tag_set_keeps_exact_tags_and_include_body_false_nulls_bodies() -> None:
    host = HostAddress(b"\x0a\x00\x00\x01", 10911)
    raws = [bytes(encode_record(Message.create("T", b"b%d" % i, tags=t), store_host=host, born_host=host)[0])
            for i, t in enumerate(["Aa", "BB", None, "Aa"])]
    positions = np.cumsum([0] + [len(r) for r in raws[:-1]])
    batch = record_batch(b"".join(raws), positions, np.arange(4), SCHEMA, tag_set={"Aa"}, include_body=False)
    assert batch.column("queueOffset").to_pylist() == [0, 3]
    assert batch.column("body").null_count == 2


def test_invalid_utf8_topic_and_mismatching_entry_are_refused() -> None:
    host = HostAddress(b"\x0a\x00\x00\x01", 10911)
    good = bytes(encode_record(Message.create("Tx", b"body", properties={"p": "v"}), store_host=host,
                               born_host=host, commit_log_offset=100)[0])
    bad = bytearray(good)
    at = good.index(b"\x02Tx") + 1
    bad[at : at + 2] = b"\xff\xfe"
    # read as 4.9.3's MessageDecoder reads it (new String(bytes, UTF_8)), as decode_record does
    assert record_batch(bytes(bad), np.array([0]), np.array([0]), SCHEMA).column("topic").to_pylist() == [
        "\ufffd\ufffd"]
    with pytest.raises(MessageDecodeError, match="consume-queue entry"):
        record_batch(good, np.array([0]), np.array([0]), SCHEMA, expect=(np.array([101]), np.array([len(good)])))
    batch = record_batch(good, np.array([0]), np.array([0]), SCHEMA, expect=(np.array([100]), np.array([len(good)])))
    assert batch.num_rows == 1
    assert encode_properties({"p": "v"}) == "p\x01v"


def test_records_with_the_same_property_names_take_them_once_and_still_match() -> None:
    host = HostAddress(b"\x0a\x00\x00\x01", 10911)
    raws = [bytes(encode_record(Message.create("T", b"x", tags=f"t{i}", keys=f"k {i}", uniq_key=f"U{i:04d}",
                                               properties={"region": "eu", "seq": str(i)}),
                                store_host=host, born_host=host, commit_log_offset=i)[0]) for i in range(50)]
    positions = np.cumsum([0] + [len(r) for r in raws[:-1]])
    batch = record_batch(b"".join(raws), positions, np.arange(50), SCHEMA)
    assert _rows(batch) == [_expected(r, q) for q, r in enumerate(raws)]


SHORT_NAMES = st.one_of(st.sampled_from([PropertyName.TAGS, PropertyName.KEYS, PropertyName.UNIQ_KEY, "ключ", "a"]),
                        st.text("abcXYZ_-.é", min_size=1, max_size=7))
#: what may spoil a batch for the fast path: an empty name or value, a separator or NUL inside a value
SPOILERS = st.sampled_from([("name", ""), ("value", ""), ("value", "a\x01b"), ("value", "\x00"),
                            ("value", "x\x02y"), ("name", "z"), ("name", "123456789")])


@st.composite
def property_batches(draw: st.DrawFn) -> list[bytes]:
    """Properties strings of records sharing their names (the fast path's case), now and then spoiled."""
    names = draw(st.lists(SHORT_NAMES, min_size=1, max_size=6, unique=True))
    rows = draw(st.lists(st.lists(VALUES.filter(bool), min_size=len(names), max_size=len(names)),
                         min_size=1, max_size=12))
    table = [list(zip(names, values, strict=True)) for values in rows]
    spoil = draw(st.one_of(st.none(), st.none(), SPOILERS))
    if spoil is not None:
        i = draw(st.integers(0, len(table) - 1))
        j = draw(st.integers(0, len(names) - 1))
        name, value = table[i][j]
        table[i][j] = (spoil[1], value) if spoil[0] == "name" else (name, spoil[1])
    return ["\x02".join(f"{k}\x01{v}" for k, v in row).encode() for row in table]


@SETTINGS
@given(property_batches())
def test_uniform_properties_fast_path_equals_the_general_split(strings: list[bytes]) -> None:
    """The fast path for batches whose records share their property names gives the general split's
    columns exactly, or declines (None) and leaves the batch to it."""
    import dataclasses

    from rocketstore.message.columnar_properties import _split_any, _uniform_properties

    data = np.frombuffer(b"".join(strings), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(s) for s in strings]).astype(np.int64)
    fast = _uniform_properties(data, offsets)
    ref = _split_any(data, offsets)
    if fast is None:
        return
    for f in dataclasses.fields(ref):
        got, want = getattr(fast, f.name), getattr(ref, f.name)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and np.array_equal(got, want), f.name
        else:
            assert got == want, f.name


def test_uniform_properties_fast_path_takes_the_usual_batch() -> None:
    from rocketstore.message.columnar_properties import _uniform_properties

    strings = [f"KEYS\x01order-{i}\x02UNIQ_KEY\x01U{i:04d}\x02TAGS\x01T{i % 3}".encode() for i in range(40)]
    data = np.frombuffer(b"".join(strings), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(s) for s in strings]).astype(np.int64)
    fast = _uniform_properties(data, offsets)
    assert fast is not None and fast.uniform_width == 3


@SETTINGS
@given(property_batches(), st.sampled_from([HostAddress(b"\x0a\x00\x00\x01", 10911),
                                            HostAddress(bytes(range(16)), 80)]))
def test_record_batch_of_records_sharing_property_names_matches_row_for_row(strings: list[bytes],
                                                                             host: HostAddress) -> None:
    raws = [bytes(encode_record(Message.create("T", b"body %d" % i * i), s.decode(), store_host=host,
                                born_host=host, commit_log_offset=1000 * i)[0]) for i, s in enumerate(strings)]
    positions = np.cumsum([0] + [len(r) for r in raws[:-1]])
    batch = record_batch(b"".join(raws), positions, np.arange(len(raws)), SCHEMA)
    assert _rows(batch) == [_expected(r, q) for q, r in enumerate(raws)]


@SETTINGS
@given(st.binary(min_size=1, max_size=400), st.lists(st.tuples(st.integers(0, 399), st.integers(0, 60)), max_size=30),
       st.booleans())
def test_ranges_cut_any_ranges_in_or_out_of_order(buf: bytes, spans: list[tuple[int, int]], ordered: bool) -> None:
    """_ranges gives buf[start:start + length] per range whether the ranges follow one another (Arrow's
    take over gaps and ranges) or not (overlapping, backwards: numpy gather or views)."""
    from rocketstore.spark.arrow_decode import _ranges

    spans = [(a, min(n, len(buf) - a)) for a, n in spans if a < len(buf)]
    if ordered:
        spans.sort()
        spans = [(a, n) for i, (a, n) in enumerate(spans) if i == 0 or a >= spans[i - 1][0] + spans[i - 1][1]]
    starts = np.array([a for a, _ in spans], dtype=np.int64)
    lengths = np.array([n for _, n in spans], dtype=np.int64)
    got = _ranges(np.frombuffer(buf, dtype=np.uint8), starts, lengths)
    assert got.type == pa.binary()
    assert got.to_pylist() == [buf[a : a + n] for a, n in spans]
