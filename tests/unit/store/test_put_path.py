"""The put path writes exactly the bytes the record codec encodes, and answers bad input as before.

``MessageStore.put`` drafts and lays the record down itself (``draft_message`` and ``write_record`` written
out for speed), packs hosts once and encodes properties through a cached format: these tests pin all of
that to ``encode_record`` and to the plain pair-by-pair properties writer.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketstore.message.host import parse_host
from rocketstore.message.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    encode_properties,
    java_hashmap_order,
)
from rocketstore.message.record import Message, SysFlag, encode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, store_host="10.0.0.1:10911")
V6 = parse_host("[2001:db8:0:0:0:0:0:1]:5555")
V4 = parse_host("192.168.7.9:40000")


def _reference_properties(props: dict[str, str | None]) -> str:
    """The writer as first written: pairs joined in Java HashMap order, None values skipped."""
    names = tuple(props)
    items = list(props.items())
    return PROPERTY_SEPARATOR.join(items[i][0] + NAME_VALUE_SEPARATOR + items[i][1]  # type: ignore[operator]
                                   for i in java_hashmap_order(names) if items[i][1] is not None)


_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
_values = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",)), max_size=12))


@given(st.dictionaries(_names, _values, max_size=14))
def test_encode_properties_matches_the_pair_writer(props: dict[str, str | None]) -> None:
    assert encode_properties(props) == _reference_properties(props)


@pytest.mark.parametrize("value", [5, b"x", ["a"], ("a",), 1.5])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_encode_properties_refuses_values_that_are_not_strings(value: object, count: int) -> None:
    props: dict[str, object] = {f"k{i}": "v" for i in range(count - 1)}
    props["bad"] = value
    with pytest.raises(TypeError):
        encode_properties(props)  # type: ignore[arg-type]


def _messages(seed: int) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(60):
        props: dict[str, str] = {}
        for _ in range(rng.randrange(5)):
            props[rng.choice(("TAGS", "KEYS", "UNIQ_KEY", "a%b", "100%", "x" * rng.randrange(1, 9)))] = \
                rng.choice(("", "v", "k1 k2", "é€😀", "a\x01b", f"{i}"))
        out.append(Message(rng.choice(("TopicA", "T%B")), rng.randbytes(rng.randrange(0, 300)), props,
                           queue_id=rng.randrange(4), flag=rng.choice((0, -1, 7, 2**31 - 1)),
                           sys_flag=rng.choice((0, SysFlag.MULTI_TAGS, SysFlag.TRANSACTION_PREPARED_TYPE,
                                                SysFlag.TRANSACTION_COMMIT_TYPE)),
                           born_timestamp=rng.choice((0, 1_700_000_000_000, -(2**63))),
                           born_host=rng.choice((None, V4, V6)), store_host=rng.choice((None, V4, V6)),
                           reconsume_times=rng.choice((0, 3)), prepared_transaction_offset=rng.choice((0, 2**63 - 1)),
                           store_timestamp=rng.choice((None, 1_700_000_000_123))))
    return out


def _expected(store: MessageStore, m: Message, offset: int, queue_offset: int, ts: int) -> bytes:
    record, _ = encode_record(m, store_host=m.store_host or store.store_host, born_host=m.born_host or store.store_host,
                              store_timestamp=ts, queue_offset=queue_offset, commit_log_offset=offset)
    return bytes(record)


def test_put_writes_the_codecs_bytes(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        for m in _messages(1):
            r = store.put(m, apply_delay=False)
            assert r.status is PutMessageStatus.PUT_OK
            assert store._commitlog.read(r.commit_log_offset, r.wrote_bytes) == \
                _expected(store, m, r.commit_log_offset, r.queue_offset, r.store_timestamp)
            if m.sys_flag & SysFlag.TRANSACTION_PREPARED_TYPE:
                assert r.queue_offset == 0
        assert store.wait_dispatched()
        assert verify_store(store).ok


def test_put_batch_writes_the_codecs_bytes(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        msgs = [m for m in _messages(2) if not m.sys_flag & SysFlag.TRANSACTION_MASK]
        for qid in range(4):
            batch = [Message(m.topic, m.body, m.properties, queue_id=qid, born_host=m.born_host,
                             store_host=m.store_host) for m in msgs if m.topic == "TopicA"][:8]
            r = store.put_batch(batch)
            assert r.status is PutMessageStatus.PUT_OK
            offset = r.commit_log_offset
            for i, (m, size) in enumerate(zip(batch, r.record_sizes)):
                assert store._commitlog.read(offset, size) == \
                    _expected(store, m, offset, r.queue_offset + i, r.store_timestamp)
                offset += size
        assert store.wait_dispatched()
        assert verify_store(store).ok


@pytest.mark.parametrize(("message", "status"), [
    (Message("bad topic!", b"x", {"p": "é" * 20000}), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", {"p": "é" * 20000}), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED),
    (Message("T", b"x", {"p": "e" * 40000}), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", queue_id=-1), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", flag=2**31), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", flag=1.5), PutMessageStatus.MESSAGE_ILLEGAL),  # type: ignore[arg-type]
    (Message("T", b"x", reconsume_times=-(2**31) - 1), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", born_timestamp=2**63), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", prepared_transaction_offset=-(2**63) - 1), PutMessageStatus.MESSAGE_ILLEGAL),
    (Message("T", b"x", {"k": 5}), PutMessageStatus.MESSAGE_ILLEGAL),  # type: ignore[dict-item]
    (Message("T", "text body"), PutMessageStatus.MESSAGE_ILLEGAL),  # type: ignore[arg-type]
    (Message("T", b"x" * 5000), PutMessageStatus.MESSAGE_ILLEGAL),
])
def test_bad_input_is_refused_and_writes_nothing(tmp_path: Path, message: Message, status: PutMessageStatus) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG.replace(max_message_size=4096)) as store:
        before = store.max_commit_log_offset
        assert store.put(message).status is status
        assert store.put_batch([message]).status is status
        assert store.max_commit_log_offset == before
        assert store.put(Message("T", b"ok")).status is PutMessageStatus.PUT_OK
