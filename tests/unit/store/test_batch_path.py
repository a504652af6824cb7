"""The column-wise batch path writes what RocketMQ 4.9.3 writes and tells the dispatcher what the records say.

A broker's batch send reaches the store as a :class:`MessageBatch` (the entries' flags, bodies and properties
bytes as columns, the batch's own properties string), drafted with ``draft_batch`` and laid down with
``encode_batch_draft``.  These tests hold that path to:

* a reference built from the single-record codec (``encode_record``, which the golden stores pin) and
  RocketMQ's MessageExtBatchEncoder rule for the properties (the entry's bytes, a 0x02 unless one ends
  them already, the batch's string: spec store-format.md section 14);
* the dispatch facts a reader of each stored record finds (``parse_properties`` of the stored string);
* the message-by-message put_batch for batches of :class:`Message` (same bytes, same facts);
* ``decode_batch_fields`` (below: a plain entry-by-entry walk of the documented layout) for the body
  splitter, errors included.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.errors import MessageDecodeError
from rocketstore.message.batch import (
    BatchEntry,
    MessageBatch,
    encode_batch,
    key_columns,
    split_batch,
)
from rocketstore.message.batch_draft import draft_batch, encode_batch_draft
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.message_id import encode_offset_message_id, encode_offset_message_ids
from rocketstore.message.properties import encode_properties, encode_properties_column, parse_properties
from rocketstore.message.record import (
    Message,
    SysFlag,
    decode_record,
    encode_record,
)
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 17, store_host="10.0.0.1:10911")
V4 = parse_host("192.168.7.9:40000")
V6 = parse_host("[2001:db8:0:0:0:0:0:1]:5555")
STAMP = 1_700_000_000_123

# --- reference -----------------------------------------------------------------------------------------------


def decode_batch_fields(data: bytes) -> list[tuple[bytes, str, int]]:
    """(body, properties string, flag) of each entry, walked entry by entry: the reference split_batch's
    columns and errors are held to."""
    entries: list[tuple[bytes, str, int]] = []
    pos, end = 0, len(data)
    while pos < end:
        if pos + 20 > end:
            raise MessageDecodeError("truncated batch entry header", pos)
        flag, body_len = struct.unpack_from(">ii", data, pos + 12)
        p = pos + 20
        if body_len < 0 or p + body_len + 2 > end:
            raise MessageDecodeError(f"batch entry body length {body_len} does not fit", pos)
        body = data[p : p + body_len]
        (props_len,) = struct.unpack_from(">h", data, p + body_len)
        p += body_len + 2
        if props_len < 0 or p + props_len > end:
            raise MessageDecodeError(f"batch entry properties length {props_len} does not fit", pos)
        try:
            props = data[p : p + props_len].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MessageDecodeError("batch entry properties are not UTF-8", pos) from exc
        entries.append((body, props, flag))
        pos = p + props_len
    return entries



def stored_properties(entry: bytes, batch_properties: str) -> str:
    """RocketMQ's MessageExtBatchEncoder: the entry's bytes, then (both non-empty, the entry's last byte not
    0x02) a 0x02, then the batch's properties."""
    suffix = batch_properties.encode()
    sep = b"\x02" if entry and suffix and not entry.endswith(b"\x02") else b""
    return (entry + sep + suffix).decode()


def reference_records(batch: MessageBatch, store_host: HostAddress, offset: int, queue_offset: int,
                      ts: int) -> list[bytes]:
    """Each entry as the single-record codec encodes it, with the stored properties string above."""
    born = batch.born_host or store_host
    store = batch.store_host or store_host
    out = []
    for i, (flag, body, props) in enumerate(zip(batch.flags, batch.bodies, batch.properties, strict=True)):
        m = Message(batch.topic, body, {}, batch.queue_id, flag, batch.sys_flag, batch.born_timestamp, born, store,
                    batch.reconsume_times)
        record, _ = encode_record(m, stored_properties(props, batch.batch_properties), store_host=store,
                                  born_host=born, store_timestamp=ts, queue_offset=queue_offset + i,
                                  commit_log_offset=offset)
        out.append(bytes(record))
        offset += len(record)
    return out


def facts_of(record: bytes) -> tuple[int, str | None, str | None]:
    """(tagsCode, UNIQ_KEY, KEYS) as the dispatcher's decode path reads a record."""
    props = parse_properties(decode_record(record).properties_string)
    tags = props.get("TAGS")
    return tags_code(tags) if tags else 0, props.get("UNIQ_KEY"), props.get("KEYS")


# --- strategies ------------------------------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=10)
_name = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a", "XTAGS", "TAGSX", "é", ""])
_pair_text = st.one_of(
    st.tuples(_name, _text).map(lambda p: f"{p[0]}\x01{p[1]}"),
    _text,  # no name-value separator: a pair Java drops
)
_entry_props = st.one_of(
    st.lists(_pair_text, max_size=5).map("\x02".join),
    st.lists(_pair_text, max_size=5).map(lambda ps: "\x02".join(ps) + "\x02"),  # C++'s trailing separator
    st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "k"]), _text, max_size=4)
    .map(encode_properties),
).map(str.encode)
_batch_props = st.one_of(
    st.just(""),
    st.dictionaries(st.sampled_from(["WAIT", "CLUSTER", "TAGS", "KEYS", "UNIQ_KEY", "x"]),
                    st.one_of(st.just(""), _text), max_size=4).map(encode_properties),
)


@st.composite
def uniform_properties(draw: st.DrawFn) -> list[bytes]:
    """Entries of one producer: one layout, some values changing per entry (same byte length, or not)."""
    n = draw(st.integers(1, 40))
    names = draw(st.lists(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "u", "TAGS"]), min_size=1,
                          max_size=5))
    values = [draw(_text) for _ in names]
    varying = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
    trailing = draw(st.booleans())
    fmt = draw(st.sampled_from(["{:08d}", "{:08X}", "é{:06d}", "{}", "\x02{:03d}", "\x01{:04d}", ""]))
    out = []
    for i in range(n):
        pairs = [f"{name}\x01{fmt.format(i) if vary else value}" for name, value, vary in zip(names, values, varying)]
        out.append(("\x02".join(pairs) + ("\x02" if trailing else "")).encode())
    if n > 2 and draw(st.booleans()):  # one entry breaks the layout
        out[draw(st.integers(0, n - 1))] = draw(_entry_props)
    return out


@st.composite
def batches(draw: st.DrawFn, uniform: bool = False) -> MessageBatch:
    props = draw(uniform_properties()) if uniform else draw(st.lists(_entry_props, min_size=1, max_size=12))
    n = len(props)
    same_body = draw(st.booleans())
    body = draw(st.binary(max_size=300))
    bodies = [body] * n if same_body else [draw(st.binary(max_size=300)) for _ in range(n)]
    flags = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n))
    return MessageBatch(draw(st.sampled_from(["TopicA", "T%B"])), draw(st.integers(0, 3)), flags, bodies, props,
                        draw(_batch_props), sys_flag=draw(st.sampled_from([0, SysFlag.MULTI_TAGS])),
                        born_timestamp=draw(st.sampled_from([0, STAMP, -(2**63)])),
                        born_host=draw(st.sampled_from([None, V4, V6])),
                        store_host=draw(st.sampled_from([None, V4, V6])),
                        reconsume_times=draw(st.sampled_from([0, 3])), store_timestamp=STAMP)


# --- the store's batch path ---------------------------------------------------------------------------------------


def check_batch_is_stored_as_rocketmq_stores_it(store: MessageStore, batch: MessageBatch) -> None:
    before = len(store._commitlog.facts)
    r = store.put_batch(batch)
    assert r.status is PutMessageStatus.PUT_OK, r
    expected = reference_records(batch, store.store_host, r.commit_log_offset, r.queue_offset, r.store_timestamp)
    assert r.record_sizes == tuple(map(len, expected))
    assert store._commitlog.read(r.commit_log_offset, r.wrote_bytes) == b"".join(expected)
    facts = list(store._commitlog.facts)[before:]
    assert [(f[7], f[8], f[9]) for f in facts] == [facts_of(rec) for rec in expected]
    offset = r.commit_log_offset
    for i, (fact, rec) in enumerate(zip(facts, expected, strict=True)):
        assert fact[:7] == (offset, len(rec), batch.topic, batch.queue_id, r.queue_offset + i,
                            decode_record(rec).sys_flag, r.store_timestamp)
        offset += len(rec)
    host = batch.store_host or store.store_host
    assert r.msg_id == ",".join(encode_offset_message_id(host, f[0]) for f in facts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(batches(), batches(uniform=True)), min_size=1, max_size=4))
def test_a_message_batch_is_stored_as_rocketmq_stores_it(tmp_path: Path, runs: list[MessageBatch]) -> None:
    path = tmp_path / f"s{random.getrandbits(64)}"
    with MessageStore.open(path, CONFIG, background=False) as store:
        for batch in runs:
            check_batch_is_stored_as_rocketmq_stores_it(store, batch)
        assert store.wait_dispatched()
        assert verify_store(store).ok
    shutil.rmtree(path)


def test_a_batch_of_one_producer_layout_is_stored_with_its_facts(tmp_path: Path) -> None:
    """The usual batch (the template reader): TAGS constant, UNIQ_KEY and KEYS changing, WAIT kept."""
    props = [encode_properties({"TAGS": "TagA", "KEYS": f"k{i:08d}", "UNIQ_KEY": f"7F00000100{i:022X}",
                                "WAIT": "true"}).encode() for i in range(64)]
    batch = MessageBatch("TopicA", 1, [0] * 64, [b"x" * 100] * 64, props, "WAIT\x01true\x02CLUSTER\x01c",
                         born_host=V4, born_timestamp=STAMP)
    with MessageStore.open(tmp_path / "s", CONFIG, background=False) as store:
        check_batch_is_stored_as_rocketmq_stores_it(store, batch)
        r = store.put_batch(batch)
        record = decode_record(store._commitlog.read(r.commit_log_offset, r.record_sizes[0]))  # type: ignore[arg-type]
        assert record.properties_string == props[0].decode() + "\x02WAIT\x01true\x02CLUSTER\x01c"
        assert store.wait_dispatched()
        assert [m.keys for m in store.get("TopicA", 1, 64, 32).messages] == [f"k{i:08d}" for i in range(32)]
        assert verify_store(store).ok


@pytest.mark.parametrize(("change", "status"), [
    ({"sys_flag": SysFlag.TRANSACTION_PREPARED_TYPE}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"batch_properties": "DELAY\x013"}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"batch_properties": "DELAY\x01 3"}, PutMessageStatus.MESSAGE_ILLEGAL),  # no Java int: parseInt throws
    ({"properties": [b"a\x01b", b"\xc3"]}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"properties": [b"a\x01b", b"p\x01" + b"e" * 40000]}, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED),
    ({"topic": "bad topic"}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"queue_id": -1}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"flags": [0, 2**31]}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"bodies": [b"x", b"y" * 5000]}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"bodies": [b"y" * 2000, b"y" * 2000]}, PutMessageStatus.MESSAGE_ILLEGAL),  # the whole batch too large
    ({"flags": [], "bodies": [], "properties": []}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"flags": [0]}, PutMessageStatus.MESSAGE_ILLEGAL),
    ({"properties": [b""]}, PutMessageStatus.MESSAGE_ILLEGAL),
])
def test_a_refused_message_batch_writes_nothing(tmp_path: Path, change: dict[str, Any],
                                                status: PutMessageStatus) -> None:
    fields: dict[str, Any] = {"topic": "T", "queue_id": 0, "flags": [0, 0], "bodies": [b"x", b"y"],
                              "properties": [b"a\x01b", b"c\x01d"], "batch_properties": "W\x01x"}
    fields.update(change)
    with MessageStore.open(tmp_path / "s", CONFIG.replace(max_message_size=4096), background=False) as store:
        before = store.max_commit_log_offset
        assert store.put_batch(MessageBatch(**fields)).status is status
        assert store.max_commit_log_offset == before and not store._commitlog.facts
        assert store.put_batch(MessageBatch("T", 0, [0], [b"ok"], [b""])).ok


def test_only_the_batchs_own_delay_counts(tmp_path: Path) -> None:
    """4.9.3's putMessages reads the MessageExtBatch's DELAY (the request header's) with Integer.parseInt,
    never an entry's: an entry's DELAY is stored as it came."""
    with MessageStore.open(tmp_path / "s", CONFIG, background=False) as store:
        assert store.put_batch(MessageBatch("T", 0, [0], [b"x"], [b"DELAY\x012"], "DELAY\x010")).ok
        assert store.put_batch(MessageBatch("T", 0, [0], [b"x"], [b"DELAY\x012"], "W\x01x")).ok
        assert not store.put_batch(MessageBatch("T", 0, [0], [b"x"], [b"DELAY\x010"], "DELAY\x01x")).ok
        assert not store.put_batch(MessageBatch("T", 0, [0], [b"x"], [b"DELAY\x010"], "DELAY\x011")).ok


# --- batches of Message: the column-wise path against the message-by-message one -------------------------------


@st.composite
def message_batches(draw: st.DrawFn) -> list[Message]:
    n = draw(st.integers(1, 20))
    shared = {"born_host": draw(st.sampled_from([None, V4, V6])), "store_host": draw(st.sampled_from([None, V6])),
              "born_timestamp": STAMP, "sys_flag": draw(st.sampled_from([0, SysFlag.MULTI_TAGS])),
              "store_timestamp": STAMP, "reconsume_times": draw(st.sampled_from([0, 2]))}
    out = []
    uniform = draw(st.booleans())
    for i in range(n):
        if uniform:
            props = {"TAGS": "TagA", "KEYS": f"k{i:06d}", "UNIQ_KEY": f"{i:032X}"}
        else:
            props = draw(st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "x", "a\x02b"]),
                                         st.one_of(st.none(), _text, st.just("v\x01w")), max_size=4))
        fields = dict(shared)
        if draw(st.integers(0, 9)) == 0:  # a message that differs in a shared field
            fields["born_host"] = V6 if fields["born_host"] is not V6 else V4
        out.append(Message("TopicA", draw(st.binary(max_size=200)), props, queue_id=2,
                           flag=draw(st.sampled_from([0, 7, -1])), **fields))  # type: ignore[arg-type]
    return out


def _written(store: MessageStore, batches: list[list[Message]], checked: bool) -> tuple[list[bytes], list[tuple]]:
    records, facts = [], []
    for batch in batches:
        r = store._put_batch_checked(batch) if checked else store.put_batch(batch)
        assert r.status is PutMessageStatus.PUT_OK
        records.append(store._commitlog.read(r.commit_log_offset, r.wrote_bytes))
    facts = [f for f in store._commitlog.facts]
    return records, facts  # type: ignore[return-value]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(message_batches(), min_size=1, max_size=3))
def test_put_batch_of_messages_writes_what_the_message_by_message_path_writes(
        tmp_path: Path, batches: list[list[Message]]) -> None:
    tag = random.getrandbits(64)
    with MessageStore.open(tmp_path / f"a{tag}", CONFIG, background=False) as a, \
            MessageStore.open(tmp_path / f"b{tag}", CONFIG, background=False) as b:
        assert _written(a, batches, checked=False) == _written(b, batches, checked=True)
    shutil.rmtree(tmp_path / f"a{tag}")
    shutil.rmtree(tmp_path / f"b{tag}")


# --- the pieces -----------------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.one_of(uniform_properties(), st.lists(_entry_props, min_size=1, max_size=20)), _batch_props)
def test_key_columns_read_what_the_stored_strings_say(props: list[bytes], batch_properties: str) -> None:
    stored = [parse_properties(stored_properties(p, batch_properties)) for p in props]
    tags, uniq, keys = key_columns(props, parse_properties(batch_properties))
    assert tags == [s.get("TAGS") for s in stored]
    assert uniq == [s.get("UNIQ_KEY") for s in stored]
    assert keys == [s.get("KEYS") for s in stored]


def test_key_columns_of_many_entries_fold_in_chunks() -> None:
    props = [f"TAGS\x01T{i % 3}\x02UNIQ_KEY\x01{i:08d}".encode() for i in range(700)]
    tags, uniq, keys = key_columns(props)
    assert tags == [f"T{i % 3}" for i in range(700)] and uniq == [f"{i:08d}" for i in range(700)]
    assert keys == [None] * 700


_maps = st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "b%s", "c", "é"]),
                        st.one_of(st.none(), _text, st.just("z\x00")), max_size=4)


@given(st.one_of(st.lists(_maps, max_size=6), _maps.flatmap(lambda m: st.lists(st.just(m), max_size=5)),
                 st.lists(st.fixed_dictionaries({"TAGS": _text, "KEYS": _text, "UNIQ_KEY": _text}), max_size=8)))
def test_a_column_of_properties_encodes_as_each_map_does(maps: list[dict[str, str | None]]) -> None:
    got = encode_properties_column(maps)
    if got is not None:
        assert got == [encode_properties(m).encode() for m in maps]


def test_a_column_of_one_producers_properties_is_encoded_in_one_piece() -> None:
    maps = [{"TAGS": "T", "KEYS": f"k{i}", "UNIQ_KEY": f"U{i}"} for i in range(20)]
    assert encode_properties_column(maps) == [encode_properties(m).encode() for m in maps]
    assert encode_properties_column([{"a": "1", "b": "2"}, {"b": "3", "a": "4"}]) == [b"a\x011\x02b\x012",
                                                                                     b"a\x014\x02b\x013"]
    assert encode_properties_column([{"a": "x"}, {"a": None}]) is None
    assert encode_properties_column([{"a": "x"}, {"b": "x"}]) is None


@given(st.lists(st.builds(BatchEntry, st.binary(max_size=30), _text, st.integers(-(2**31), 2**31 - 1)), max_size=6),
       st.booleans())
def test_encode_batch_writes_each_entry_in_the_documented_layout(entries: list[BatchEntry], same: bool) -> None:
    if same and entries:
        entries = entries[:1] * 4  # one shape: one struct per entry
    expected = b""
    for e in entries:
        props = e.properties_string.encode()
        expected += struct.pack(">iiiii", 22 + len(e.body) + len(props), 0, 0, e.flag, len(e.body)) + e.body
        expected += struct.pack(">h", len(props)) + props
    assert encode_batch(entries) == expected


_entries = st.lists(st.builds(BatchEntry, st.binary(max_size=40), _text.map(lambda t: t[:5]),
                              st.integers(-(2**31), 2**31 - 1)), max_size=6)


@given(_entries, st.booleans())
def test_split_batch_gives_decode_batch_fields_as_columns(entries: list[BatchEntry], repeat_first: bool) -> None:
    if repeat_first and entries:
        entries = entries[:1] * 5  # one shape: the single-unpack path
    data = encode_batch(entries)
    flags, bodies, props = split_batch(data)
    assert list(zip(bodies, [p.decode() for p in props], flags)) == decode_batch_fields(data)
    assert split_batch(memoryview(data)) == (flags, bodies, props)


@given(st.integers(0, 30), st.integers(0, 8), st.sampled_from([1, 2, 64, 1025]), st.data())
def test_split_batch_reads_entries_of_one_shape_as_the_entry_walk_does(body_len: int, props_len: int, n: int,
                                                                        data: st.DataObject) -> None:
    """One shape, differing contents: the whole-body unpack (up to 1024 entries) and the unpack per entry
    (more) both give the columns of the documented layout."""
    body = st.binary(min_size=body_len, max_size=body_len)
    props = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=props_len, max_size=props_len)
    entries = [BatchEntry(data.draw(body), data.draw(props), data.draw(st.integers(-(2**31), 2**31 - 1)))
               for _ in range(min(n, 3))]
    entries = [entries[i % len(entries)] for i in range(n)]
    raw = encode_batch(entries)
    flags, bodies, properties = split_batch(raw)
    assert list(zip(bodies, [p.decode() for p in properties], flags)) == decode_batch_fields(raw)


@given(_entries.filter(bool), st.data())
def test_split_batch_refuses_what_decode_batch_fields_refuses(entries: list[BatchEntry], data: st.DataObject) -> None:
    raw = bytearray(encode_batch(entries * data.draw(st.integers(1, 3))))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = bytes(raw[: data.draw(st.integers(0, len(raw)))])
    try:
        expected = decode_batch_fields(cut)
    except MessageDecodeError as exc:
        with pytest.raises(MessageDecodeError) as got:
            split_batch(cut)
        assert str(got.value) == str(exc)
    else:
        flags, bodies, props = split_batch(cut)
        assert list(zip(bodies, [p.decode() for p in props], flags)) == expected


@given(st.sampled_from([V4, V6]), st.integers(0, 2**50), st.lists(st.integers(1, 5000), max_size=70))
def test_offset_message_ids_of_a_batch_are_each_records_id(host: HostAddress, first: int, sizes: list[int]) -> None:
    expected = []
    offset = first
    for size in sizes:
        expected.append(encode_offset_message_id(host, offset))
        offset += size
    assert encode_offset_message_ids(host, first, sizes) == ",".join(expected)


def test_a_draft_of_records_of_several_sizes_encodes_like_one_of_a_single_size() -> None:
    """Both encoders (one struct per record, or header + parts) lay down the same bytes."""
    props = [b"a\x01b", b"c\x01d"]
    one_size = draft_batch("T", 0, [1, 2], [b"xy", b"zw"], props, b"S\x01s", born=bytes(8), store=bytes(20))
    assert one_size.layout is not None
    general = one_size._replace(layout=None)
    assert encode_batch_draft(one_size, 5, 1000, STAMP) == encode_batch_draft(general, 5, 1000, STAMP)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 60), st.binary(max_size=40), st.binary(max_size=12),
       st.sampled_from([bytes(8), bytes(range(20))]), st.sampled_from([bytes(range(8)), bytes(20)]),
       st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 2**41), st.booleans(), st.data())
def test_a_uniform_draft_encodes_like_the_general_encoder(n: int, body_len: int, props: bytes, suffix: bytes,
                                                         born: bytes, store: bytes, queue_offset: int, offset: int,
                                                         stamp: int, queue_step: bool, data: st.DataObject) -> None:
    """The one-size encoder (one struct per record) lays down the bytes of the header + parts encoder, for
    every host family and field value."""
    flags = data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n))
    bodies = data.draw(st.lists(st.binary(min_size=body_len, max_size=body_len), min_size=n, max_size=n))
    entry_props = data.draw(st.lists(st.binary(min_size=len(props), max_size=len(props)), min_size=n, max_size=n))
    draft = draft_batch("TopicA", data.draw(st.integers(0, 2**31 - 1)), flags, bodies, entry_props, suffix,
                        sys_flag=data.draw(st.sampled_from([0, 2, 8])), born_timestamp=STAMP, born=born,
                        store=store, reconsume_times=data.draw(st.integers(0, 2**31 - 1)),
                        prepared_offset=data.draw(st.integers(0, 2**63 - 1)))
    if draft.layout is None:
        return  # entries differing in whether they end with 0x02: the general encoder only
    assert encode_batch_draft(draft, queue_offset, offset, stamp, queue_step=int(queue_step)) == \
        encode_batch_draft(draft._replace(layout=None), queue_offset, offset, stamp, queue_step=int(queue_step))


@given(st.sampled_from([V4, V6]), st.integers(0, 2**50), st.integers(1, 5000), st.integers(0, 70))
def test_offset_message_ids_of_a_one_size_batch_are_each_records_id(host: HostAddress, first: int, size: int,
                                                                     n: int) -> None:
    expected = [encode_offset_message_id(host, first + i * size) for i in range(n)]
    assert encode_offset_message_ids(host, first, [size] * n) == ",".join(expected)


# --- the broker: a batch send stores the entries' properties as sent ------------------------------------------------


def test_a_batch_send_stores_each_entry_as_rocketmq_4_9_3_does(tmp_path: Path) -> None:
    """WAIT stays in each entry, a C++ trailing separator is not doubled, and the header's properties (WAIT
    included) plus CLUSTER follow each entry's, as MessageExtBatchEncoder writes them."""
    from rocketstore.broker.broker import Broker
    from rocketstore.broker.config import BrokerConfig
    from rocketstore.broker.send import send_message_now
    from rocketstore.remoting.codes import LanguageCode, RequestCode, SerializeType
    from rocketstore.remoting.command import new_command

    entries = [BatchEntry(b"one", "UNIQ_KEY\x01A1\x02WAIT\x01true\x02TAGS\x01TagA", 3),
               BatchEntry(b"two", "TAGS\x01TagB\x02KEYS\x01k2\x02", 0),
               BatchEntry(b"", "", 0)]

    class Peer:
        """What the send handler reads of a connection."""

        def __init__(self) -> None:
            self.peer = ("127.0.0.1", 5555)
            self.peer_address = "127.0.0.1:5555"
            self.attributes: dict[str, object] = {}

    async def go() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1", broker_cluster_name="C1"),
                        StoreConfig(store_path_root_dir=str(tmp_path / "b"), flush_disk_type="ASYNC_FLUSH"))
        await broker.start()
        try:
            ext = {"a": "p", "b": "BatchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0",
                   "g": str(int(time.time() * 1000)), "h": "0", "i": "WAIT\x01true", "j": "0", "k": "false",
                   "m": "true"}
            request = new_command(RequestCode.SEND_BATCH_MESSAGE, LanguageCode.JAVA, 395, 7, 0, None, ext,
                                  encode_batch(entries), SerializeType.JSON)
            response = send_message_now(broker, Peer(), request)  # type: ignore[arg-type]
            assert response is not None and response.code == 0, response
            assert broker.store.wait_dispatched()
            got = broker.store.get("BatchTopic", 1, 0, 32).messages
            # the batch's own properties in Java HashMap order: CLUSTER before WAIT
            batch_props = "CLUSTER\x01C1\x02WAIT\x01true"
            assert encode_properties({"WAIT": "true", "CLUSTER": "C1"}) == batch_props
            assert [m.properties_string for m in got] == [
                "UNIQ_KEY\x01A1\x02WAIT\x01true\x02TAGS\x01TagA\x02" + batch_props,
                "TAGS\x01TagB\x02KEYS\x01k2\x02" + batch_props,
                batch_props]
            assert [m.flag for m in got] == [3, 0, 0] and [m.body for m in got] == [b"one", b"two", b""]
            assert response.ext_fields["msgId"] == ",".join(m.msg_id for m in got)
            assert broker.store.query("BatchTopic", "k2").messages[0].body == b"two"
            bad = new_command(RequestCode.SEND_BATCH_MESSAGE, LanguageCode.JAVA, 395, 8, 0, None, ext,
                              encode_batch(entries)[:-3], SerializeType.JSON)
            refused = send_message_now(broker, Peer(), bad)  # type: ignore[arg-type]
            assert refused is not None and refused.code == 1 and "cannot decode the batch body" in refused.remark
        finally:
            await broker.close()

    asyncio.run(go())


def test_batch_entry_header_layout_is_what_split_batch_reads() -> None:
    data = struct.pack(">iiiii", 99, 7, 8, -5, 2) + b"ab" + struct.pack(">h", 3) + b"p\x01q"
    assert split_batch(data) == ((-5,), (b"ab",), (b"p\x01q",))
